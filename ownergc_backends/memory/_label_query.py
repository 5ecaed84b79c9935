"""A ``labelSelector`` query string read as kube-apiserver 1.30 reads it.

kube-apiserver scans the string into tokens (identifiers, which are anything up to
whitespace or one of ``= ! ( ) , < >``; the operators ``=``, ``==``, ``!=``, ``!``,
``<``, ``>``; the keywords ``in`` and ``notin``; parentheses and commas) and parses
requirements from them one after another, each answered with its own words when it
does not parse (``found '' expected: '('``, ``found ',', expected: identifier after
','``, ...). What it takes is looser than the documentation says: ``a in ()`` and
``a=`` select an empty value, ``(,1)`` lists the empty value, a keyword is a key or a
value where one is expected (``in=1``), and ``a>2`` / ``a<2`` compare integers. These
rules, and the answers, were recorded from a real server
(tests/data/real-apiserver-1.20/label-selector-queries.json); 1.30 words a key or a
value that is not valid, and the list of operators, otherwise than 1.20.
"""

from __future__ import annotations

import re
from typing import Final

from ._validation import label_value_errors, qualified_name_errors

__all__ = ["LabelQueryError", "parse_label_query"]

#: The characters that end an identifier and start an operator.
_SPECIAL: Final = frozenset("=!(),<>")
_WHITESPACE: Final = frozenset(" \t\r\n")
#: The operator tokens, as the scanner takes the longest one at hand.
_OPERATORS: Final = frozenset({"=", "==", "!=", "!", "(", ")", ",", "<", ">"})
_KEYWORDS: Final = frozenset({"in", "notin"})
#: What a key is followed by (1.30's words: the operators by their names, unquoted).
_BINARY_OPERATORS: Final = "in, notin, =, ==, !=, gt, lt"
#: Go's strconv.ParseInt(s, 10, 64).
_GO_INT64: Final = re.compile("[+-]?[0-9]+")
_END: Final = ""  # the end of the string, a token of its own (its text is empty)


class LabelQueryError(ValueError):
    """A labelSelector that does not parse; the message is kube-apiserver's (a 400)."""


def _tokens(text: str) -> list[tuple[str, str]]:
    """``(kind, text)`` pairs: kind is ``id``, ``kw`` (a keyword), ``op`` or ``end``."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i == n:
            out.append(("end", _END))
            return out
        if text[i] in _SPECIAL:
            j = i
            longest = ""
            while j < n and text[j] in _SPECIAL:
                candidate = text[i : j + 1]
                if candidate in _OPERATORS:
                    longest = candidate
                elif longest:
                    break
                j += 1
            out.append(("op", longest))
            i += len(longest)
        else:
            j = i
            while j < n and text[j] not in _SPECIAL and text[j] not in _WHITESPACE:
                j += 1
            word = text[i:j]
            out.append(("kw" if word in _KEYWORDS else "id", word))
            i = j


def _go_quote(value: str) -> str:
    """Go's %q of a string (what a field error prints its value with)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")
    return f'"{escaped}"'


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.at = 0

    def peek(self, *, values: bool = True) -> tuple[str, str]:
        kind, literal = self.tokens[self.at]
        # where a key or a value is expected, a keyword is an identifier
        return ("id", literal) if values and kind == "kw" else (kind, literal)

    def take(self, *, values: bool = True) -> tuple[str, str]:
        token = self.peek(values=values)
        self.at += 1
        return token

    def requirements(self) -> list[tuple[str, str, tuple[str, ...]]]:
        out: list[tuple[str, str, tuple[str, ...]]] = []
        while True:
            kind, literal = self.peek()
            if kind == "end":
                return out
            if not (kind == "id" or literal == "!"):
                raise LabelQueryError(
                    f"found '{literal}', expected: !, identifier, or 'end of string'"
                )
            try:
                out.append(self.requirement())
            except LabelQueryError as exc:
                raise LabelQueryError(f"unable to parse requirement: {exc}") from None
            kind, literal = self.take()
            if kind == "end":
                return out
            if literal != ",":
                raise LabelQueryError(f"found '{literal}', expected: ',' or 'end of string'")
            kind, literal = self.peek()
            if not (kind == "id" or literal == "!"):
                raise LabelQueryError(f"found '{literal}', expected: identifier after ','")

    def requirement(self) -> tuple[str, str, tuple[str, ...]]:
        kind, key = self.take()
        absent = key == "!" and kind == "op"
        if absent:
            kind, key = self.take()
        if kind != "id":
            raise LabelQueryError(f"found '{key}', expected: identifier")
        problems = qualified_name_errors(key)
        if problems:
            raise LabelQueryError(f"<nil>: Invalid value: {_go_quote(key)}: {'; '.join(problems)}")
        following = self.peek()
        if absent:
            return key, "!", ()
        if following[0] == "end" or following[1] == ",":
            return key, "exists", ()
        kind, operator = self.take(values=False)
        if kind == "kw":
            values = self.value_list()
        elif operator in ("=", "==", "!=", "<", ">"):
            values = self.exact_value()
        else:
            raise LabelQueryError(f"found '{operator}', expected: {_BINARY_OPERATORS}")
        op = {"==": "=", "<": "lt", ">": "gt"}.get(operator, operator)
        ordered = tuple(sorted(values))
        errors: list[str] = []
        if op in ("gt", "lt"):
            errors.extend(
                f"values[{i}]: Invalid value: {_go_quote(v)}: for 'Gt', 'Lt' operators, the "
                "value must be an integer"
                for i, v in enumerate(ordered)
                if not _GO_INT64.fullmatch(v) or not -(2**63) <= int(v) < 2**63
            )
        for i, value in enumerate(ordered):
            problems = label_value_errors(value)
            if problems:
                errors.append(
                    f"values[{i}][{key}]: Invalid value: {_go_quote(value)}: {'; '.join(problems)}"
                )
        if errors:
            raise LabelQueryError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
        return key, op, ordered

    def value_list(self) -> set[str]:
        kind, literal = self.take()
        if literal != "(" or kind != "op":
            raise LabelQueryError(f"found '{literal}' expected: '('")
        kind, literal = self.peek()
        if kind == "op" and literal == ")":
            self.take()
            return {""}
        if not (kind == "id" or literal == ","):
            raise LabelQueryError(f"found '{literal}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            kind, literal = self.take()
            if kind == "id":
                values.add(literal)
                kind, following = self.peek()
                if following == ")" and kind == "op":
                    self.take()
                    return values
                if following != "," or kind != "op":
                    raise LabelQueryError(f"found '{following}', expected: ',' or ')'")
            elif literal == "," and kind == "op":
                if not values:
                    values.add("")  # (a list that starts with a comma lists the empty value)
                kind, following = self.peek()
                if following in (")", ",") and kind == "op":
                    values.add("")  # (so does a comma before ')' or another comma)
                if following == ")" and kind == "op":
                    self.take()
                    return values
                if following == "," and kind == "op":
                    self.take()
            else:
                raise LabelQueryError(f"found '{literal}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        kind, literal = self.peek()
        if kind == "end" or (kind == "op" and literal == ","):
            return {""}
        kind, literal = self.take()
        if kind != "id":
            raise LabelQueryError(f"found '{literal}', expected: identifier")
        return {literal}


def parse_label_query(text: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """The requirements of ``text``, ``(key, op, values)`` with op one of ``=``, ``!=``,
    ``in``, ``notin``, ``exists``, ``!``, ``gt``, ``lt``; :class:`LabelQueryError`
    (kube-apiserver's words) when it does not parse."""
    return _Parser(text).requirements()
