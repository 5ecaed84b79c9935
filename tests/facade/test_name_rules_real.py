"""``metadata.name`` and ``metadata.generateName`` as kube-apiserver checks them, per kind,
replayed from a real server.

tests/data/real-apiserver-1.20/name-rules.json holds what a real kube-apiserver 1.20
answered (tools/record_name_rules.py) when every built-in kind it lets clients create was
sent a bare object under each of a set of names (``?dryRun=All``): its status, and its
causes about the name. serve is sent the same (in the version it serves the kind in) and
must give the same causes about the name, and create what the real server created. A
generated name's random five characters are masked on both sides.

Where kube-apiserver 1.30 answers otherwise, serve follows 1.30: ``DIFFERENCES``.
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
    (Path(__file__).parent.parent / "data/real-apiserver-1.20/name-rules.json").read_text()
)
NS = RECORDED["namespace"]
_NAME_FIELDS = ("metadata.name", "metadata.generateName")
_IS_DNS1123_LABEL_130 = (
    "apimachinery v0.30.0 pkg/util/validation/validation.go IsDNS1123Label "
    "(since v0.28.0: a valid subdomain that is not a label 'must not contain dots')"
)
_LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
#: (resource, field, value) -> (1.30's causes as (field, message), where it was learnt)
DIFFERENCES: dict[tuple[str, str, str], tuple[list[tuple[str, str]], str]] = {
    ("namespaces", "name", "a.b"): (
        [("metadata.name", 'Invalid value: "a.b": must not contain dots')],
        _IS_DNS1123_LABEL_130,
    ),
    ("namespaces", "generateName", "a.b-"): (
        [
            ("metadata.generateName", 'Invalid value: "a.b-": must not contain dots'),
            ("metadata.name", 'Invalid value: "a.b-*****": must not contain dots'),
        ],
        _IS_DNS1123_LABEL_130,
    ),
}
#: Kinds 1.20 served that 1.30 does not (removed APIs): not replayed.
_REMOVED = {("extensions", "ingresses"), ("policy", "podsecuritypolicies")}
#: Recorded, not replayed: serve does not check an APIService's spec, and its name
#: (``<spec.version>.<spec.group>``) is one of those checks.
_NOT_CHECKED = {("apiregistration.k8s.io", "apiservices")}


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        yield running


def _served(server: KubeAPIServer) -> dict[tuple[str, str], tuple[str, bool, str]]:
    """(group, resource) -> (group version path, namespaced, kind), from serve's discovery."""
    out: dict[tuple[str, str], tuple[str, bool, str]] = {}
    bases = [("", "/api/v1")]
    for group in send(server, "GET", "/apis", "")[2]["groups"]:
        bases.append((group["name"], f"/apis/{group['preferredVersion']['groupVersion']}"))
    for group, base in bases:
        for res in send(server, "GET", base, "")[2]["resources"]:
            if "/" not in res["name"]:
                out[(group, res["name"])] = (base, res["namespaced"], res["kind"])
    return out


def _masked(causes: list[dict[str, Any]], generate_name: str | None) -> list[tuple[str, str]]:
    """The name causes, each once, in order, with a generated name's suffix masked."""
    out: list[tuple[str, str]] = []
    for cause in causes:
        if cause.get("field") not in _NAME_FIELDS:
            continue
        message = cause["message"]
        if generate_name is not None:
            message = re.sub(
                re.escape(f'"{generate_name}') + r'[a-z0-9]{5}"', f'"{generate_name}*****"', message
            )
        item = (cause["field"], message)
        if item not in out:
            out.append(item)
    return out


def _id(exchange: dict[str, Any]) -> str:
    value = exchange["value"]
    shown = value if len(value) < 20 else f"{value[0]}x{len(value)}"
    return f"{exchange['group'] or 'core'}/{exchange['resource']}:{exchange['field']}={shown}"


CASES = [
    e for e in RECORDED["exchanges"] if (e["group"], e["resource"]) not in _REMOVED | _NOT_CHECKED
]


@pytest.mark.parametrize("exchange", CASES, ids=_id)
def test_name_rules_as_recorded(server: KubeAPIServer, exchange: dict[str, Any]) -> None:
    served = _served_cache(server)
    base, namespaced, kind = served[(exchange["group"], exchange["resource"])]
    path = (
        f"{base}/namespaces/{NS}/{exchange['resource']}"
        if namespaced
        else f"{base}/{exchange['resource']}"
    )
    api_version = base.removeprefix("/api/").removeprefix("/apis/")
    body = {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {exchange["field"]: exchange["value"]},
        **exchange.get("body", {}),
    }
    status, _, answer = send(server, "POST", path + "?dryRun=All", json.dumps(body))
    prefix = exchange["value"] if exchange["field"] == "generateName" else None
    key = (exchange["resource"], exchange["field"], exchange["value"])
    recorded = _masked(exchange["causes"], prefix)
    expected = DIFFERENCES[key][0] if key in DIFFERENCES else recorded
    got = _masked(((answer.get("details") or {}).get("causes") or []), prefix)
    assert got == expected, answer.get("message")
    if expected:
        assert status == 422 and answer["reason"] == "Invalid"
    elif exchange["status"] == 201:
        assert status == 201, answer


_SERVED: dict[int, dict[tuple[str, str], tuple[str, bool, str]]] = {}


def _served_cache(server: KubeAPIServer) -> dict[tuple[str, str], tuple[str, bool, str]]:
    if id(server) not in _SERVED:
        _SERVED[id(server)] = _served(server)
    return _SERVED[id(server)]


def test_every_recorded_kind_is_served_or_removed(server: KubeAPIServer) -> None:
    served = _served(server)
    kinds = {(e["group"], e["resource"]) for e in RECORDED["exchanges"]}
    assert kinds - _REMOVED <= set(served), sorted(kinds - _REMOVED - set(served))


def test_every_difference_is_a_recorded_case() -> None:
    recorded = {(e["resource"], e["field"], e["value"]) for e in CASES}
    assert set(DIFFERENCES) <= recorded
