"""FlowSchema and PriorityLevelConfiguration defaults (ownergc_backends/memory/_defaults.py).

kube-apiserver v1.30's flowcontrol defaulters, per version, for the two versions 1.30
serves (v1, preferred, and v1beta3): through the store, over HTTP, and on the
defaulting function itself; and the v1beta3 conversion of a zero
``nominalConcurrencyShares`` (its preserve-zero annotation).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ownergc.protocols import APIResource, PatchType
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._defaults import PRESERVE_ZERO_SHARES, apply_defaults
from ownergc_backends.memory.http import run_in_thread
from tests.facade.test_field_validation_cases import send

pytestmark = pytest.mark.anyio

GROUP = "flowcontrol.apiserver.k8s.io"
SERVED = ("v1", "v1beta3")
FLOW_SCHEMA_SPEC = {
    "priorityLevelConfiguration": {"name": "global-default"},
    "rules": [
        {
            "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        }
    ],
}
QUEUING_DEFAULTS = {"handSize": 8, "queues": 64, "queueLengthLimit": 50}


def _resource(store: InMemoryStore, version: str, kind: str) -> APIResource:
    return store.resource_for(f"{GROUP}/{version}", kind)


def _defaulted(version: str, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    apply_defaults(GROUP, version, resource, out)
    again = copy.deepcopy(out)
    apply_defaults(GROUP, version, resource, again)
    assert again == out  # defaulting twice adds nothing more
    return out


def _limited(version: str, limited: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """The ``spec.limited`` of a Limited PriorityLevelConfiguration, defaulted."""
    plc = {"metadata": {"name": "p", **meta}, "spec": {"type": "Limited", "limited": limited}}
    return _defaulted(version, "prioritylevelconfigurations", plc)["spec"]["limited"]


def _queue(**queuing: Any) -> dict[str, Any]:
    return {"type": "Queue", "queuing": queuing}


@pytest.mark.parametrize("version", SERVED)
async def test_a_served_flow_schema_gets_its_matching_precedence(version: str) -> None:
    store = InMemoryStore()
    schemas = _resource(store, version, "FlowSchema")
    created = await store.create(schemas, {"metadata": {"name": "fs"}, "spec": FLOW_SCHEMA_SPEC})
    assert created["spec"]["matchingPrecedence"] == 1000
    assert created["status"] == {}  # (the strategy's reset status, a Go struct)
    assert created["metadata"]["generation"] == 1
    # a Go int32 without a pointer: 0 is "not given"
    zero = {"metadata": {"name": "zero"}, "spec": {**FLOW_SCHEMA_SPEC, "matchingPrecedence": 0}}
    assert (await store.create(schemas, zero))["spec"]["matchingPrecedence"] == 1000
    own = {"metadata": {"name": "own"}, "spec": {**FLOW_SCHEMA_SPEC, "matchingPrecedence": 500}}
    assert (await store.create(schemas, own))["spec"]["matchingPrecedence"] == 500
    # an update that drops it gets it back
    patched = await store.patch(
        schemas, "own", {"spec": {"matchingPrecedence": None}}, patch_type=PatchType.MERGE
    )
    assert patched["spec"]["matchingPrecedence"] == 1000


@pytest.mark.parametrize("version", SERVED)
async def test_a_served_priority_level_gets_its_shares_queuing_and_borrowing(
    version: str,
) -> None:
    store = InMemoryStore()
    levels = _resource(store, version, "PriorityLevelConfiguration")
    body = {
        "metadata": {"name": "queued"},
        "spec": {"type": "Limited", "limited": {"limitResponse": _queue()}},
    }
    created = await store.create(levels, body)
    assert created["spec"]["limited"] == {
        "nominalConcurrencyShares": 30,
        "lendablePercent": 0,
        "limitResponse": {"type": "Queue", "queuing": QUEUING_DEFAULTS},
    }
    assert created["status"] == {}
    assert created["metadata"]["generation"] == 1
    given = {"nominalConcurrencyShares": 5, "limitResponse": _queue(handSize=6, queues=128)}
    assert _limited(version, given) == {
        "nominalConcurrencyShares": 5,
        "lendablePercent": 0,
        "limitResponse": _queue(handSize=6, queues=128, queueLengthLimit=50),
    }
    # a Reject response has no queuing to default
    rejecting = await store.create(
        levels,
        {
            "metadata": {"name": "rejecting"},
            "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}},
        },
    )
    assert rejecting["spec"]["limited"] == {
        "nominalConcurrencyShares": 30,
        "lendablePercent": 0,
        "limitResponse": {"type": "Reject"},
    }
    exempt = await store.create(
        levels, {"metadata": {"name": "ex"}, "spec": {"type": "Exempt", "exempt": {}}}
    )
    assert exempt["spec"] == {
        "type": "Exempt",
        "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0},
    }


@pytest.mark.parametrize("version", SERVED)
def test_what_a_client_reads_it_can_write_back_strictly(version: str) -> None:
    """The defaults of a served version stay within that version's definitions:
    kubectl's strict field validation accepts the object as read."""
    path = f"/apis/{GROUP}/{version}/prioritylevelconfigurations"
    body = {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "p"},
        "spec": {"type": "Limited", "limited": {"limitResponse": _queue()}},
    }
    with run_in_thread(InMemoryStore()) as server:
        status, _, created = send(server, "POST", path, json.dumps(body))
        assert status == 201, created
        created["metadata"].pop("managedFields")
        status, warnings, answer = send(
            server, "PUT", f"{path}/p?fieldValidation=Strict", json.dumps(created)
        )
        assert (status, warnings) == (200, []), answer
        assert answer["spec"] == created["spec"]


