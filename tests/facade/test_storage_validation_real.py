"""PersistentVolumeClaim, PersistentVolume and StorageClass rules as kube-apiserver checks
them (``_storage_validation``), replayed from a real server.

tests/data/real-apiserver-1.20/storage-validation.json holds what a real kube-apiserver
1.20 answered (tools/record_storage_validation.py): creates with ``dryRun=All`` of
invalid (and some valid) objects, and merge-patch updates with ``dryRun=All`` of stored
ones (a Pending claim without a class, one with a class, a Bound one whose class
allows expansion, a hostPath volume, a local volume with node affinity, a
StorageClass; bound claims of a class without expansion, of a missing class and of
none, whose resize the PersistentVolumeClaimResize admission plugin refuses with a 403
once validation has let it through). Each is sent to serve's facade and the answer
compared: the status, and for a refusal its reason, message and causes.

Compared loosely, on purpose: a forbidden update's message and cause end with a diff of
the Go structs (``diff.ObjectDiff`` in 1.20, new then old; ``cmp.Diff`` in 1.30, old
then new), which serve only approximates: the diff is left out of both. A pointer's
address (Go's ``%#v`` of a volume's node affinity) is left out too.

Where kube-apiserver 1.30 answers otherwise, serve follows 1.30. Two rewrites apply
to every recorded answer (:data:`REWRITES_130`):

====================================  ================================================
1.20 (recorded)                       1.30 (serve), and where it is written
====================================  ================================================
access modes ``"ReadOnlyMany",        ``..., "ReadWriteOnce", "ReadWriteOncePod"``
"ReadWriteMany", "ReadWriteOnce"``    (ReadWriteOncePod GA in 1.29, KEP-2485):
                                      supportedAccessModes, kubernetes/kubernetes
                                      pkg/apis/core/validation/validation.go
``spec is immutable after creation    ``... except resources.requests and
except resources.requests for bound   volumeAttributesClassName for bound claims``
claims``                              (1.29+, KEP-3751): ValidatePersistentVolume-
                                      ClaimUpdate, same file
====================================  ================================================

and the cases in :data:`DIFFERENCES` are answered as given there (among them Pods
with a generic ephemeral volume, whose claim template 1.20 drops and 1.30 validates).
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
from tests.facade.facade_helpers import (
    Kubectl,
    answer_essentials,
    create_namespace,
    invalid_answer,
    replay_dry_run,
)
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/storage-validation.json").read_text()
)
NS = RECORDED["namespace"]
PATHS = {
    "persistentvolumeclaims": f"/api/v1/namespaces/{NS}/persistentvolumeclaims",
    "persistentvolumes": "/api/v1/persistentvolumes",
    "storageclasses": "/apis/storage.k8s.io/v1/storageclasses",
    "pods": f"/api/v1/namespaces/{NS}/pods",
}
KINDS = {
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "persistentvolumes": "PersistentVolume",
    "storageclasses": "StorageClass.storage.k8s.io",
    "pods": "Pod",
}

_VALIDATION_GO = "kubernetes/kubernetes pkg/apis/core/validation/validation.go"
_DATA_SOURCE = (
    f"{_VALIDATION_GO} validateDataSource / validateDataSourceRef, and pkg/api/"
    "persistentvolumeclaim/util.go NormalizeDataSources (AnyVolumeDataSource, beta and on "
    "since 1.24: dataSource is copied to dataSourceRef before validation; 1.20 drops a "
    "dataSource that is neither a claim nor a VolumeSnapshot)"
)
_EPHEMERAL = (
    f"{_VALIDATION_GO} validateEphemeralVolumeSource, ValidatePersistentVolumeClaimTemplate "
    "(GenericEphemeralVolume, GA in 1.23)"
)
_TEMPLATE = "spec.volumes[0].ephemeral.volumeClaimTemplate.spec"
_NOT_DEFAULT_GROUP = "must be 'PersistentVolumeClaim' when referencing the default apiGroup"

#: (text in a recorded answer, 1.30's text), applied to every recorded message.
REWRITES_130: list[tuple[str, str]] = [
    (
        r'"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce"(?!Pod)',
        '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"',
    ),
    (
        "spec is immutable after creation except resources.requests for bound claims",
        "spec is immutable after creation except resources.requests and "
        "volumeAttributesClassName for bound claims",
    ),
]

#: (kind, op, case) -> (1.30's errors after "is invalid: ", or None for a success; source)
DIFFERENCES: dict[tuple[str, str, str], tuple[list[str] | None, str]] = {
    ("persistentvolumeclaims", "create", "accessMode ReadWriteOncePod"): (
        None,
        f"{_VALIDATION_GO} ValidatePersistentVolumeClaimSpec (ReadWriteOncePod GA in 1.29)",
    ),
    ("persistentvolumes", "create", "accessMode ReadWriteOncePod"): (
        None,
        f"{_VALIDATION_GO} ValidatePersistentVolumeSpec (ReadWriteOncePod GA in 1.29)",
    ),
    ("persistentvolumeclaims", "create", "ReadWriteOncePod with another"): (
        ["spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"],
        f"{_VALIDATION_GO} ValidatePersistentVolumeClaimSpec",
    ),
    ("persistentvolumeclaims", "create", "dataSource without name"): (
        ["spec.dataSource.name: Required value", "spec.dataSourceRef.name: Required value"],
        _DATA_SOURCE,
    ),
    ("persistentvolumeclaims", "create", "dataSource Pod"): (
        [
            f'spec.dataSource: Invalid value: "Pod": {_NOT_DEFAULT_GROUP}',
            f'spec.dataSourceRef: Invalid value: "Pod": {_NOT_DEFAULT_GROUP}',
        ],
        _DATA_SOURCE,
    ),
    # Generic ephemeral volumes: 1.20 drops the field (its gate off), 1.23+ validates the
    # claim template as a claim.
    ("pods", "create", "ephemeral valid"): (None, _EPHEMERAL),
    ("pods", "create", "ephemeral without template"): (
        ["spec.volumes[0].ephemeral.volumeClaimTemplate: Required value"],
        _EPHEMERAL,
    ),
    ("pods", "create", "ephemeral template without spec"): (
        [
            f"{_TEMPLATE}.accessModes: Required value: at least 1 access mode is required",
            f"{_TEMPLATE}.resources[storage]: Required value",
        ],
        _EPHEMERAL,
    ),
    ("pods", "create", "ephemeral template bad access mode"): (
        [
            f'{_TEMPLATE}.accessModes: Unsupported value: "Bogus": supported values: '
            '"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"'
        ],
        _EPHEMERAL,
    ),
    # (1.28+, retroactive default StorageClass: a claim without a class may be given one)
    ("persistentvolumeclaims", "update", "storageClassName set from unset"): (
        None,
        f"{_VALIDATION_GO} ValidatePersistentVolumeClaimUpdate, validateStorageClassUpgradeFromNil",
    ),
}

#: A Go struct diff a forbidden update's error ends with.
_DIFF = re.compile(r"\n  core\.[A-Za-z]+\{\n.*?\n  \}\n", re.DOTALL)
_ADDRESS = re.compile(r"\(0x[0-9a-f]+\)")


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        create_namespace(running, NS)
        for kind, named in RECORDED["objects"].items():
            for body in named.values():
                status, _, answer = send(running, "POST", PATHS[kind], json.dumps(body))
                assert status == 201, answer
        for name, status_body in RECORDED["statuses"].items():
            status, _, answer = send(
                running,
                "PATCH",
                f"{PATHS['persistentvolumeclaims']}/{name}/status",
                json.dumps({"status": status_body}),
                "application/merge-patch+json",
            )
            assert status == 200, answer
        yield running


def _plain(text: str) -> str:
    """A message without its Go struct diffs and pointer addresses."""
    return _ADDRESS.sub("(0x…)", _DIFF.sub("", text))


def _as_130(text: str) -> str:
    for old, new in REWRITES_130:
        text = re.sub(old, new, text)
    return text


def _expected_1_30(exchange: dict[str, Any], errors: list[str] | None) -> dict[str, Any]:
    if errors is None:
        return {"status": 201 if exchange["op"] == "create" else 200}
    kind, _, group = KINDS[exchange["kind"]].partition(".")
    return invalid_answer(kind, exchange.get("name", "storval-new"), errors, group)


def _essentials(status: int, body: dict[str, Any], *, recorded: bool = False) -> dict[str, Any]:
    """What is compared, diffs and addresses left out; a recorded answer in 1.30's words."""
    if status == 400:  # (a quantity that does not parse: worded by Go's JSON decoder)
        return {"status": status, "reason": body.get("reason")}
    essentials = answer_essentials(status, body)
    if status in (200, 201):
        return essentials
    fix = _as_130 if recorded else (lambda text: text)
    details = dict(essentials["details"] or {})
    details["causes"] = [
        {**c, "message": _plain(fix(c.get("message", "")))} for c in details.get("causes", [])
    ]
    return {**essentials, "message": _plain(fix(essentials["message"] or "")), "details": details}


