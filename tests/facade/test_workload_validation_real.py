"""Workload specs validated as kube-apiserver validates them (``_workload_validation``).

The creates and merge-patch updates of
tests/data/real-apiserver-1.20/workload-validation.json, recorded from a real
kube-apiserver 1.20.2 by tools/record_workload_validation.py (all ``dryRun=All``:
Deployments, ReplicaSets, ReplicationControllers, StatefulSets, DaemonSets, Jobs,
CronJobs, HorizontalPodAutoscalers and PodDisruptionBudgets), are sent to serve's
facade and each answer is compared with the real one: the status code, and for a
refusal its reason, message and causes, in order.

Serve follows 1.30. The recorded server served CronJob as batch/v1beta1,
PodDisruptionBudget as policy/v1beta1 and HPA v2 as autoscaling/v2beta2; serve sends
the same bodies as batch/v1, policy/v1 and autoscaling/v2 (the shapes are the same
for these fields). Where 1.30 answers otherwise, :data:`DIFFERENCES` gives its
answer and where it was learned. Two differences apply to whole groups and are
made by rewriting the recorded answer instead:

* every CronJob schedule refusal: 1.20 parsed with robfig/cron v1 ("Expected exactly
  5 fields, found 1: bogus"), 1.30 with robfig/cron v3 (parser.go: the same words
  starting lower-case, and a wrong field count's fields printed as a Go slice,
  "expected exactly 5 fields, found 1: [bogus]"): :func:`_cron_v3`;
* a PodDisruptionBudget's spec printed whole (minAvailable and maxUnavailable both
  set): 1.26+ has the UnhealthyPodEvictionPolicy field (pkg/apis/policy/types.go):
  :func:`_pdb_v130`.

Go prints a pointer inside a struct as its address, which changes with every
request: addresses are compared as ``0x…``; a Job's template printed whole in
"field is immutable" (hundreds of fields, with uids) is compared by its type.
"""

from __future__ import annotations

