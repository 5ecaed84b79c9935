"""Replay the apply/update requests of ssa-dryrun-exchanges.json through the engine.

The test plays the store: it keeps the ConfigMap ``a`` and the Deployment
``d``, gives new objects a uid and bumps resourceVersion on real writes, and
adds what the real server adds outside field management (the namespace name
label; the Deployment's defaults, taken from the recorded answer). Answers are
compared without uids, resourceVersions and timestamps.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from ownergc_backends.memory._fieldmanager import (
    ApplyConflict,
    ApplyError,
    ApplyResult,
    Node,
    apply,
    builtin_schema,
    update_managed_fields,
)
from ownergc_backends.memory._patch import apply_json_merge_patch
from tests.ssa.replay import load_exchanges

EXCHANGES = load_exchanges()
NOW = "2026-11-24T20:19:18Z"
#: Compared away: what differs run to run. Not generation: the engine sets none, and
#: the recorded ConfigMaps have none either (a real server gives them no generation).
_IDENTITY = ("uid", "resourceVersion", "creationTimestamp")


def _schema(group: str, version: str, kind: str) -> Node:
    node = builtin_schema(group, version, kind)
    assert node is not None
    return node


def _plain(obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    meta = out.get("metadata", {})
    for key in _IDENTITY:
        meta.pop(key, None)
    for entry in meta.get("managedFields", []):
        entry.pop("time", None)
    return out


def _query(path: str) -> dict[str, str]:
    _, _, query = path.partition("?")
    return dict(part.split("=", 1) for part in query.split("&") if part)


def _apply(live: dict[str, Any] | None, n: int, schema: Node) -> ApplyResult | ApplyConflict:
    request = EXCHANGES[n]["request"]
    query = _query(request["path"])
    applied = yaml.safe_load(request["body"])
    if live is not None:
        live = copy.deepcopy(live)
    return apply(
        live,
        applied,
        manager=query.get("fieldManager", ""),
        force=query.get("force") == "true",
        schema=schema,
        now=NOW,
    )


CONFIGMAP = _schema("", "v1", "ConfigMap")


def _configmap_history() -> list[dict[str, Any]]:
    """The stored ConfigMap after each of exchanges 1..8, built by the engine alone."""
    states: list[dict[str, Any]] = []
    live: dict[str, Any] | None = None
    for n in range(1, 9):
        request = EXCHANGES[n]["request"]
        if request["content_type"] == "application/apply-patch+yaml":
            result = _apply(live, n, CONFIGMAP)
            if isinstance(result, ApplyConflict):
                states.append(result.status())
                continue
            new = result.object
        else:
            assert live is not None
            patched = apply_json_merge_patch(live, request["body"])
            manager = _query(request["path"]).get("fieldManager") or "Python-urllib"
            new = update_managed_fields(live, patched, manager=manager, schema=CONFIGMAP, now=NOW)
        if live is None:
            new["metadata"]["namespace"] = "ssa-rec2"
        live = new
        states.append(new)
    return states


HISTORY = _configmap_history()


@pytest.mark.parametrize("n", range(1, 9))
def test_configmap_answers_match(n: int) -> None:
    want = EXCHANGES[n]["response"]["body"]
    got = HISTORY[n - 1]
    if want["kind"] == "Status":
        assert got == want
    else:
        assert _plain(got) == _plain(want), EXCHANGES[n]["note"]


def test_the_conflict_is_worded_as_the_server_words_it() -> None:
    result = _apply(HISTORY[1], 3, CONFIGMAP)
    assert isinstance(result, ApplyConflict)
    assert result.status() == EXCHANGES[3]["response"]["body"]


def test_giving_up_every_field_writes_nothing() -> None:
    result = _apply(HISTORY[6], 8, CONFIGMAP)
    assert isinstance(result, ApplyResult)
    assert result.changed is False
    assert result.object == HISTORY[6]


def test_apply_without_a_field_manager_is_refused() -> None:
    with pytest.raises(ApplyError) as info:
        _apply(None, 9, CONFIGMAP)
    cause = EXCHANGES[9]["response"]["body"]["details"]["causes"][0]
    assert info.value.status == EXCHANGES[9]["response"]["status"]
    assert info.value.message == f"{cause['field']}: {cause['message']}"


def test_dry_run_forced_apply_takes_the_field_from_both_sharers() -> None:
    live = copy.deepcopy(EXCHANGES[17]["response"]["body"])
    result = _apply(live, 18, CONFIGMAP)
    assert isinstance(result, ApplyResult)
    assert _plain(result.object) == _plain(EXCHANGES[18]["response"]["body"])


DEPLOYMENT = _schema("apps", "v1", "Deployment")


def _defaulted_like(recorded: dict[str, Any], obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the spec the server's defaulting produced (not field management's job)."""
    out = copy.deepcopy(obj)
    out["spec"] = copy.deepcopy(recorded["spec"])
    out["status"] = copy.deepcopy(recorded.get("status", {}))
    return out


def test_deployment_containers_merge_by_name_across_managers() -> None:
    first = _apply(None, 11, DEPLOYMENT)
    assert isinstance(first, ApplyResult)
    want_first = EXCHANGES[11]["response"]["body"]
    assert (
        _plain(first.object)["metadata"]["managedFields"]
        == _plain(want_first)["metadata"]["managedFields"]
    )
    live = _defaulted_like(want_first, first.object)
    second = _apply(live, 12, DEPLOYMENT)
    assert isinstance(second, ApplyResult)
    want_second = EXCHANGES[12]["response"]["body"]
    assert (
        _plain(second.object)["metadata"]["managedFields"]
        == _plain(want_second)["metadata"]["managedFields"]
    )
    containers = second.object["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["a", "b"]
    assert containers[0] == want_second["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize(
    ("n", "group", "kind", "added_by_server"),
    [
        (0, "", "Namespace", {"metadata": {"labels": {"kubernetes.io/metadata.name": "ssa-rec2"}}}),
        (19, "authorization.k8s.io", "SelfSubjectAccessReview", {}),
    ],
)
def test_create_records_an_update_entry(
    n: int, group: str, kind: str, added_by_server: dict[str, Any]
) -> None:
    request = EXCHANGES[n]["request"]
    new = apply_json_merge_patch(request["body"], added_by_server)
    got = update_managed_fields(
        None, new, manager="Python-urllib", schema=_schema(group, "v1", kind), now=NOW
    )
    assert (
        got["metadata"]["managedFields"]
        == EXCHANGES[n]["response"]["body"]["metadata"]["managedFields"]
    )