def _id(exchange: dict[str, Any]) -> str:
    return f"{exchange['kind']}-{exchange['op']}-{exchange.get('name', '')}-{exchange['case']}"


@pytest.mark.parametrize("exchange", RECORDED["exchanges"], ids=_id)
def test_storage_rules_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    kind = exchange["kind"]
    status, answer = replay_dry_run(server, PATHS[kind], exchange)
    difference = DIFFERENCES.get((kind, exchange["op"], exchange["case"]))
    if difference is not None:
        expected = _expected_1_30(exchange, difference[0])
    else:
        recorded = exchange["answer"]
        expected = _essentials(recorded["status"], recorded, recorded=True)
    assert _essentials(status, answer) == _essentials(expected["status"], expected)


def test_forbidden_claim_update_shows_what_changed(server: KubeAPIServer) -> None:
    """The forbidden update's message ends with the fields that changed, old then new."""
    status, _, answer = send(
        server,
        "PATCH",
        f"{PATHS['persistentvolumeclaims']}/storval-pvc?dryRun=All",
        json.dumps({"spec": {"accessModes": ["ReadWriteMany"]}}),
        "application/merge-patch+json",
    )
    assert status == 422
    assert '- \tAccessModes: ["ReadWriteOnce"],' in answer["message"]
    assert '+ \tAccessModes: ["ReadWriteMany"],' in answer["message"]