import copy
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
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/workload-validation.json").read_text()
)
NS = RECORDED["namespace"]
#: kind -> (serve's path, the apiVersion serve is sent)
SERVED = {
    "deployments": (f"/apis/apps/v1/namespaces/{NS}/deployments", "apps/v1"),
    "replicasets": (f"/apis/apps/v1/namespaces/{NS}/replicasets", "apps/v1"),
    "replicationcontrollers": (f"/api/v1/namespaces/{NS}/replicationcontrollers", "v1"),
    "statefulsets": (f"/apis/apps/v1/namespaces/{NS}/statefulsets", "apps/v1"),
    "daemonsets": (f"/apis/apps/v1/namespaces/{NS}/daemonsets", "apps/v1"),
    "jobs": (f"/apis/batch/v1/namespaces/{NS}/jobs", "batch/v1"),
    "cronjobs": (f"/apis/batch/v1/namespaces/{NS}/cronjobs", "batch/v1"),
    "hpa-v1": (
        f"/apis/autoscaling/v1/namespaces/{NS}/horizontalpodautoscalers",
        "autoscaling/v1",
    ),
    "hpa-v2": (
        f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers",
        "autoscaling/v2",
    ),
    "pdbs": (f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets", "policy/v1"),
}

_APPS = "kubernetes pkg/apis/apps/validation/validation.go (1.28+)"
_BATCH = "kubernetes pkg/apis/batch/validation/validation.go (1.29+)"
_CRON = (
    "1.30 parses schedules with github.com/robfig/cron/v3 (parser.go: lower-case words, "
    "the fields printed as a Go slice); 1.20 used robfig/cron v1"
)
_DS_SURGE = "DaemonSet maxSurge (1.21+, GA 1.25); 1.20 dropped the field. " + _APPS
_RU_DS = "spec.updateStrategy.rollingUpdate"
_PATH_GONE = "1.20 drops the field it does not know yet"

#: (op, kind, case) -> (1.30's causes as "field: message", or a status; the source)
DIFFERENCES: dict[tuple[str, str, str], tuple[Any, str]] = {
    ("create", "statefulsets", "minReadySeconds negative"): (
        ["spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"],
        f"StatefulSet minReadySeconds (1.22+, GA 1.25); {_PATH_GONE}. {_APPS}",
    ),
    ("create", "statefulsets", "retention bogus"): (
        [
            "spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "
            '"Bogus": supported values: "Retain", "Delete"'
        ],
        f"persistentVolumeClaimRetentionPolicy (1.23+, beta on 1.27); {_PATH_GONE}. {_APPS}",
    ),
    ("create", "statefulsets", "onDelete with rollingUpdate"): (
        [
            "spec.updateStrategy.rollingUpdate: Invalid value: "
            "apps.RollingUpdateStatefulSetStrategy{Partition:1, "
            "MaxUnavailable:(*intstr.IntOrString)(nil)}: only allowed for updateStrategy "
            "'RollingUpdate'"
        ],
        "the internal struct has MaxUnavailable since 1.24 (printed by %#v). " + _APPS,
    ),
    ("update", "statefulsets", "serviceName changed"): (
        [
            "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
            "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' "
            "and 'minReadySeconds' are forbidden"
        ],
        "ValidateStatefulSetUpdate's wording since 1.27. " + _APPS,
    ),
    ("update", "statefulsets", "podManagementPolicy changed"): (
        [
            "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
            "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' "
            "and 'minReadySeconds' are forbidden"
        ],
        "ValidateStatefulSetUpdate's wording since 1.27. " + _APPS,
    ),
    ("update", "statefulsets", "replicas negative"): (
        ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
        "1.20's update validation checked replicas twice (ValidateStatefulSet, then its own "
        "check in ValidateStatefulSetUpdate); 1.30's ValidateStatefulSetUpdate validates the "
        "spec once, and the strategy no longer calls ValidateStatefulSet. " + _APPS,
    ),
    ("create", "daemonsets", "maxUnavailable zero"): (
        [f"{_RU_DS}.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"],
        _DS_SURGE,
    ),
    ("create", "daemonsets", "maxUnavailable not a percent"): (
        [
            f"{_RU_DS}.maxUnavailable: Invalid value: "
            'intstr.IntOrString{Type:1, IntVal:0, StrVal:"abc"}: a valid percent string must '
            "be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used "
            "for validation is '[0-9]+%')",
            f"{_RU_DS}.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
        ],
        _DS_SURGE,
    ),
    ("create", "daemonsets", "maxSurge with maxUnavailable"): (
        [
            f"{_RU_DS}.maxSurge: Invalid value: "
            'intstr.IntOrString{Type:0, IntVal:1, StrVal:""}: may not be set when '
            "maxUnavailable is non-zero"
        ],
        _DS_SURGE,
    ),
    ("create", "jobs", "ttlSecondsAfterFinished negative"): (
        ["spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0"],
        f"TTLAfterFinished (alpha, off, in 1.20; GA 1.23): {_PATH_GONE}. {_BATCH}",
    ),
    ("create", "jobs", "completionMode bogus"): (
        [
            'spec.completionMode: Unsupported value: "Bogus": supported values: '
            '"NonIndexed", "Indexed"'
        ],
        f"completionMode (1.21+); {_PATH_GONE}. {_BATCH}",
    ),
    ("create", "jobs", "indexed without completions"): (
        ["spec.completions: Required value: when completion mode is Indexed"],
        f"completionMode (1.21+); {_PATH_GONE}. {_BATCH}",
    ),
    ("create", "jobs", "backoffLimitPerIndex not indexed"): (
        ["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"],
        f"backoffLimitPerIndex (1.28+, beta on 1.29); {_PATH_GONE}. {_BATCH}",
    ),
    ("create", "jobs", "podFailurePolicy action bogus"): (
        [
            'spec.podFailurePolicy.rules[0].action: Unsupported value: "Bogus": supported '
            'values: "Count", "FailIndex", "FailJob", "Ignore"'
        ],
        f"podFailurePolicy (1.25+, beta on 1.26); {_PATH_GONE}. {_BATCH}",
    ),
    ("create", "cronjobs", "schedule TZ"): (
        [
            'spec.schedule: Invalid value: "TZ=UTC 0 0 * * *": cannot use TZ or CRON_TZ in '
            "schedule, use timeZone field instead"
        ],
        f"{_CRON}; the TZ refusal is validateScheduleFormat's (1.27+). {_BATCH}",
    ),
    ("create", "cronjobs", "schedule CRON_TZ bad zone"): (
        [
            'spec.schedule: Invalid value: "CRON_TZ=Nowhere/Land 0 0 * * *": provided bad '
            "location Nowhere/Land: unknown time zone Nowhere/Land",
            'spec.schedule: Invalid value: "CRON_TZ=Nowhere/Land 0 0 * * *": cannot use TZ or '
            "CRON_TZ in schedule, use timeZone field instead",
        ],
        f"{_CRON}; the TZ refusal is validateScheduleFormat's (1.27+). {_BATCH}",
    ),
    ("create", "cronjobs", "timeZone bogus"): (
        ['spec.timeZone: Invalid value: "Nowhere/Land": unknown time zone Nowhere/Land'],
        f"CronJob timeZone (1.24+, GA 1.27); {_PATH_GONE}. {_BATCH}",
    ),
}


def _cron_v3(message: str) -> str:
    """robfig/cron v1's words (1.20) as v3's (1.30): lower-case first letter, and the
    fields of a wrong count printed as a Go slice."""
    found = re.match(r"^(Expected exactly \d+ fields, found \d+: )(.*)$", message)
    if found:
        message = f"{found.group(1)}[{found.group(2)}]"
    return message[:1].lower() + message[1:]


def _pdb_v130(message: str) -> str:
    """1.26+ PodDisruptionBudgetSpec has UnhealthyPodEvictionPolicy (printed by %#v)."""
    return message.replace(
        "MaxUnavailable:(*intstr.IntOrString)(0x…)}",
        "MaxUnavailable:(*intstr.IntOrString)(0x…), "
        "UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}",
    )


def _normal(text: str) -> str:
    text = re.sub(r"0x[0-9a-f]+", "0x…", text)
    # A Job's template printed whole (hundreds of fields, uids): its type is compared.
    return re.sub(
        r"core\.PodTemplateSpec\{.*\}: field is immutable",
        "core.PodTemplateSpec{…}: field is immutable",
        text,
    )


def _recorded_causes(exchange: dict[str, Any]) -> list[str]:
    answer = exchange["answer"]
    causes = [f"{c['field']}: {c['message']}" for c in answer["details"]["causes"]]
    if exchange["kind"] == "cronjobs":
        causes = [
            re.sub(
                r"^(spec\.schedule: Invalid value: \"[^\"]*\": )(.*)$",
                lambda m: m.group(1) + _cron_v3(m.group(2)),
                c,
            )
            for c in causes
        ]
    if exchange["kind"] == "pdbs":
        causes = [_pdb_v130(_normal(c)) for c in causes]
    return [_normal(c) for c in causes]


def _merge(base: Any, patch: dict[str, Any]) -> Any:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _object(kind: str, name: str, patch: dict[str, Any]) -> dict[str, Any]:
    obj = _merge(RECORDED["objects"][kind], {"metadata": {"name": name}, "spec": patch})
    obj["apiVersion"] = SERVED[kind][1]
    return obj


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for kind in RECORDED["objects"]:
            body = _object(kind, f"wl-{kind}", {})
            status, _, answer = send(running, "POST", SERVED[kind][0], json.dumps(body))
            assert status == 201, answer
        yield running


@pytest.mark.parametrize(
    "exchange",
    RECORDED["exchanges"],
    ids=lambda e: f"{e['kind']}-{e['op']}-{e['case']}",
)
def test_workload_validation_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    kind, path = exchange["kind"], SERVED[exchange["kind"]][0]
    if exchange["op"] == "create":
        name = exchange.get("name", f"wl-{kind}-new")
        body = _object(kind, name, exchange["spec"])
        status, _, answer = send(server, "POST", path + "?dryRun=All", json.dumps(body))
    else:
        status, _, answer = send(
            server,
            "PATCH",
            f"{path}/wl-{kind}?dryRun=All",
            json.dumps({"spec": exchange["spec"]}),
            "application/merge-patch+json",
        )
    key = (exchange["op"], kind, exchange["case"])
    recorded = exchange["answer"]
    if key in DIFFERENCES:
        expected = DIFFERENCES[key][0]
    elif recorded["status"] in (200, 201):
        expected = recorded["status"]
    else:
        expected = _recorded_causes(exchange)
    if isinstance(expected, int):
        assert status == expected, answer
        return
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    causes = [_normal(f"{c['field']}: {c['message']}") for c in answer["details"]["causes"]]
    assert causes == expected
    # the message lists the same errors after "<Kind> "<name>" is invalid: ", each once
    # (as Go's ErrorList.ToAggregate lists them: a repeated cause, as an HPA's metric type
    # is repeated, is in the message once)
    head, _, listed = answer["message"].partition(" is invalid: ")
    if "message" in recorded:
        assert head == recorded["message"].split(" is invalid: ", 1)[0]
    once = list(dict.fromkeys(expected))
    assert _normal(listed) == (once[0] if len(once) == 1 else f"[{', '.join(once)}]")


def test_every_difference_is_recorded() -> None:
    keys = {(e["op"], e["kind"], e["case"]) for e in RECORDED["exchanges"]}
    assert set(DIFFERENCES) <= keys
