"""PodSpec validation as kube-apiserver validates it (``_podspec_validation``).

tests/data/real-apiserver-1.20/pod-spec-validation.json holds what a real
kube-apiserver 1.20 answered (recorded by tools/record_pod_spec_validation.py, all
``dryRun=All``): 73 Pod creates with a spec it refuses (or keeps), twelve creates of
each kind with a pod template (Deployment, ReplicaSet, DaemonSet, StatefulSet,
ReplicationController, Job, CronJob, PodTemplate), and 17 merge- and JSON-patch
updates of a stored Pod and three of a stored Deployment. Each is sent to serve's
facade and the answers compared: the status code, and for a refusal the reason, the
message and the causes.

Compared loosely, on purpose:

* several errors are compared as sets (message list and causes): a real server
  walks resource lists, label maps and the like in Go's random map order, and 1.30
  orders a container's checks otherwise than 1.20 (its probes after its resources);
* a forbidden Pod update's message is compared up to its first line: a real server
  appends a diff of its Go structs (``cmp.Diff``), which serve only approximates.

Where 1.30 answers otherwise than the recorded 1.20, serve follows 1.30 and the
recorded answer is rewritten by :data:`DIFFERENCES_130` before comparing:

=======================================  =============================================
1.20 (recorded)                          1.30 (serve), and where it is written
=======================================  =============================================
``must be less than or equal to cpu      ``... cpu limit of 100m``: ValidateResource-
limit``                                  Requirements, pkg/apis/core/validation/
                                         validation.go (1.30)
port name ``must contain at least one    ``must contain at least one letter (a-z)``:
letter or number (a-z, 0-9)``            IsValidPortName, apimachinery
                                         pkg/util/validation/validation.go (1.30)
``pod updates may not change fields      the list joined by commas with
other than `spec.containers[*].image`,   ``spec.terminationGracePeriodSeconds`` (allow
... or `spec.tolerations` (only          it to be set to 1 if it was previously
additions to existing tolerations)``     negative) added: ValidatePodUpdate,
                                         pkg/apis/core/validation/validation.go (1.30)
``initContainers[0].readinessProbe:      ``initContainers[0].readinessProbe: Forbidden:
Invalid value: core.Probe{...}: must     may not be set for init containers without
not be set for init containers``         restartPolicy=Always`` (1.29+ sidecars):
                                         validateInitContainers, pkg/apis/core/
                                         validation/validation.go (1.30)
=======================================  =============================================

Two recorded cases are not compared in full: a quantity that does not parse is a
400 worded by the Go JSON decoder (json-iterator in 1.20, sigs.k8s.io/json in 1.30;
status and reason compared), and an unknown ``serviceAccountName`` is refused by the
ServiceAccount admission plugin before validation (serve has none: not compared).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/pod-spec-validation.json").read_text()
)
NS = RECORDED["namespace"]
PATHS = {
    "pods": f"/api/v1/namespaces/{NS}/pods",
    "deployments": f"/apis/apps/v1/namespaces/{NS}/deployments",
    "replicasets": f"/apis/apps/v1/namespaces/{NS}/replicasets",
    "daemonsets": f"/apis/apps/v1/namespaces/{NS}/daemonsets",
    "statefulsets": f"/apis/apps/v1/namespaces/{NS}/statefulsets",
    "replicationcontrollers": f"/api/v1/namespaces/{NS}/replicationcontrollers",
    "jobs": f"/apis/batch/v1/namespaces/{NS}/jobs",
    "cronjobs": f"/apis/batch/v1/namespaces/{NS}/cronjobs",
    "podtemplates": f"/api/v1/namespaces/{NS}/podtemplates",
}
DECODER_WORDED = {"resource quantity bad"}
NOT_COMPARED = {"serviceAccountName invalid"}  # (the ServiceAccount admission plugin's 403)

_OLD_UPDATE_WORDS = (
    "pod updates may not change fields other than `spec.containers[*].image`, "
    "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds` or `spec.tolerations` "
    "(only additions to existing tolerations)"
)
_NEW_UPDATE_WORDS = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)
#: (1.20 words, 1.30 words): the recorded answers rewritten as 1.30 gives them.
DIFFERENCES_130: list[tuple[str, str]] = [
    ("must be less than or equal to cpu limit", "must be less than or equal to cpu limit of 100m"),
    (
        "must be less than or equal to memory limit",
        "must be less than or equal to memory limit of 64Mi",
    ),
    (
        "must contain at least one letter or number (a-z, 0-9)",
        "must contain at least one letter (a-z)",
    ),
    (_OLD_UPDATE_WORDS, _NEW_UPDATE_WORDS),
]


#: 1.20 refuses a probe or lifecycle of an init container as an invalid value (the Go
#: struct printed); 1.30, which has sidecars, as forbidden: validateInitContainers,
#: pkg/apis/core/validation/validation.go (1.30).
_INIT_PROBE_120 = re.compile(
    r"(initContainers\[\d+\]\.(?:lifecycle|livenessProbe|readinessProbe|startupProbe)): "
    r"Invalid value: core\.\w+\{.*?\}: must not be set for init containers"
)
_INIT_PROBE_130 = r"\1: Forbidden: may not be set for init containers without restartPolicy=Always"


def _as_130(text: str) -> str:
    for old, new in DIFFERENCES_130:
        text = text.replace(old, new)
    return _INIT_PROBE_120.sub(_INIT_PROBE_130, text)


def _cause_as_130(cause: dict[str, Any]) -> dict[str, Any]:
    out = dict(cause)
    whole = _as_130(f"{cause.get('field')}: {cause.get('message')}")
    out["message"] = whole.removeprefix(f"{cause.get('field')}: ")
    if (
        out["message"].startswith("Unsupported value: ")
        and cause.get("reason") == "FieldValueRequired"
    ):
        out["reason"] = "FieldValueNotSupported"
    if out["message"].startswith("Forbidden: ") and cause.get("reason") == "FieldValueInvalid":
        out["reason"] = "FieldValueForbidden"
    return out


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        account = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default"},
            "automountServiceAccountToken": False,
        }
        send(running, "POST", f"/api/v1/namespaces/{NS}/serviceaccounts", json.dumps(account))
        for kind, obj in RECORDED["stored"].items():
            status, _, answer = send(running, "POST", PATHS[kind], json.dumps(obj))
            assert status == 201, answer
        yield running


def _listed(message: str) -> tuple[str, frozenset[str]]:
    """A message's head and its errors (``[a, b]`` or one), as a set, each to its first
    line (a forbidden update's diff left out)."""
    head, sep, errors = message.partition(" is invalid: ")
    if not sep:
        return message, frozenset()
    if errors.startswith("[") and errors.endswith("]"):
        parts = re.split(r", (?=(?:spec|template)[.\w\[\]*]*: )", errors[1:-1])
        return head, frozenset(_first_line(p) for p in parts)
    return head, frozenset([_first_line(errors)])


def _essentials(status: int, body: Any, case: str, *, recorded: bool) -> dict[str, Any]:
    if status in (200, 201):
        return {"status": status}
    if case in DECODER_WORDED:
        return {"status": status, "reason": body.get("reason")}
    details = dict(body.get("details") or {})
    causes = details.pop("causes", [])
    message = body.get("message") or ""
    if recorded:
        message = _as_130(message)
        causes = [_cause_as_130(c) for c in causes]
    return {
        "status": status,
        "reason": body.get("reason"),
        "message": _listed(message),
        "details": details,
        "causes": frozenset(
            json.dumps({**c, "message": _first_line(c.get("message", ""))}, sort_keys=True)
            for c in causes
        ),
    }


@pytest.mark.parametrize(
    "exchange",
    [e for e in RECORDED["exchanges"] if e["case"] not in NOT_COMPARED],
    ids=lambda e: f"{e['kind']}-{e['op']}-{e['case']}",
)
def test_pod_spec_validation_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    kind, case = exchange["kind"], exchange["case"]
    if exchange["op"] == "create":
        body = exchange["body"]
        if kind == "cronjobs":  # (1.20 served CronJobs as batch/v1beta1 only; 1.30 as batch/v1)
            body = {**body, "apiVersion": "batch/v1"}
        status, _, answer = send(server, "POST", PATHS[kind] + "?dryRun=All", json.dumps(body))
    else:
        name = RECORDED["stored"][kind]["metadata"]["name"]
        patch_type = "json-patch" if exchange["op"] == "json-patch" else "merge-patch"
        status, _, answer = send(
            server,
            "PATCH",
            f"{PATHS[kind]}/{name}?dryRun=All",
            json.dumps(exchange["body"]),
            f"application/{patch_type}+json",
        )
    recorded = exchange["answer"]
    assert _essentials(status, answer, case, recorded=False) == _essentials(
        recorded["status"], recorded, case, recorded=True
    )


def test_forbidden_pod_update_shows_what_changed(server: KubeAPIServer) -> None:
    """The forbidden update's message ends with the fields that changed, old then new."""
    status, _, answer = send(
        server,
        "PATCH",
        f"{PATHS['pods']}/podspec-stored?dryRun=All",
        json.dumps({"spec": {"restartPolicy": "Never"}}),
        "application/merge-patch+json",
    )
    assert status == 422
    assert answer["message"].startswith(
        f'Pod "podspec-stored" is invalid: spec: Forbidden: {_NEW_UPDATE_WORDS}\n'
    )
    assert '- \tRestartPolicy: "Always",' in answer["message"]
    assert '+ \tRestartPolicy: "Never",' in answer["message"]


def test_image_only_update_is_allowed(server: KubeAPIServer) -> None:
    patch = [{"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:latest"}]
    status, _, answer = send(
        server,
        "PATCH",
        f"{PATHS['pods']}/podspec-stored?dryRun=All",
        json.dumps(patch),
        "application/json-patch+json",
    )
    assert status == 200, answer
    assert answer["spec"]["containers"][0]["image"] == "nginx:latest"


def _create_pod(server: KubeAPIServer, spec: dict[str, Any]) -> tuple[int, Any]:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "podspec-x"}, "spec": spec}
    status, _, answer = send(server, "POST", PATHS["pods"] + "?dryRun=All", json.dumps(body))
    return status, answer