def test_every_difference_is_a_recorded_case() -> None:
    recorded = {(e["kind"], e["op"], e["case"]) for e in RECORDED["exchanges"]}
    assert set(DIFFERENCES) <= recorded


_CLAIM_WITHOUT_ACCESS_MODES = f"""\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: storval-kubectl
  namespace: {NS}
spec:
  resources:
    requests:
      storage: 1Gi
"""


def test_kubectl_prints_the_refusals(kubectl: Kubectl) -> None:
    """What a user sees: kubectl's words around the server's."""
    path = kubectl.manifest("claim.yaml", _CLAIM_WITHOUT_ACCESS_MODES)
    refused = kubectl.run("apply", "-f", path, check=False)
    assert refused.returncode != 0
    assert (
        'The PersistentVolumeClaim "storval-kubectl" is invalid: spec.accessModes: '
        "Required value: at least 1 access mode is required"
    ) in refused.stderr
    resize = json.dumps({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    forbidden = kubectl.run(
        "patch", "pvc", "storval-pvc-fixed", "-n", NS, "--dry-run=server", "-p", resize, check=False
    )
    assert forbidden.returncode != 0
    assert (
        'persistentvolumeclaims "storval-pvc-fixed" is forbidden: only dynamically provisioned '
        "pvc can be resized and the storageclass that provisions the pvc must support resize"
    ) in forbidden.stderr
