"""Field selectors' syntax, answered as kube-apiserver answers it
(``_selectors.parse_field_selector``): the lists of
tests/data/real-apiserver-1.20/field-selector-syntax.json (recorded by
tools/record_fieldsel.py), made again on serve's facade, each compared with the real
answer: the names listed, or the refusal's status, reason and message.

What is covered: escapes in values (``\\,`` ``\\=`` ``\\\\``, an unknown escape, a
trailing backslash, a bare ``=``), escapes outside values (kept as typed), whitespace
around fields, operators and values (never trimmed), empty terms (skipped) and a blank
one (refused), terms without an operator (the 400's wording names the term and the
selector), ``=`` / ``==`` / ``!=`` (and ``===``, ``!==``), a term with an empty field and
value (selects everything), a field given twice (both terms hold), and which of several
bad terms is reported (the first in sorted order; a parse error before an unknown field).

Differences between 1.20 and 1.30: none here. k8s.io/apimachinery's ``pkg/fields`` (the
parser) is the same in v0.20.2 and v0.30.0 (``git diff v0.20.2 v0.30.0 -- pkg/fields``
in github:kubernetes/apimachinery is empty), and the refusals of unknown fields are the
kinds' field label conversions, already replayed by test_field_selectors_real.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc.errors import BadRequest
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._selectors import parse_field_selector
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (
        Path(__file__).parent.parent / "data/real-apiserver-1.20/field-selector-syntax.json"
    ).read_text()
)


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore()
    with run_in_thread(store) as running:
        namespace = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": RECORDED["namespace"]},
        }
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        for step in RECORDED["setup"]:
            status, _, made = send(running, "POST", step["path"], json.dumps(step["body"]))
            assert status == 201, made
        yield running


@pytest.mark.parametrize("query", RECORDED["queries"], ids=lambda q: repr(q["selector"]))
def test_a_field_selector_is_read_as_a_real_server_reads_it(
    server: KubeAPIServer, query: dict[str, Any]
) -> None:
    status, _, answer = send(server, "GET", query["path"], "")
    assert status == query["status"], answer
    if status == 200:
        listed = sorted(item["metadata"]["name"] for item in answer.get("items") or [])
        if query["path"].startswith("/api/v1/namespaces?"):
            listed = [name for name in listed if name.startswith("fieldsel")]
        assert listed == query["names"]
    else:
        assert (answer["reason"], answer["message"]) == (query["reason"], query["message"])


def test_the_recorded_selectors_cover_what_the_parser_decides() -> None:
    """The cases this module is about are all in the recording (a re-recording that
    drops one fails here, not silently)."""
    selectors = {q["selector"] for q in RECORDED["queries"]}
    for needed in (
        "reason=a\\,b\\=c\\\\d",
        "spec.nodeName = node-a",
        "spec.nodeName=node-a,,metadata.name=a",
        "spec.nodeName",
        "spec.nodeName==node-a",
        "spec.nodeName!=node-a",
        "metadata.name=a,metadata.name=b",
        "==",
        "zzz=1,aaa=1",
    ):
        assert needed in selectors


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("a=b,c!=d", [("a", True, "b"), ("c", False, "d")]),
        ("a==\\,\\=\\\\", [("a", True, ",=\\")]),
        (",,a=b,", [("a", True, "b")]),
        ("b=1,a=2", [("a", True, "2"), ("b", True, "1")]),
        ("a=1,a=1", [("a", True, "1"), ("a", True, "1")]),
        ("=,!=,==", []),
        ("a= b ", [("a", True, " b ")]),
    ],
)
def test_terms_as_parsed(text: str, terms: list[tuple[str, bool, str]]) -> None:
    """The parser on its own, for a kind whose fields are ``a``/``b``/``c`` (sorted terms,
    unescaped values, nothing trimmed)."""
    from ownergc_backends.memory import _selectors

    resource = ("test.example", "things")
    _selectors._FIELD_LABELS[resource] = (frozenset({"a", "b", "c"}), True, "no: {label}")
    try:
        assert parse_field_selector(text, resource) == terms
    finally:
        del _selectors._FIELD_LABELS[resource]


def test_a_blank_term_is_refused_not_trimmed_away() -> None:
    with pytest.raises(BadRequest, match="can't understand ' '"):
        parse_field_selector("metadata.name=a, ", ("", "configmaps"))
