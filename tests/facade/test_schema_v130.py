"""The built-in schemas are kube-apiserver v1.30's, for the group versions 1.30 serves.

Fields added to built-in kinds after the recorded server (CronJob
``spec.timeZone``, Job ``spec.podFailurePolicy``) pass ``fieldValidation=Strict``
and are kept, as a 1.30 server keeps them; a field no release has is still
refused. The packaged document itself: every ``$ref`` resolves, every served
kind has its definition, and its paths are the served group versions' (the
recorded server's with the 1.24→1.30 changes of tests/served_v130.py).
"""

from __future__ import annotations

import copy
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory._fieldmanager.schema import builtin_schema
from ownergc_backends.memory._openapi import builtin_v2
from ownergc_backends.memory._resources import BUILTIN_RESOURCES
from ownergc_backends.memory.http import KubeAPIServer
from tests import served_v130
from tests.facade.facade_helpers import Kubectl, request

CRONJOBS = "/apis/batch/v1/namespaces/default/cronjobs"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
_TEMPLATE = {
    "spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
    }
}


def _cronjob(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name},
        "spec": {
            "schedule": "0 3 * * *",
            "timeZone": "Europe/Paris",
            "jobTemplate": {"spec": {"template": copy.deepcopy(_TEMPLATE)}},
        },
    }


def _job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "backoffLimit": 2,
            "podFailurePolicy": {
                "rules": [
                    {
                        "action": "FailJob",
                        "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]},
                    },
                    {
                        "action": "Ignore",
                        "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                    },
                ]
            },
            "template": copy.deepcopy(_TEMPLATE),
        },
    }


def test_a_cronjob_time_zone_passes_strict_and_is_kept(server: KubeAPIServer) -> None:
    reply = request(server, "POST", f"{CRONJOBS}?fieldValidation=Strict", _cronjob("tz"))
    assert reply.status == 201, reply.text
    assert reply.json()["spec"]["timeZone"] == "Europe/Paris"
    assert request(server, "GET", f"{CRONJOBS}/tz").json()["spec"]["timeZone"] == "Europe/Paris"


def test_a_job_pod_failure_policy_passes_strict_and_is_kept(server: KubeAPIServer) -> None:
    body = _job("pfp")
    reply = request(server, "POST", f"{JOBS}?fieldValidation=Strict", body)
    assert reply.status == 201, reply.text
    stored = request(server, "GET", f"{JOBS}/pfp").json()
    assert stored["spec"]["podFailurePolicy"] == body["spec"]["podFailurePolicy"]


def test_server_side_apply_keeps_and_owns_the_newer_field(server: KubeAPIServer) -> None:
    reply = request(
        server,
        "PATCH",
        f"{CRONJOBS}/applied?fieldManager=me&fieldValidation=Strict",
        _cronjob("applied"),
        headers={"Content-Type": "application/apply-patch+yaml"},
    )
    assert reply.status == 201, reply.text
    obj = reply.json()
    assert obj["spec"]["timeZone"] == "Europe/Paris"
    (entry,) = obj["metadata"]["managedFields"]
    assert "f:timeZone" in entry["fieldsV1"]["f:spec"]


def test_an_unknown_field_is_still_refused(server: KubeAPIServer) -> None:
    body = _cronjob("bad")
    body["spec"]["timeZoneName"] = "UTC"
    reply = request(server, "POST", f"{CRONJOBS}?fieldValidation=Strict", body)
    assert reply.status == 400
    assert reply.json()["message"] == (
        'CronJob in version "v1" cannot be handled as a CronJob: strict decoding error: '
        'unknown field "spec.timeZoneName"'
    )
    assert request(server, "GET", f"{CRONJOBS}/bad").status == 404


