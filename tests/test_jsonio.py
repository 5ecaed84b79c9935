"""ownergc._kit.jsonio: orjson where installed, the standard library for what it refuses,
so that what is accepted does not depend on orjson being installed."""

from __future__ import annotations

import json

import pytest

from ownergc._kit import jsonio


def test_what_orjson_takes_and_what_only_the_standard_library_takes() -> None:
    assert jsonio.loads(b'{"a": [1, 2.5, "x", null]}') == {"a": [1, 2.5, "x", None]}
    # Past 64 bits and NaN: orjson refuses both, the standard library reads them.
    assert jsonio.loads(b"[18446744073709551616]") == [18446744073709551616]
    value = jsonio.loads(b"[NaN]")[0]
    assert value != value
    with pytest.raises(ValueError):
        jsonio.loads(b"{not json")


def test_dumps_round_trips_and_falls_back_for_what_orjson_refuses() -> None:
    assert json.loads(jsonio.dumps({"a": [1, "é"]})) == {"a": [1, "é"]}
    big = {"n": 18446744073709551616}  # past 64 bits: orjson raises TypeError
    assert json.loads(jsonio.dumps(big)) == big