def test_sidecar_init_container_may_have_probes(server: KubeAPIServer) -> None:
    """1.30's sidecars: an init container with ``restartPolicy: Always`` may have
    probes; a plain one may not, and a regular container may not set the field."""
    probe = {"exec": {"command": ["true"]}}
    sidecar = {"name": "s", "image": "x", "restartPolicy": "Always", "readinessProbe": probe}
    assert (
        _create_pod(
            server, {"containers": [{"name": "c", "image": "x"}], "initContainers": [sidecar]}
        )[0]
        == 201
    )
    status, answer = _create_pod(
        server, {"containers": [{"name": "c", "image": "x", "restartPolicy": "Always"}]}
    )
    assert status == 422
    assert answer["message"] == (
        'Pod "podspec-x" is invalid: spec.containers[0].restartPolicy: Forbidden: '
        "may not be set for non-init containers"
    )


def test_extended_resource_requests_equal_limits(server: KubeAPIServer) -> None:
    resources = {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}}
    status, answer = _create_pod(
        server, {"containers": [{"name": "c", "image": "x", "resources": resources}]}
    )
    assert status == 422
    assert answer["message"] == (
        'Pod "podspec-x" is invalid: spec.containers[0].resources.requests: Invalid value: '
        '"1": must be equal to example.com/gpu limit of 2'
    )


def test_stateful_set_template_spec_is_not_validated(server: KubeAPIServer) -> None:
    """As on 1.30 (and 1.20, recorded): only the restart policy and
    ``activeDeadlineSeconds`` of a StatefulSet's template are checked."""
    body = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "podspec-x"},
        "spec": {
            "serviceName": "s",
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c"}], "activeDeadlineSeconds": 5},
            },
        },
    }
    status, _, answer = send(
        server, "POST", PATHS["statefulsets"] + "?dryRun=All", json.dumps(body)
    )
    assert status == 422
    assert answer["message"] == (
        'StatefulSet.apps "podspec-x" is invalid: spec.template.spec.activeDeadlineSeconds: '
        "Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"
    )