def _refs(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            found.add(ref)
        for item in value.values():
            _refs(item, found)
    elif isinstance(value, list):
        for item in value:
            _refs(item, found)


def test_every_reference_of_the_packaged_document_resolves() -> None:
    document = builtin_v2()
    found: set[str] = set()
    _refs(document, found)
    names = {"#/definitions/" + name for name in document["definitions"]}
    assert found and found <= names, sorted(found - names)[:5]
    assert document["definitions"]["io.k8s.api.batch.v1.CronJobSpec"]["properties"]["timeZone"]


@pytest.mark.parametrize(
    ("group", "version", "kind"),
    [(s.group, v, s.kind) for s in BUILTIN_RESOURCES for v in s.versions],
)
def test_every_served_kind_has_merge_facts(group: str, version: str, kind: str) -> None:
    assert builtin_schema(group, version, kind) is not None


def _path_group_versions(paths: Any) -> set[str]:
    out = set()
    for path in paths:
        parts = path.strip("/").split("/")
        if parts[0] == "apis" and len(parts) >= 3:
            out.add(f"{parts[1]}/{parts[2]}")
        elif parts[0] == "api" and len(parts) >= 2:
            out.add(parts[1])
    return out


def test_the_documents_paths_are_the_served_group_versions() -> None:
    """The recorded server's paths, less the group versions 1.30 stopped serving, plus
    the ones it added; the recorded document's custom resource (example.com) aside."""
    recorded = json.loads(gzip.decompress(RECORDED.read_bytes()))["paths"]
    expected = (_path_group_versions(recorded) - served_v130.REMOVED_GROUP_VERSIONS) | {
        f"{g}/{v}" for g, v, _ in served_v130.ADDED
    }
    packaged = builtin_v2()["paths"]
    assert _path_group_versions(packaged) == expected
    served = {f"{s.group}/{v}" if s.group else v for s in BUILTIN_RESOURCES for v in s.versions}
    assert expected - {"example.com/v1"} == served
    # The added versions have the recorded predecessor's operations, renamed.
    for version in ("v1", "v1beta3"):
        base = f"/apis/flowcontrol.apiserver.k8s.io/{version}"
        item = packaged[f"{base}/prioritylevelconfigurations/{{name}}/status"]
        assert item["patch"]["operationId"] == (
            f"patchFlowcontrolApiserver{version.capitalize()}PriorityLevelConfigurationStatus"
        )
        assert item["patch"]["x-kubernetes-group-version-kind"]["version"] == version
        assert item["get"]["responses"]["200"]["schema"]["$ref"] == (
            f"#/definitions/io.k8s.api.flowcontrol.{version}.PriorityLevelConfiguration"
        )
    capacities = packaged["/apis/storage.k8s.io/v1/namespaces/{namespace}/csistoragecapacities"]
    assert capacities["post"]["operationId"] == "createStorageV1NamespacedCSIStorageCapacity"
    # SelfSubjectReview (1.28 GA; kubectl auth whoami), written from TokenReview's path
    review = packaged["/apis/authentication.k8s.io/v1/selfsubjectreviews"]["post"]
    assert review["operationId"] == "createAuthenticationV1SelfSubjectReview"
    assert review["x-kubernetes-group-version-kind"]["kind"] == "SelfSubjectReview"


def test_no_definition_of_a_removed_version_is_left() -> None:
    """As in a real 1.30 document: e.g. no ``io.k8s.api.batch.v1beta1.CronJob``."""
    definitions = builtin_v2()["definitions"]
    for group, version, _ in served_v130.REMOVED:
        package = {"": "core", "discovery.k8s.io": "discovery", "events.k8s.io": "events"}.get(
            group, group.split(".")[0]
        )
        prefix = f"io.k8s.api.{package}.{version}."
        assert not [name for name in definitions if name.startswith(prefix)], prefix


CRONJOB_YAML = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: NAME, namespace: default}
spec:
  schedule: "0 3 * * *"
  timeZone: Europe/Paris
  jobTemplate:
    spec:
      podFailurePolicy: {rules: [{action: FailJob, onExitCodes: {operator: In, values: [42]}}]}
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
"""


def test_kubectl_validates_explains_and_keeps_the_newer_fields(kubectl: Kubectl) -> None:
    """Whichever kubectl the suite runs (1.20 validates on its side from ``/openapi/v2``,
    1.37 sends ``fieldValidation=Strict``), the 1.30 fields pass and are kept."""
    kubectl.run("create", "-f", kubectl.manifest("tz.yaml", CRONJOB_YAML.replace("NAME", "tz")))
    spec = kubectl.json("get", "cronjob", "tz", "-n", "default")["spec"]
    assert spec["timeZone"] == "Europe/Paris"
    assert spec["jobTemplate"]["spec"]["podFailurePolicy"]["rules"][0]["action"] == "FailJob"
    explained = kubectl.run("explain", "cronjob.spec.timeZone").stdout
    assert re.search(r"FIELD: +timeZone <string>", explained), explained
    bad = CRONJOB_YAML.replace("NAME", "bad") + "  bogus: 1\n"
    refused = kubectl.run("create", "-f", kubectl.manifest("bad.yaml", bad), check=False)
    assert refused.returncode != 0 and 'unknown field "' in refused.stderr
    assert "bogus" in refused.stderr


RECORDED = Path(__file__).resolve().parents[2] / "tools/data/openapi-v2-recorded.json.gz"


def _merge_facts(schema: dict[str, Any]) -> tuple[Any, ...]:
    """How server-side apply merges a field (the rules of ``_fieldmanager/schema.py``)."""
    if schema.get("type") == "array":
        list_type = schema.get("x-kubernetes-list-type")
        if list_type:
            return (list_type, tuple(schema.get("x-kubernetes-list-map-keys") or ()))
        if "merge" in str(schema.get("x-kubernetes-patch-strategy", "")).split(","):
            key = schema.get("x-kubernetes-patch-merge-key")
            return ("map", (key,)) if key else ("set", ())
        return ("atomic", ())
    return ("other", schema.get("x-kubernetes-map-type") == "atomic")


def test_no_field_both_releases_have_merges_differently() -> None:
    """Why the replays recorded on the 1.24 server still hold under 1.30's definitions."""
    recorded = json.loads(gzip.decompress(RECORDED.read_bytes()))["definitions"]
    packaged = builtin_v2()["definitions"]
    changed = []
    for name in sorted(set(recorded) & set(packaged)):
        old, new = recorded[name].get("properties", {}), packaged[name].get("properties", {})
        for field in sorted(set(old) & set(new)):
            if _merge_facts(old[field]) != _merge_facts(new[field]):
                changed.append(f"{name}.{field}")
        if recorded[name].get("x-kubernetes-map-type") != packaged[name].get(
            "x-kubernetes-map-type"
        ):
            changed.append(name)
    assert changed == []
