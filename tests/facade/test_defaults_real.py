"""Serve defaults what a real kube-apiserver defaults (ownergc_backends/memory/_defaults.py).

tests/data/real-apiserver-1.20/defaults.json holds 49 dry-run creates of small
objects of 40 built-in kinds and what a real v1.20.2 server answered. They are
sent to the facade in the same order; every field of each answer must be the
real server's, except the ones listed below with their reason: what serve
deliberately does not do (admission plugins, allocation, controllers it runs
inline), and what kube-apiserver added between 1.20 and the 1.30 serve
answers as (docs/serve.md, "Defaults").
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import run_in_thread
from tests import served_v130
from tests.facade.test_field_validation_cases import send

RECORDED: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "data/real-apiserver-1.20/defaults.json").read_text()
)

#: The recorded group versions 1.30 no longer serves (tests/served_v130.py): their
#: creates are sent in the version that replaced them, and the real answer is read
#: with that apiVersion; the fields are the same in both versions.
MOVED: dict[str, str] = {
    "batch/v1beta1": "batch/v1",  # CronJob: stopped in 1.25
    "autoscaling/v2beta2": "autoscaling/v2",  # HorizontalPodAutoscaler: 1.26
    "policy/v1beta1": "policy/v1",  # PodDisruptionBudget: 1.25
    "discovery.k8s.io/v1beta1": "discovery.k8s.io/v1",  # EndpointSlice: 1.25
}


def moved(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` in the version 1.30 serves (the same one if it still serves it)."""
    old = record["body"]["apiVersion"]
    new = MOVED.get(old)
    if new is None:
        return record
    return {
        **record,
        "path": record["path"].replace(f"/{old}/", f"/{new}/", 1),
        "body": {**record["body"], "apiVersion": new},
        "answer": {**record["answer"], "apiVersion": new},
    }


def test_the_moved_versions_are_the_ones_1_30_stopped_serving() -> None:
    """Every moved version is one the 1.24→1.30 table removes; every recorded one left
    is served by 1.30 (so is sent as it was)."""
    removed = {f"{g}/{v}" for g, v, _ in served_v130.REMOVED}
    assert set(MOVED) <= removed
    assert {r["body"]["apiVersion"] for r in RECORDED} & removed == set(MOVED)


UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
VOLATILE = re.compile(r"metadata\.(uid|creationTimestamp|resourceVersion|managedFields)\b")

#: Paths (regular expressions, per kind) the real answer has and serve's does not.
REAL_ONLY: dict[str, tuple[str, ...]] = {
    # StorageObjectInUseProtection (admission): nothing in serve would remove them.
    "PersistentVolumeClaim": (r"metadata\.finalizers\b",),
    "PersistentVolume": (r"metadata\.finalizers\b",),
    # TaintNodesByCondition (admission) and a Node status's required fields (not served).
    "Node": (r"spec\.taints\b", r"status\."),
    "HorizontalPodAutoscaler": (
        # autoscaling/v2beta2 (the recorded answer's version) writes a null `conditions`
        # and `currentReplicas: 0`; the autoscaling/v2 a 1.30 server answers in omits
        # both when empty (omitempty there).
        r"status\.(conditions|currentReplicas)$",
        # null in v2 too (not omitempty): serve leaves the empty list out.
        r"status\.currentMetrics$",
    ),
    # A CRD's status as the CRD controllers leave it later: serve runs them inline.
    "CustomResourceDefinition": (r"status\.",),
}

#: Paths serve's answer has and the real 1.20 one does not: 1.21-1.30 additions, and
#: what serve's inline controllers write.
SERVE_ONLY: dict[str, tuple[str, ...]] = {
    "Service": (
        # 1.20 allocated no cluster IP on a dry run; serve answers with the one it would
        # allocate, as the registry rewritten in 1.23 does
        r"spec\.clusterIPs?(\[0\])?$",
        r"spec\.internalTrafficPolicy$",  # 1.22
        r"spec\.ipFamilies\[0\]$",  # 1.21: dual-stack's fields, single-stack answer
        r"spec\.ipFamilyPolicy$",
        r"spec\.allocateLoadBalancerNodePorts$",  # 1.24 (GA)
    ),
    "Namespace": (r"metadata\.labels\.kubernetes\.io/metadata\.name$",),  # 1.21
    "StatefulSet": (
        r"spec\.persistentVolumeClaimRetentionPolicy\.",  # 1.27 (beta, on)
        r"status\.availableReplicas$",  # 1.22
    ),
    "DaemonSet": (r"spec\.updateStrategy\.rollingUpdate\.maxSurge$",),  # 1.22
    "Job": (
        r"metadata\.generation$",  # the 1.30 Job strategy sets one
        r"(metadata|spec\.template\.metadata)\.labels\.batch\.kubernetes\.io/",  # 1.27
        r"spec\.selector\.matchLabels\.batch\.kubernetes\.io/controller-uid$",  # 1.27
        r"spec\.(completionMode|suspend)$",  # 1.22
        r"spec\.podReplacementPolicy$",  # 1.29 (beta, on)
        r"spec\.manualSelector$",  # 1.29
    ),
    "CronJob": (r"metadata\.generation$",),
    "PodTemplate": (r"metadata\.generation$",),
    "CSIDriver": (r"spec\.(requiresRepublish|storageCapacity|seLinuxMount)$",),  # 1.22-1.27
    "PersistentVolume": (r"status\.lastPhaseTransitionTime$",),  # 1.29 (beta, on)
    "CustomResourceDefinition": (r"status\.", r"metadata\.finalizers\b"),
}

