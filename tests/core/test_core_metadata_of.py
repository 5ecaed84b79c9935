"""``metadata_of``: decoded dicts take a short path; anything else the checked one."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from ownergc import metadata_of
from ownergc.errors import InvalidObject


def test_a_dict_body_gives_its_own_metadata_dict() -> None:
    meta = {"name": "a", "uid": "u"}
    assert metadata_of({"metadata": meta}) is meta


@pytest.mark.parametrize("body", [{}, {"metadata": None}])
def test_missing_or_null_metadata_is_empty(body: dict[str, Any]) -> None:
    assert metadata_of(body) == {}


def test_other_mappings_are_read_too() -> None:
    meta = MappingProxyType({"name": "a"})
    assert metadata_of(MappingProxyType({"metadata": meta})) is meta
    assert metadata_of({"metadata": meta}) is meta


@pytest.mark.parametrize(
    "body", [[], "x", {"metadata": []}, {"metadata": "x"}, MappingProxyType({"metadata": 1})]
)
def test_non_objects_are_refused(body: Any) -> None:
    with pytest.raises(InvalidObject):
        metadata_of(body)
