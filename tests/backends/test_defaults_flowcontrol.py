"""FlowSchema and PriorityLevelConfiguration defaults (ownergc_backends/memory/_defaults.py).

kube-apiserver v1.30's flowcontrol defaulters, per version: serve serves v1beta2 and
v1beta1 (with the recorded 1.24 server's definitions, so without the borrowing fields
1.26 and 1.28 added); v1beta3 and v1, which it does not serve yet, are checked on the
defaulting function itself.
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
SERVED = ("v1beta2", "v1beta1")
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
async def test_a_served_priority_level_gets_its_shares_and_queuing(version: str) -> None:
    store = InMemoryStore()
    levels = _resource(store, version, "PriorityLevelConfiguration")
    body = {
        "metadata": {"name": "queued"},
        "spec": {"type": "Limited", "limited": {"limitResponse": _queue()}},
    }
    created = await store.create(levels, body)
    # no borrowing fields: the served (1.24) definitions of these versions lack them
    assert created["spec"]["limited"] == {
        "assuredConcurrencyShares": 30,
        "limitResponse": {"type": "Queue", "queuing": QUEUING_DEFAULTS},
    }
    assert created["status"] == {}
    assert created["metadata"]["generation"] == 1
    zeros = {
        "assuredConcurrencyShares": 0,
        "limitResponse": _queue(handSize=0, queues=0, queueLengthLimit=0),
    }
    assert _limited(version, zeros) == created["spec"]["limited"]
    given = {"assuredConcurrencyShares": 5, "limitResponse": _queue(handSize=6, queues=128)}
    assert _limited(version, given) == {
        "assuredConcurrencyShares": 5,
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
        "assuredConcurrencyShares": 30,
        "limitResponse": {"type": "Reject"},
    }
    exempt = await store.create(levels, {"metadata": {"name": "ex"}, "spec": {"type": "Exempt"}})
    assert exempt["spec"] == {"type": "Exempt"}


@pytest.mark.parametrize("version", SERVED)
def test_what_a_client_reads_it_can_write_back_strictly(version: str) -> None:
    """The defaults of a served version stay within that version's served definitions:
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


def test_the_served_versions_get_no_v1beta3_fields() -> None:
    for version in SERVED:
        level = {"spec": {"type": "Exempt", "exempt": {}}}
        assert _defaulted(version, "prioritylevelconfigurations", level)["spec"]["exempt"] == {}
        limited = _limited(version, {"nominalConcurrencyShares": 0})
        assert limited == {"nominalConcurrencyShares": 0, "assuredConcurrencyShares": 30}