#: Paths both have, with values that differ by design.
VALUE_DIFFERS: dict[str, tuple[str, ...]] = {
    # node ports: a real server picks them at random, serve lowest first
    "Service": (r"spec\.ports\[\d+\]\.nodePort$",),
}

#: The 1.20 selector key the 1.27+ one replaced.
REPLACED: dict[str, tuple[str, ...]] = {
    "Job": (r"spec\.selector\.matchLabels\.controller-uid$",),
}


def leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every scalar and empty container in ``value``."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, f"{path}[{index}]")
    else:
        yield path, value


def _listed(patterns: dict[str, tuple[str, ...]], kind: str, path: str) -> bool:
    return any(re.match(pattern, path) for pattern in patterns.get(kind, ()))


@pytest.fixture(scope="module")
def answers() -> list[tuple[int, Any]]:
    got = []
    with run_in_thread(InMemoryStore()) as server:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "defaults-rec"}}
        assert send(server, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for record in map(moved, RECORDED):
            status, _, answer = send(server, "POST", record["path"], json.dumps(record["body"]))
            got.append((status, json.loads(UID.sub("<uid>", json.dumps(answer)))))
    return got


@pytest.mark.parametrize(
    "index", range(len(RECORDED)), ids=[r["body"]["metadata"]["name"] for r in RECORDED]
)
def test_a_dry_run_create_is_defaulted_as_the_real_server_did(
    answers: list[tuple[int, Any]], index: int
) -> None:
    record = moved(RECORDED[index])
    kind = record["body"]["kind"]
    status, answer = answers[index]
    assert status == record["status"], answer
    real = {p: v for p, v in leaves(record["answer"]) if not VOLATILE.match(p)}
    served = {p: v for p, v in leaves(answer) if not VOLATILE.match(p)}
    missing = {
        p: v
        for p, v in real.items()
        if p not in served and not _listed(REAL_ONLY, kind, p) and not _listed(REPLACED, kind, p)
    }
    extra = {p: v for p, v in served.items() if p not in real and not _listed(SERVE_ONLY, kind, p)}
    different = {
        p: (v, served[p])
        for p, v in real.items()
        if p in served
        and served[p] != v
        and not _listed(REAL_ONLY, kind, p)
        and not _listed(VALUE_DIFFERS, kind, p)
    }
    assert (missing, extra, different) == ({}, {}, {})


def test_the_differences_listed_are_still_differences(answers: list[tuple[int, Any]]) -> None:
    """Every listed pattern matches at least one recorded difference (no stale entries)."""
    used: set[tuple[str, str]] = set()
    for record, (_, answer) in zip(map(moved, RECORDED), answers, strict=True):
        kind = record["body"]["kind"]
        real = dict(leaves(record["answer"]))
        served = dict(leaves(answer))
        for table, only, other in (
            (REAL_ONLY, real, served),
            (SERVE_ONLY, served, real),
            (REPLACED, real, served),
        ):
            for pattern in table.get(kind, ()):
                if any(re.match(pattern, p) and p not in other for p in only):
                    used.add((kind, pattern))
        for pattern in VALUE_DIFFERS.get(kind, ()):
            if any(re.match(pattern, p) and served.get(p) != v for p, v in real.items()):
                used.add((kind, pattern))
    listed = {
        (kind, pattern)
        for table in (REAL_ONLY, SERVE_ONLY, REPLACED, VALUE_DIFFERS)
        for kind, patterns in table.items()
        for pattern in patterns
    }
    assert listed - used == set()
