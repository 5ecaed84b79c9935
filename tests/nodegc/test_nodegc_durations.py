"""Go-style duration parsing and printing (flags and messages read like the kubelet's)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ownergc.nodegc import (
    MAX_DURATION_NS,
    ZERO_TIME,
    format_duration,
    parse_duration,
    parse_duration_ns,
    since_ns,
)


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("0", 0),
        ("0s", 0),
        ("2m", 120 * 10**9),
        ("1h30m", 5400 * 10**9),
        ("1.5s", 1_500_000_000),
        ("-1s", -(10**9)),
        ("+5ms", 5_000_000),
        ("1us", 1000),
        ("1µs", 1000),
        ("3ns", 3),
        (".5h", 1800 * 10**9),
        ("1h1m1s1ms", 3_661_001_000_000),
    ],
)
def test_parse(text, ns):
    assert parse_duration_ns(text) == ns


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'time: invalid duration ""'),
        ("1", 'time: missing unit in duration "1"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("abc", 'time: invalid duration "abc"'),
        ("-", 'time: invalid duration "-"'),
        (".s", 'time: invalid duration ".s"'),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(ValueError) as info:
        parse_duration_ns(text)
    assert str(info.value) == message


def test_parse_timedelta_refuses_nanoseconds():
    assert parse_duration("1h30m") == timedelta(hours=1, minutes=30)
    with pytest.raises(ValueError):
        parse_duration("1ns")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(0), "0s"),
        (timedelta(minutes=2), "2m0s"),
        (timedelta(hours=1, minutes=30), "1h30m0s"),
        (timedelta(seconds=1.5), "1.5s"),
        (timedelta(milliseconds=5), "5ms"),
        (timedelta(seconds=-1), "-1s"),
        (1500, "1.5µs"),
        (7, "7ns"),
    ],
)
def test_format(value, text):
    assert format_duration(value) == text


def test_since_saturates_like_go():
    assert since_ns(0, ZERO_TIME) == MAX_DURATION_NS
    assert since_ns(10, 3) == 7