def _over_http(server: Any, method: str, version: str, name: str = "", body: Any = None) -> Any:
    path = f"/apis/{GROUP}/{version}/prioritylevelconfigurations" + (f"/{name}" if name else "")
    status, _, answer = send(server, method, path, "" if body is None else json.dumps(body))
    assert status in (200, 201), answer
    return answer


def _level(version: str, shares: Any = None, **annotations: str) -> dict[str, Any]:
    limited: dict[str, Any] = {"limitResponse": {"type": "Reject"}}
    if shares is not None:
        limited["nominalConcurrencyShares"] = shares
    meta: dict[str, Any] = {"name": "jail"}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "PriorityLevelConfiguration",
        "metadata": meta,
        "spec": {"type": "Limited", "limited": limited},
    }


def test_a_zero_share_level_converts_between_v1_and_v1beta3_as_kube_apiserver_does() -> None:
    """v1's explicit 0 reads in v1beta3 with the preserve-zero annotation (empty value),
    which v1 does not show; written back in v1beta3 as read, the 0 stays 0."""
    with run_in_thread(InMemoryStore()) as server:
        created = _over_http(server, "POST", "v1", body=_level("v1", 0))
        assert created["spec"]["limited"]["nominalConcurrencyShares"] == 0
        assert "annotations" not in created["metadata"]
        beta = _over_http(server, "GET", "v1beta3", "jail")
        assert beta["metadata"]["annotations"] == {PRESERVE_ZERO_SHARES: ""}
        assert beta["spec"]["limited"]["nominalConcurrencyShares"] == 0
        listed = _over_http(server, "GET", "v1beta3")["items"]
        assert listed[0]["metadata"]["annotations"] == {PRESERVE_ZERO_SHARES: ""}
        beta["metadata"].pop("managedFields")
        written = _over_http(server, "PUT", "v1beta3", "jail", beta)
        assert written["spec"]["limited"]["nominalConcurrencyShares"] == 0
        assert written["metadata"]["annotations"] == {PRESERVE_ZERO_SHARES: ""}
        stored = _over_http(server, "GET", "v1", "jail")
        assert stored["spec"]["limited"]["nominalConcurrencyShares"] == 0
        assert "annotations" not in stored["metadata"]


