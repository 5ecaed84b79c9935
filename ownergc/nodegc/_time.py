"""Time points and durations, the kubelet's way.

Time points are integer **nanoseconds since the Unix epoch**, because that is
what CRI reports (``created_at``) and because integer arithmetic keeps the
kubelet's boundary rules exact (``age == MinAge`` must compare equal, which
floats cannot promise). Durations in policies are :class:`datetime.timedelta`
for readability; they are converted to nanoseconds at the edge.

``ZERO_TIME`` is Go's zero ``time.Time`` (0001-01-01 UTC): the kubelet uses it
for "never used" images, which is why never-used images sort before every
image that was ever used and why MaxAge sees them as infinitely old.
"""

from __future__ import annotations

import re
from datetime import timedelta
from fractions import Fraction

__all__ = [
    "MAX_DURATION_NS",
    "ZERO_TIME",
    "duration_ns",
    "format_duration",
    "parse_duration",
    "parse_duration_ns",
    "since_ns",
]

#: Go's zero time.Time (0001-01-01T00:00:00Z) in nanoseconds since the epoch.
ZERO_TIME: int = -62_135_596_800 * 1_000_000_000

#: Go's largest time.Duration; ``time.Sub`` saturates to it.
MAX_DURATION_NS: int = (1 << 63) - 1

_NS_PER_US = 1_000


def duration_ns(d: timedelta) -> int:
    """A timedelta as whole nanoseconds (exact: timedelta has µs resolution)."""
    return (d // timedelta(microseconds=1)) * _NS_PER_US


def since_ns(later: int, earlier: int) -> int:
    """``later - earlier`` saturated like Go's ``Time.Sub``.

    Without saturation Python would happily return ~2000 years for
    ``now - ZERO_TIME``; Go caps it at ~292 years. Only a policy longer than
    that could tell the difference, but exactness is cheap.
    """
    delta = later - earlier
    if delta > MAX_DURATION_NS:
        return MAX_DURATION_NS
    if delta < -MAX_DURATION_NS - 1:
        return -MAX_DURATION_NS - 1
    return delta


_UNITS_NS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}

_COMPONENT = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")


def parse_duration_ns(text: str) -> int:
    """Parse a Go duration string (``"2m"``, ``"1h30m"``, ``"-1.5s"``, ``"0"``).

    Raises ``ValueError`` with Go's wording (``time: invalid duration "x"``),
    so a flag error reads like the kubelet's.
    """
    orig = text
    quoted = '"' + orig + '"'
    sign = 1
    if text[:1] in ("-", "+"):
        if text[0] == "-":
            sign = -1
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise ValueError(f"time: invalid duration {quoted}")
    total = Fraction(0)
    pos = 0
    while pos < len(text):
        m = _COMPONENT.match(text, pos)
        if m is None or m.end() == pos:  # pragma: no cover - regex always matches
            raise ValueError(f"time: invalid duration {quoted}")
        whole, frac, unit = m.group(1), m.group(2), m.group(3)
        if not whole and not frac:
            raise ValueError(f"time: invalid duration {quoted}")
        if not unit:
            raise ValueError(f"time: missing unit in duration {quoted}")
        if unit not in _UNITS_NS:
            raise ValueError(f'time: unknown unit "{unit}" in duration {quoted}')
        value = Fraction(int(whole or "0"))
        if frac:
            value += Fraction(int(frac), 10 ** len(frac))
        total += value * _UNITS_NS[unit]
        pos = m.end()
    ns = int(total)  # Go truncates sub-nanosecond fractions
    if ns > MAX_DURATION_NS:
        raise ValueError(f"time: invalid duration {quoted}")
    return sign * ns


def parse_duration(text: str) -> timedelta:
    """Parse a Go duration into a timedelta; sub-microsecond precision is refused."""
    ns = parse_duration_ns(text)
    if ns % _NS_PER_US:
        raise ValueError(f'duration "{text}" is finer than a microsecond')
    return timedelta(microseconds=ns // _NS_PER_US)


def _fmt_frac(value: int, unit_ns: int) -> str:
    whole, rem = divmod(value, unit_ns)
    if not rem:
        return str(whole)
    digits = len(str(unit_ns)) - 1
    return f"{whole}." + f"{rem:0{digits}d}".rstrip("0")


def format_duration(d: timedelta | int) -> str:
    """Format like Go's ``Duration.String`` (``2m0s``, ``1h30m0s``, ``1.5s``, ``0s``).

    Accepts a timedelta or nanoseconds, so messages built from either read
    exactly like the kubelet's.
    """
    ns = duration_ns(d) if isinstance(d, timedelta) else d
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns}ns"
    if ns < 1_000_000:
        return f"{sign}{_fmt_frac(ns, 1_000)}µs"
    if ns < 1_000_000_000:
        return f"{sign}{_fmt_frac(ns, 1_000_000)}ms"
    hours, rest = divmod(ns, _UNITS_NS["h"])
    minutes, rest = divmod(rest, _UNITS_NS["m"])
    secs = _fmt_frac(rest, _UNITS_NS["s"]) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{secs}"
    if minutes:
        return f"{sign}{minutes}m{secs}"
    return f"{sign}{secs}"