def test_v1beta3_reads_a_missing_or_zero_share_as_30_without_the_annotation() -> None:
    with run_in_thread(InMemoryStore()) as server:
        created = _over_http(server, "POST", "v1beta3", body=_level("v1beta3", 0))
        assert created["spec"]["limited"]["nominalConcurrencyShares"] == 30
        assert "annotations" not in created["metadata"]
        # With the annotation (any value) 0 is kept; the annotation is not stored...
        _over_http(server, "DELETE", "v1", "jail")
        kept = _level("v1beta3", 0, **{PRESERVE_ZERO_SHARES: "true", "other": "x"})
        created = _over_http(server, "POST", "v1beta3", body=kept)
        assert created["spec"]["limited"]["nominalConcurrencyShares"] == 0
        # ...but put back, empty, whenever the level is read in v1beta3 with a 0.
        assert created["metadata"]["annotations"] == {"other": "x", PRESERVE_ZERO_SHARES: ""}
        assert _over_http(server, "GET", "v1", "jail")["metadata"]["annotations"] == {"other": "x"}
        # An update in v1 (the request's version decides the defaults) keeps a 0 too.
        _over_http(server, "DELETE", "v1", "jail")
        _over_http(server, "POST", "v1beta3", body=_level("v1beta3"))
        level = _over_http(server, "GET", "v1", "jail")
        level["spec"]["limited"]["nominalConcurrencyShares"] = 0
        updated = _over_http(server, "PUT", "v1", "jail", level)
        assert updated["spec"]["limited"]["nominalConcurrencyShares"] == 0


def test_flow_control_is_served_in_v1_and_v1beta3_only() -> None:
    """v1 (preferred) and v1beta3, as 1.30 serves them; v1beta1 (stopped in 1.26) and
    v1beta2 (1.29) answer 404 as a real server does."""
    with run_in_thread(InMemoryStore()) as server:
        status, _, group = send(server, "GET", f"/apis/{GROUP}", "")
        assert status == 200
        assert [v["version"] for v in group["versions"]] == ["v1", "v1beta3"]
        assert group["preferredVersion"]["version"] == "v1"
        for version in ("v1", "v1beta3"):
            status, _, listed = send(server, "GET", f"/apis/{GROUP}/{version}", "")
            assert status == 200
            assert [r["name"] for r in listed["resources"]] == [
                "flowschemas",
                "flowschemas/status",
                "prioritylevelconfigurations",
                "prioritylevelconfigurations/status",
            ]
        for version in ("v1beta1", "v1beta2"):
            status, _, answer = send(server, "GET", f"/apis/{GROUP}/{version}", "")
            assert status == 404, answer
            path = f"/apis/{GROUP}/{version}/flowschemas"
            status, _, answer = send(server, "POST", path, json.dumps(_level(version)))
            assert status == 404, answer


def test_v1beta3_defaults_the_renamed_shares_and_the_borrowing_fields() -> None:
    assert _limited("v1beta3", {"limitResponse": _queue()}) == {
        "nominalConcurrencyShares": 30,
        "lendablePercent": 0,
        "limitResponse": _queue(**QUEUING_DEFAULTS),
    }
    # an int32 without a pointer: an explicit 0 is "not given"...
    assert _limited("v1beta3", {"nominalConcurrencyShares": 0})["nominalConcurrencyShares"] == 30
    # ...unless the round-trip annotation says it is a real 0
    annotations = {"annotations": {PRESERVE_ZERO_SHARES: ""}}
    kept = _limited("v1beta3", {"nominalConcurrencyShares": 0}, **annotations)
    assert kept["nominalConcurrencyShares"] == 0
    assert _limited("v1beta3", {}, **annotations)["nominalConcurrencyShares"] == 0
    own = _limited("v1beta3", {"nominalConcurrencyShares": 7, "lendablePercent": 50})
    assert (own["nominalConcurrencyShares"], own["lendablePercent"]) == (7, 50)
    assert "assuredConcurrencyShares" not in own


def test_v1_keeps_an_explicit_zero_share_and_defaults_a_missing_one() -> None:
    assert _limited("v1", {"limitResponse": _queue(queues=16)}) == {
        "nominalConcurrencyShares": 30,
        "lendablePercent": 0,
        "limitResponse": _queue(handSize=8, queues=16, queueLengthLimit=50),
    }
    assert _limited("v1", {"nominalConcurrencyShares": None})["nominalConcurrencyShares"] == 30
    # a pointer in v1: 0 is a value (a "jail" level), no annotation needed
    assert _limited("v1", {"nominalConcurrencyShares": 0})["nominalConcurrencyShares"] == 0
    assert _limited("v1", {"lendablePercent": 25})["lendablePercent"] == 25


@pytest.mark.parametrize("version", ["v1beta3", "v1"])
def test_an_exempt_level_s_borrowing_fields_default_to_zero(version: str) -> None:
    def spec(plc: dict[str, Any]) -> Any:
        return _defaulted(version, "prioritylevelconfigurations", plc)["spec"]

    exempt = {"spec": {"type": "Exempt", "exempt": {}}}
    assert spec(exempt)["exempt"] == {"nominalConcurrencyShares": 0, "lendablePercent": 0}
    given = {"spec": {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 10}}}
    assert spec(given)["exempt"] == {"nominalConcurrencyShares": 10, "lendablePercent": 0}
    # no exempt object: nothing is added (only a given one is defaulted)
    assert spec({"spec": {"type": "Exempt"}}) == {"type": "Exempt"}


def test_a_version_1_30_does_not_serve_gets_no_shares_defaults() -> None:
    """A v1beta2 level (a resource registered to mirror an older cluster's discovery)
    is not given v1beta3's renamed field or the borrowing fields its version lacks."""
    limited = {"assuredConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}
    assert _limited("v1beta2", dict(limited)) == limited


async def test_the_store_defaults_an_update_in_the_version_it_names() -> None:
    """Through the store's API too: a level created in v1beta3 and updated in v1 with an
    explicit 0 keeps it (v1's defaults, not v1beta3's, where 0 means "not given")."""
    store = InMemoryStore()
    beta = _resource(store, "v1beta3", "PriorityLevelConfiguration")
    stable = _resource(store, "v1", "PriorityLevelConfiguration")
    body = {"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {}}}
    created = await store.create(beta, body)
    assert created["spec"]["limited"]["nominalConcurrencyShares"] == 30
    created["spec"]["limited"]["nominalConcurrencyShares"] = 0
    updated = await store.update(stable, created)
    assert updated["spec"]["limited"]["nominalConcurrencyShares"] == 0


async def test_an_hpa_update_keeps_the_shape_it_was_stored_in() -> None:
    """HorizontalPodAutoscaler's autoscaling/v1 and v2 differ in shape and serve does not
    convert them: the store defaults an update in the stored object's version, so a
    v1-shaped HPA updated through v2 does not get v2's default ``metrics``."""
    store = InMemoryStore()
    v1 = store.resource_for("autoscaling/v1", "HorizontalPodAutoscaler")
    v2 = store.resource_for("autoscaling/v2", "HorizontalPodAutoscaler")
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"}
    body = {
        "metadata": {"name": "h", "namespace": "default"},
        "spec": {"maxReplicas": 3, "scaleTargetRef": target},
    }
    created = await store.create(v1, body)
    assert created["spec"]["targetCPUUtilizationPercentage"] == 80
    created["spec"]["maxReplicas"] = 4
    updated = await store.update(v2, created)
    assert "metrics" not in updated["spec"]
    assert updated["spec"]["maxReplicas"] == 4
