"""A small Common Expression Language (CEL) interpreter for CRD validation rules
(``x-kubernetes-validations``), as kube-apiserver 1.30 evaluates them.

It reads the language (literals, operators, field selection, indexing, ``has()``,
the comprehension macros, optional ``?.`` / ``[?]``) and evaluates it over values
decoded from JSON, with the functions of the Kubernetes CEL environment that
operators use (CEL's standard functions, the extended string library, the list
library, ``sets``, ``url``). Errors carry cel-go's words (``no such key: x``,
``division by zero``, ``index '5' out of range in list size '1'`` ...).

Two kinds of failure are kept apart:

* :class:`CelError`: a CEL runtime error (what the server reports as
  ``<error> evaluating rule: <rule>``);
* :class:`Unsupported`: something this interpreter does not read or does not know
  (a syntax error, an unknown function, a field the schema does not declare). A
  real server refuses such a rule when the CRD is written, so the caller skips the
  rule rather than refuse an object over it.

The code is this project's own; facts (semantics and words) from the CEL language
definition and cel-go / kubernetes apiserver v0.30.0.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import math
import re
import urllib.parse
import zoneinfo
from collections.abc import Callable, Iterator
from typing import Any, Final

__all__ = [
    "CelError",
    "CelType",
    "Duration",
    "MapList",
    "Object",
    "ObjectList",
    "Optional",
    "Program",
    "Quantity",
    "SetList",
    "Timestamp",
    "Uint",
    "Unsupported",
    "compile_rule",
    "escape_name",
    "optional_none",
    "parse_duration",
    "parse_quantity",
    "parse_timestamp",
]

_INT_MIN: Final = -(2**63)
_INT_MAX: Final = 2**63 - 1
_UINT_MAX: Final = 2**64 - 1


class CelError(Exception):
    """A CEL runtime error (its message in cel-go's words)."""


class Unsupported(Exception):
    """A rule this interpreter cannot read or evaluate (the server would have
    refused it at compile time, or it needs something not built here)."""


class Uint(int):
    """A CEL ``uint``."""

    __slots__ = ()


class Object(dict[str, Any]):
    """An object of a structural schema: only its declared fields may be selected
    (selecting another is a compile error on a real server)."""

    __slots__ = ("fields",)

    def __init__(self, items: dict[str, Any], fields: frozenset[str]) -> None:
        super().__init__(items)
        self.fields = fields


class Duration:
    """A CEL ``google.protobuf.Duration`` (nanoseconds)."""

    __slots__ = ("nanos",)

    def __init__(self, nanos: int) -> None:
        if abs(nanos) > 315576000000 * 10**9:
            raise CelError("duration overflow")
        self.nanos = nanos

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and other.nanos == self.nanos

    def __hash__(self) -> int:
        return hash(("duration", self.nanos))


class Timestamp:
    """A CEL ``google.protobuf.Timestamp`` (nanoseconds since the epoch, UTC)."""

    __slots__ = ("nanos",)

    def __init__(self, nanos: int) -> None:
        if not -62135596800 * 10**9 <= nanos <= 253402300799 * 10**9 + 999999999:
            raise CelError("timestamp overflow")
        self.nanos = nanos

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Timestamp) and other.nanos == self.nanos

    def __hash__(self) -> int:
        return hash(("timestamp", self.nanos))


class Optional:
    """A CEL ``optional_type`` value (``_EMPTY`` when it holds none)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Optional):
            return False
        if self.value is _EMPTY or other.value is _EMPTY:
            return self.value is other.value
        return _equal(self.value, other.value)

    def __hash__(self) -> int:
        return 0


_EMPTY: Final = object()


class CelType:
    """A CEL type as a value (``type(x)``, ``int``, ``google.protobuf.Duration``)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CelType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("type", self.name))


#: The type names a rule may write as values.
_TYPE_NAMES: Final = frozenset(
    {
        "int",
        "uint",
        "double",
        "bool",
        "string",
        "bytes",
        "list",
        "map",
        "null_type",
        "type",
        "google.protobuf.Duration",
        "google.protobuf.Timestamp",
    }
)


class ObjectList(list[Any]):
    """A list taken from the object."""

    __slots__ = ()


class SetList(list[Any]):
    """An ``x-kubernetes-list-type: set`` list: equal to a list with the same items in
    any order; ``+`` is the union."""

    __slots__ = ()


class MapList(list[Any]):
    """An ``x-kubernetes-list-type: map`` list: items are found by their keys (equal
    in any order; ``+`` replaces the items of the same keys, then appends)."""

    __slots__ = ("keys",)

    def __init__(self, items: Any, keys: tuple[str, ...]) -> None:
        super().__init__(items)
        self.keys = keys

    def key_of(self, item: Any) -> Any:
        if not isinstance(item, dict):
            return None
        return tuple(_hashable(item.get(k)) for k in self.keys)

    def find(self, item: Any) -> Any:
        wanted = self.key_of(item)
        for candidate in self:
            if self.key_of(candidate) == wanted:
                return candidate
        return _EMPTY


#: The lists taken from the object (each kind its own class: lists, not a hierarchy).
_OBJECT_LISTS: Final = (ObjectList, SetList, MapList)


def _hashable(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return repr(value)
    return (type(value).__name__, value)


class Quantity:
    """A Kubernetes ``resource.Quantity`` (its exact value)."""

    __slots__ = ("value",)

    def __init__(self, value: fractions.Fraction) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and other.value == self.value

    def __hash__(self) -> int:
        return hash(("quantity", self.value))


_QUANTITY_FORMAT: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
_QUANTITY = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)")
_QUANTITY_SUFFIX: Final = {
    "": fractions.Fraction(1),
    "n": fractions.Fraction(1, 10**9),
    "u": fractions.Fraction(1, 10**6),
    "m": fractions.Fraction(1, 10**3),
    "k": fractions.Fraction(10**3),
    "M": fractions.Fraction(10**6),
    "G": fractions.Fraction(10**9),
    "T": fractions.Fraction(10**12),
    "P": fractions.Fraction(10**15),
    "E": fractions.Fraction(10**18),
    "Ki": fractions.Fraction(2**10),
    "Mi": fractions.Fraction(2**20),
    "Gi": fractions.Fraction(2**30),
    "Ti": fractions.Fraction(2**40),
    "Pi": fractions.Fraction(2**50),
    "Ei": fractions.Fraction(2**60),
}


def parse_quantity(text: str) -> Quantity:
    """A quantity as Kubernetes reads one (``100m``, ``1.5Gi``, ``2e3``)."""
    found = _QUANTITY.fullmatch(text)
    if not text or found is None or not (found[2] or found[3]):
        raise CelError(_QUANTITY_FORMAT)
    sign, whole, fraction, suffix = found[1], found[2], found[3] or "", found[4]
    number = fractions.Fraction(int(whole or "0")) + (
        fractions.Fraction(int(fraction), 10 ** len(fraction)) if fraction else 0
    )
    if suffix in _QUANTITY_SUFFIX:
        number *= _QUANTITY_SUFFIX[suffix]
    elif re.fullmatch(r"[eE][+-]?[0-9]+", suffix):
        number *= fractions.Fraction(10) ** int(suffix[1:])
    else:
        raise CelError("unable to parse quantity's suffix")
    return Quantity(-number if sign == "-" else number)


def _quantity_method(name: str, target: Quantity, args: list[Any]) -> Any:
    value = target.value
    if not args:
        if name == "sign":
            return (value > 0) - (value < 0)
        if name == "isInteger":
            return value.denominator == 1 and _INT_MIN <= value <= _INT_MAX
        if name == "asInteger":
            if value.denominator != 1 or not _INT_MIN <= value <= _INT_MAX:
                raise CelError("cannot convert value to integer")
            return int(value)
        if name == "asApproximateFloat":
            return float(value)
    if len(args) == 1:
        other = args[0]
        if name in ("add", "sub") and (_is_int(other) or isinstance(other, Quantity)):
            amount = other.value if isinstance(other, Quantity) else fractions.Fraction(other)
            return Quantity(value + amount if name == "add" else value - amount)
        if isinstance(other, Quantity):
            order = (value > other.value) - (value < other.value)
            if name == "isGreaterThan":
                return order > 0
            if name == "isLessThan":
                return order < 0
            if name == "compareTo":
                return order
    raise Unsupported(name)


def optional_none() -> Optional:
    """``optional.none()``."""
    return Optional(_EMPTY)


_CEL_RESERVED: Final = frozenset(
    {"true", "false", "null", "in", "as", "break", "const", "continue", "else", "for"}
    | {"function", "if", "import", "let", "loop", "package", "namespace", "return"}
    | {"var", "void", "while"}
)
_ESCAPES: Final = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


def escape_name(name: str) -> str | None:
    """A property's name as a rule selects it (Kubernetes' escaping: a reserved word
    as ``__word__``; ``__``, ``.``, ``-``, ``/`` spelt out); None for a name no rule
    can select."""
    if name in _CEL_RESERVED:
        return f"__{name}__"
    if not name or not re.fullmatch(r"[a-zA-Z_./-][a-zA-Z0-9_./-]*", name):
        return None
    return re.sub(r"__|[./-]", lambda m: _ESCAPES[m.group()], name)


# -- lexing ---------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
  | (?P<number>0[xX][0-9a-fA-F]+[uU]?
      |[0-9]+\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|\.[0-9]+(?:[eE][+-]?[0-9]+)?
      |[0-9]+[uU]?)
  | (?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:'''|\"\"\"|'|\"))
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|\.\?|\[\?|[-+*/%!<>?:.,\[\](){}])
    """,
    re.VERBOSE,
)
_RESERVED: Final = frozenset(
    [
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_SIMPLE_ESCAPES: Final = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "`": "`",
    "?": "?",
}


def _read_string(text: str, start: int, prefix: str, quote: str) -> tuple[Any, int]:
    """A string or bytes literal from just after its opening quote; returns the value
    and the index after its closing quote."""
    raw = "r" in prefix.lower()
    is_bytes = "b" in prefix.lower()
    out: list[str] = []  # characters, or for bytes chars standing for byte values
    byte_values: list[int] = []
    i = start
    triple = len(quote) == 3
    while True:
        if i >= len(text):
            raise Unsupported("unterminated string")
        if text.startswith(quote, i):
            i += len(quote)
            break
        char = text[i]
        if char == "\n" and not triple:
            raise Unsupported("newline in string")
        if char == "\\" and not raw:
            if i + 1 >= len(text):
                raise Unsupported("bad escape")
            code = text[i + 1]
            if code in _SIMPLE_ESCAPES:
                piece: str | int = _SIMPLE_ESCAPES[code]
                i += 2
            elif code in "xX":
                piece, i = _hex_escape(text, i + 2, 2, is_bytes)
            elif code == "u" and not is_bytes:
                piece, i = _hex_escape(text, i + 2, 4, False)
            elif code == "U" and not is_bytes:
                piece, i = _hex_escape(text, i + 2, 8, False)
            elif code in "0123":
                digits = text[i + 1 : i + 4]
                if not re.fullmatch(r"[0-7]{3}", digits):
                    raise Unsupported("bad octal escape")
                piece = int(digits, 8) if is_bytes else chr(int(digits, 8))
                i += 4
            else:
                raise Unsupported("bad escape")
            if isinstance(piece, int):
                byte_values.append(piece)
            else:
                if is_bytes:
                    byte_values.extend(piece.encode())
                else:
                    out.append(piece)
            continue
        if is_bytes:
            byte_values.extend(char.encode())
        else:
            out.append(char)
        i += 1
    if is_bytes:
        return bytes(byte_values), i
    value = "".join(out)
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise Unsupported("surrogate in string")
    return value, i


def _hex_escape(text: str, at: int, width: int, as_byte: bool) -> tuple[str | int, int]:
    digits = text[at : at + width]
    if len(digits) != width or not re.fullmatch(r"[0-9a-fA-F]+", digits):
        raise Unsupported("bad hex escape")
    number = int(digits, 16)
    if as_byte:
        return number, at + width
    if number > 0x10FFFF or 0xD800 <= number <= 0xDFFF:
        raise Unsupported("bad code point")
    return chr(number), at + width


def _tokens(text: str) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    i = 0
    while i < len(text):
        found = _TOKEN.match(text, i)
        if found is None:
            raise Unsupported(f"unexpected character {text[i]!r}")
        kind = found.lastgroup
        token = found.group()
        i = found.end()
        if kind == "space":
            continue
        if kind == "string":
            quote = token.lstrip("rRbB")
            value, i = _read_string(text, i, token[: len(token) - len(quote)], quote)
            out.append(("lit", value))
        elif kind == "number":
            out.append(("num", token))
        elif kind == "ident":
            if token in ("true", "false"):
                out.append(("lit", token == "true"))
            elif token == "null":
                out.append(("lit", None))
            elif token == "in":
                out.append(("op", "in"))
            elif token in _RESERVED:
                raise Unsupported(f"reserved identifier {token}")
            else:
                out.append(("ident", token))
        else:
            out.append(("op", token))
    out.append(("end", None))
    return out


def _number(token: str, negative: bool) -> Any:
    if token[-1] in "uU":
        body = token[:-1]
        value = int(body, 16) if body[:2].lower() == "0x" else int(body)
        if negative or value > _UINT_MAX:
            raise Unsupported("uint literal out of range")
        return Uint(value)
    if token[:2].lower() == "0x":
        value = int(token, 16)
    elif any(c in token for c in ".eE"):
        number = float(token)
        return -number if negative else number
    else:
        value = int(token)
    value = -value if negative else value
    if not _INT_MIN <= value <= _INT_MAX:
        raise Unsupported("int literal out of range")
    return value


# -- parsing --------------------------------------------------------------------------
#
# The syntax tree is made of tuples: ("lit", v), ("id", name), ("sel", e, name),
# ("optsel", e, name), ("index", e, i), ("optindex", e, i), ("call", name, target|None,
# [args]), ("list", [(e, optional)]), ("map", [(k, v, optional)]), ("and", a, b),
# ("or", a, b), ("cond", c, a, b), ("not", e), ("neg", e), ("binop", op, a, b),
# ("has", e), ("macro", name, target, var, [args]).

_MACROS: Final = frozenset({"all", "exists", "exists_one", "map", "filter", "optMap", "optFlatMap"})
_RELATIONS: Final = frozenset({"<", "<=", ">", ">=", "==", "!=", "in"})


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.depth = 0

    def peek(self) -> tuple[str, Any]:
        return self.tokens[self.pos]

    def take(self) -> tuple[str, Any]:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def accept(self, op: str) -> bool:
        if self.tokens[self.pos] == ("op", op):
            self.pos += 1
            return True
        return False

    def expect(self, op: str) -> None:
        if not self.accept(op):
            raise Unsupported(f"expected {op}")

    def parse(self) -> Any:
        tree = self.expr()
        if self.peek()[0] != "end":
            raise Unsupported("trailing input")
        return tree

    def expr(self) -> Any:
        self.depth += 1
        if self.depth > 200:
            raise Unsupported("expression too deep")
        cond = self.or_()
        if self.accept("?"):
            left = self.or_()
            self.expect(":")
            right = self.expr()
            cond = ("cond", cond, left, right)
        self.depth -= 1
        return cond

    def or_(self) -> Any:
        tree = self.and_()
        while self.accept("||"):
            tree = ("or", tree, self.and_())
        return tree

    def and_(self) -> Any:
        tree = self.relation()
        while self.accept("&&"):
            tree = ("and", tree, self.relation())
        return tree

    def relation(self) -> Any:
        tree = self.addition()
        while self.peek()[0] == "op" and self.peek()[1] in _RELATIONS:
            op = self.take()[1]
            tree = ("binop", op, tree, self.addition())
        return tree

    def addition(self) -> Any:
        tree = self.multiplication()
        while self.peek()[0] == "op" and self.peek()[1] in ("+", "-"):
            op = self.take()[1]
            tree = ("binop", op, tree, self.multiplication())
        return tree

    def multiplication(self) -> Any:
        tree = self.unary()
        while self.peek()[0] == "op" and self.peek()[1] in ("*", "/", "%"):
            op = self.take()[1]
            tree = ("binop", op, tree, self.unary())
        return tree

    def unary(self) -> Any:
        if self.accept("!"):
            return ("not", self.unary())
        if self.accept("-"):
            kind, token = self.peek()
            if kind == "num":
                self.take()
                return self.member(("lit", _number(token, True)))
            return ("neg", self.unary())
        return self.member(self.primary())

    def args(self, close: str) -> list[Any]:
        out: list[Any] = []
        if self.accept(close):
            return out
        while True:
            out.append(self.expr())
            if self.accept(close):
                return out
            self.expect(",")

    def member(self, tree: Any) -> Any:
        while True:
            if self.accept("."):
                kind, name = self.take()
                if kind != "ident":
                    raise Unsupported("expected a field name")
                if self.accept("("):
                    tree = self.call(name, tree, self.args(")"))
                else:
                    tree = ("sel", tree, name)
            elif self.accept(".?"):
                kind, name = self.take()
                if kind != "ident":
                    raise Unsupported("expected a field name")
                tree = ("optsel", tree, name)
            elif self.accept("["):
                tree = ("index", tree, self.expr())
                self.expect("]")
            elif self.accept("[?"):
                tree = ("optindex", tree, self.expr())
                self.expect("]")
            else:
                return tree

    def call(self, name: str, target: Any, args: list[Any]) -> Any:
        if target is None and name == "has":
            if len(args) != 1 or args[0][0] not in ("sel",):
                raise Unsupported("invalid argument to has() macro")
            return ("has", args[0])
        if target is not None and name in _MACROS and len(args) in (2, 3):
            if args[0][0] != "id":
                raise Unsupported("argument is not an identifier")
            if len(args) == 3 and name != "map":
                raise Unsupported(f"{name} takes two arguments")
            return ("macro", name, target, args[0][1], args[1:])
        return ("call", name, target, args)

    def primary(self) -> Any:
        kind, value = self.take()
        if kind == "lit":
            return ("lit", value)
        if kind == "num":
            return ("lit", _number(value, False))
        if kind == "ident":
            if self.accept("("):
                return self.call(value, None, self.args(")"))
            if self.peek() == ("op", "{"):
                raise Unsupported("message construction")
            return ("id", value)
        if kind == "op":
            if value == "(":
                tree = self.expr()
                self.expect(")")
                return tree
            if value == "[":
                return ("list", self.list_items())
            if value == "{":
                return ("map", self.map_items())
            if value == ".":
                kind, name = self.take()
                if kind == "ident":
                    if self.accept("("):
                        return self.call(name, None, self.args(")"))
                    return ("id", name)
        raise Unsupported("unexpected token")

    def list_items(self) -> list[tuple[Any, bool]]:
        out: list[tuple[Any, bool]] = []
        while not self.accept("]"):
            optional = self.accept("?")
            out.append((self.expr(), optional))
            if not self.accept(","):
                self.expect("]")
                break
        return out

    def map_items(self) -> list[tuple[Any, Any, bool]]:
        out: list[tuple[Any, Any, bool]] = []
        while not self.accept("}"):
            optional = self.accept("?")
            key = self.expr()
            self.expect(":")
            out.append((key, self.expr(), optional))
            if not self.accept(","):
                self.expect("}")
                break
        return out


def _uses(tree: Any, name: str) -> bool:
    """Whether the tree reads the variable ``name`` (not shadowed by a macro)."""
    if not isinstance(tree, tuple):
        if isinstance(tree, list):
            return any(_uses(t, name) for t in tree)
        return False
    if tree[0] == "id":
        return bool(tree[1] == name)
    if tree[0] == "lit":
        return False
    if tree[0] == "macro":
        if _uses(tree[2], name):  # (the target is read outside the macro's scope)
            return True
        return bool(tree[3] != name and _uses(tree[4], name))
    return any(_uses(t, name) for t in tree[1:])


class Program:
    """A parsed expression; :meth:`evaluate` runs it with its variables."""

    __slots__ = ("tree", "uses_old_self")

    def __init__(self, tree: Any) -> None:
        self.tree = tree
        self.uses_old_self = _uses(tree, "oldSelf")

    def evaluate(self, variables: dict[str, Any]) -> Any:
        try:
            return _eval(self.tree, variables)
        except RecursionError as exc:
            raise Unsupported("too deep") from exc


_COMPILED: dict[str, Program | Unsupported] = {}


def compile_rule(text: str) -> Program:
    """Parse a rule (cached); :class:`Unsupported` if it does not parse."""
    found = _COMPILED.get(text)
    if found is None:
        try:
            found = Program(_Parser(text).parse())
        except (Unsupported, RecursionError, ValueError) as exc:
            found = Unsupported(str(exc))
        if len(_COMPILED) < 4096:
            _COMPILED[text] = found
    if isinstance(found, Unsupported):
        raise Unsupported(str(found))
    return found


# -- evaluation -----------------------------------------------------------------------


def _type_name(value: Any) -> str:
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Uint):
        return "uint"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, Duration):
        return "google.protobuf.Duration"
    if isinstance(value, Timestamp):
        return "google.protobuf.Timestamp"
    if isinstance(value, Optional):
        return "optional_type"
    if isinstance(value, CelType):
        return "type"
    return "unknown"


def _overload(name: str) -> CelError:
    """cel-go's error for a call no overload of ``name`` takes (its words carry no name)."""
    return CelError("no such overload")


def _int(value: int) -> int:
    if not _INT_MIN <= value <= _INT_MAX:
        raise CelError("integer overflow")
    return value


def _uint(value: int) -> Uint:
    if not 0 <= value <= _UINT_MAX:
        raise CelError("unsigned integer overflow")
    return Uint(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, (bool, Uint))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numeric_compare(a: Any, b: Any) -> int:
    if isinstance(a, float) or isinstance(b, float):
        x, y = float(a), float(b)
        if math.isnan(x) or math.isnan(y):
            raise CelError("NaN values cannot be ordered")
        return (x > y) - (x < y)
    return int((a > b) - (a < b))


def _equal(a: Any, b: Any) -> bool:
    """CEL's heterogeneous equality: numbers compare by value across int, uint and
    double; values of different types are not equal."""
    if _is_number(a) and _is_number(b):
        if isinstance(a, float) or isinstance(b, float):
            return float(a) == float(b)
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a is b
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return False
        if isinstance(b, (SetList, MapList)) and not isinstance(a, (SetList, MapList)):
            a, b = b, a
        if isinstance(a, SetList):
            return all(any(_equal(x, y) for y in a) for x in b)
        if isinstance(a, MapList):
            for item in b:
                found = a.find(item)
                if found is _EMPTY or not _equal(found, item):
                    return False
            return True
        return all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        if len(a) != len(b):
            return False
        for key, value in a.items():
            other = _map_get(b, key)
            if other is _EMPTY or not _equal(value, other):
                return False
        return True
    if type(a) is not type(b) and not (isinstance(a, str) and isinstance(b, str)):
        return False
    return bool(a == b)


def _map_get(mapping: dict[Any, Any], key: Any) -> Any:
    if isinstance(key, bool) or key is None:
        for k, v in mapping.items():
            if isinstance(k, bool) and k is key:
                return v
        return _EMPTY
    if _is_number(key):
        if isinstance(key, float) and not key.is_integer():
            return _EMPTY
        for k, v in mapping.items():
            if _is_number(k) and not isinstance(k, bool) and k == key:
                return v
        return _EMPTY
    if isinstance(key, str):
        return mapping.get(key, _EMPTY)
    raise _overload("_[_]")


def _compare(a: Any, b: Any) -> int:
    if _is_number(a) and _is_number(b):
        return _numeric_compare(a, b)
    if isinstance(a, bool) and isinstance(b, bool):
        return int(a) - int(b)
    if isinstance(a, str) and isinstance(b, str):
        x, y = a.encode(), b.encode()
        return (x > y) - (x < y)
    if isinstance(a, bytes) and isinstance(b, bytes):
        return (a > b) - (a < b)
    if isinstance(a, (Duration, Timestamp)) and type(a) is type(b):
        return (a.nanos > b.nanos) - (a.nanos < b.nanos)
    raise _overload("_<_")


def _add(a: Any, b: Any) -> Any:
    if isinstance(a, Uint) and isinstance(b, Uint):
        return _uint(a + b)
    if _is_int(a) and _is_int(b):
        return _int(a + b)
    if isinstance(a, float) and isinstance(b, float):
        return a + b
    if isinstance(a, str) and isinstance(b, str):
        return a + b
    if isinstance(a, bytes) and isinstance(b, bytes):
        return a + b
    if isinstance(a, SetList) and isinstance(b, list):
        union = SetList(a)
        for item in b:
            if not any(_equal(item, x) for x in union):
                union.append(item)
        return union
    if isinstance(a, MapList) and isinstance(b, list):
        merged = MapList([], a.keys)
        merged.extend(b_item if (b_item := _find_in(a, b, x)) is not _EMPTY else x for x in a)
        merged.extend(x for x in b if a.find(x) is _EMPTY)
        return merged
    if isinstance(a, list) and isinstance(b, list):
        return a + b
    if isinstance(a, Duration) and isinstance(b, Duration):
        return Duration(a.nanos + b.nanos)
    if isinstance(a, Timestamp) and isinstance(b, Duration):
        return Timestamp(a.nanos + b.nanos)
    if isinstance(a, Duration) and isinstance(b, Timestamp):
        return Timestamp(a.nanos + b.nanos)
    raise _overload("_+_")


def _subtract(a: Any, b: Any) -> Any:
    if isinstance(a, Uint) and isinstance(b, Uint):
        return _uint(a - b)
    if _is_int(a) and _is_int(b):
        return _int(a - b)
    if isinstance(a, float) and isinstance(b, float):
        return a - b
    if isinstance(a, Duration) and isinstance(b, Duration):
        return Duration(a.nanos - b.nanos)
    if isinstance(a, Timestamp) and isinstance(b, Timestamp):
        return Duration(a.nanos - b.nanos)
    if isinstance(a, Timestamp) and isinstance(b, Duration):
        return Timestamp(a.nanos - b.nanos)
    raise _overload("_-_")


def _find_in(keyed: MapList, items: list[Any], item: Any) -> Any:
    """The item of ``items`` with the keys of ``item`` (as ``keyed`` reads keys)."""
    wanted = keyed.key_of(item)
    for candidate in items:
        if keyed.key_of(candidate) == wanted:
            return candidate
    return _EMPTY


def _truncated_divide(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _arith(op: str, a: Any, b: Any) -> Any:
    if op == "+":
        return _add(a, b)
    if op == "-":
        return _subtract(a, b)
    same_int = (isinstance(a, Uint) and isinstance(b, Uint)) or (_is_int(a) and _is_int(b))
    make: Callable[[int], int] = _uint if isinstance(a, Uint) else _int
    if op == "*":
        if same_int:
            return make(a * b)
        if isinstance(a, float) and isinstance(b, float):
            return a * b
        raise _overload("_*_")
    if op == "/":
        if same_int:
            if b == 0:
                raise CelError("division by zero")
            return make(_truncated_divide(a, b))
        if isinstance(a, float) and isinstance(b, float):
            if b == 0:
                if a == 0 or math.isnan(a):
                    return math.nan
                return math.copysign(math.inf, a) * math.copysign(1, b)
            return a / b
        raise _overload("_/_")
    if same_int:  # %
        if b == 0:
            raise CelError("modulus by zero")
        return make(a - b * _truncated_divide(a, b))
    raise _overload("_%_")


def _binop(op: str, a: Any, b: Any) -> Any:
    if op == "==":
        return _equal(a, b)
    if op == "!=":
        return not _equal(a, b)
    if op == "in":
        if isinstance(b, list):
            return any(_equal(a, item) for item in b)
        if isinstance(b, dict):
            return _map_get(b, a) is not _EMPTY
        raise _overload("@in")
    if op in ("<", "<=", ">", ">="):
        order = _compare(a, b)
        return {"<": order < 0, "<=": order <= 0, ">": order > 0, ">=": order >= 0}[op]
    return _arith(op, a, b)


def _truth(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise _overload(name)
    return value


def _select(value: Any, name: str, presence: bool = False) -> Any:
    """``value.name``; with ``presence``, whether the field is set (``has()``)."""
    if isinstance(value, Object):
        if name not in value.fields:
            raise Unsupported(f"undefined field '{name}'")
        if presence:
            return name in value
        if name not in value:
            raise CelError(f"no such key: {name}")
        return value[name]
    if isinstance(value, dict):
        if presence:
            return name in value
        if name not in value:
            raise CelError(f"no such key: {name}")
        return value[name]
    # (selecting a field of anything else is refused by the type checker)
    raise Unsupported(f"type '{_type_name(value)}' does not support field selection")


def _index(value: Any, key: Any) -> Any:
    if isinstance(value, _OBJECT_LISTS) and _is_int(key):
        if not 0 <= key < len(value):
            raise CelError(f"index out of bounds: {key}")
        return value[key]
    if isinstance(value, list):
        if isinstance(key, float) and key.is_integer():
            key = int(key)
        if not _is_number(key) or isinstance(key, float):
            raise CelError(f"unsupported index type '{_type_name(key)}' in list")
        if not 0 <= key < len(value):
            raise CelError(f"index out of bounds: {key}")
        return value[key]
    if isinstance(value, dict):
        if isinstance(value, Object):
            raise Unsupported("index of an object")  # (no matching overload for '_[_]')
        found = _map_get(value, key)
        if found is _EMPTY:
            raise CelError(f"no such key: {_key_text(key)}")
        return found
    raise _overload("_[_]")


def _key_text(key: Any) -> str:
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


def _iterate(value: Any) -> Iterator[Any]:
    if isinstance(value, list):
        return iter(list(value))
    if isinstance(value, dict):
        return iter(list(value))
    raise Unsupported("comprehension over a non-list")


def _eval(tree: Any, env: dict[str, Any]) -> Any:
    kind = tree[0]
    if kind == "lit":
        return tree[1]
    if kind == "id":
        name = tree[1]
        if name not in env:
            if name in _TYPE_NAMES:
                return CelType(name)
            raise Unsupported(f"undeclared reference to '{name}'")
        return env[name]
    if kind == "sel":
        qualified = _qualified_name(tree)
        if qualified in _TYPE_NAMES and str(qualified).partition(".")[0] not in env:
            return CelType(qualified)
        target = _eval(tree[1], env)
        if isinstance(target, Optional):  # (selection on an optional chains: a?.b.c)
            if target.value is _EMPTY:
                return target
            inner = target.value
            return Optional(_select(inner, tree[2]) if _select(inner, tree[2], True) else _EMPTY)
        return _select(target, tree[2])
    if kind == "index":
        return _index(_eval(tree[1], env), _eval(tree[2], env))
    if kind in ("optsel", "optindex"):
        target = _eval(tree[1], env)
        if isinstance(target, Optional):
            if target.value is _EMPTY:
                return target
            target = target.value
        if kind == "optsel":
            return Optional(_select(target, tree[2]) if _select(target, tree[2], True) else _EMPTY)
        key = _eval(tree[2], env)
        if isinstance(target, dict):
            if isinstance(target, Object) and isinstance(key, str):
                present = _select(target, key, True)
                return Optional(target[key] if present else _EMPTY)
            found = _map_get(target, key)
            return Optional(found)
        if isinstance(target, list) and _is_int(key):
            return Optional(target[key] if 0 <= key < len(target) else _EMPTY)
        raise _overload("_[?_]")
    if kind == "has":
        operand = tree[1]
        target = _eval(operand[1], env)
        if isinstance(target, dict):
            return _select(target, operand[2], True)
        raise CelError(f"invalid type for field selection: {_type_name(target)}")
    if kind == "and" or kind == "or":
        short = kind == "or"  # the value that decides: true for ||, false for &&
        error: CelError | None = None
        for operand in tree[1:]:
            try:
                value = _eval(operand, env)
            except CelError as exc:
                error = error or exc
                continue
            if not isinstance(value, bool):
                error = error or _overload("_&&_" if kind == "and" else "_||_")
                continue
            if value is short:
                return short
        if error is not None:
            raise error
        return not short
    if kind == "cond":
        if _truth(_eval(tree[1], env), "_?_:_"):
            return _eval(tree[2], env)
        return _eval(tree[3], env)
    if kind == "not":
        return not _truth(_eval(tree[1], env), "!_")
    if kind == "neg":
        value = _eval(tree[1], env)
        if _is_int(value):
            return _int(-value)
        if isinstance(value, float):
            return -value
        if isinstance(value, Duration):
            return Duration(-value.nanos)
        raise _overload("-_")
    if kind == "binop":
        return _binop(tree[1], _eval(tree[2], env), _eval(tree[3], env))
    if kind == "list":
        items = []
        for item, optional in tree[1]:
            value = _eval(item, env)
            if optional:
                if not isinstance(value, Optional):
                    raise _overload("optional")
                if value.value is _EMPTY:
                    continue
                value = value.value
            items.append(value)
        return items
    if kind == "map":
        out: dict[Any, Any] = {}
        for key_tree, value_tree, optional in tree[1]:
            key = _eval(key_tree, env)
            if isinstance(key, (float, list, dict, bytes)) or key is None:
                raise CelError(f"unsupported key type: {_type_name(key)}")
            value = _eval(value_tree, env)
            if optional:
                if not isinstance(value, Optional):
                    raise _overload("optional")
                if value.value is _EMPTY:
                    continue
                value = value.value
            if _map_get(out, key) is not _EMPTY:
                raise CelError(f"insert failed: key {_key_text(key)} already exists")
            out[key] = value
        return out
    if kind == "macro":
        return _macro(tree, env)
    if kind == "call":
        return _call(tree, env)
    raise Unsupported(f"unknown node {kind}")


def _macro(tree: Any, env: dict[str, Any]) -> Any:
    _, name, target_tree, var, args = tree
    target = _eval(target_tree, env)
    scope = dict(env)
    if name in ("optMap", "optFlatMap"):
        if not isinstance(target, Optional) or len(args) != 1:
            raise Unsupported(name)
        if target.value is _EMPTY:
            return target
        scope[var] = target.value
        result = _eval(args[0], scope)
        if name == "optMap":
            return Optional(result)
        if not isinstance(result, Optional):
            raise _overload(name)
        return result
    if name in ("all", "exists"):
        decisive = name == "exists"
        error: CelError | None = None
        for item in _iterate(target):
            scope[var] = item
            try:
                value = _truth(_eval(args[0], scope), "_&&_" if name == "all" else "_||_")
            except CelError as exc:
                error = error or exc
                continue
            if value is decisive:
                return decisive
        if error is not None:
            raise error
        return not decisive
    if name == "exists_one":
        count = 0
        for item in _iterate(target):
            scope[var] = item
            if _truth(_eval(args[0], scope), "exists_one"):
                count += 1
        return count == 1
    out = []
    for item in _iterate(target):
        scope[var] = item
        if name == "filter":
            if _truth(_eval(args[0], scope), "filter"):
                out.append(item)
        elif len(args) == 2:  # map(x, predicate, transform)
            if _truth(_eval(args[0], scope), "map"):
                out.append(_eval(args[1], scope))
        else:
            out.append(_eval(args[0], scope))
    return out


# -- functions ------------------------------------------------------------------------


def _size(value: Any) -> int:
    if isinstance(value, (str, bytes, list, dict)):
        return len(value)
    raise _overload("size")


_REGEXES: dict[str, re.Pattern[str]] = {}


def _re2_ends(pattern: str) -> str:
    """RE2's ``$`` (outside multi-line mode) is the end of the text only; Python's also
    matches before a final newline: each such ``$`` becomes ``\\Z``."""
    if "(?" in pattern and re.search(r"\(\?[a-zA-Z]*m", pattern):
        return pattern
    out: list[str] = []
    escaped = in_class = False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            out.append("\\Z")
            continue
        out.append(char)
    return "".join(out)


def _regex(pattern: str) -> re.Pattern[str]:
    """An RE2 pattern read by Python's ``re`` (the two agree on what rules use); a
    pattern Python does not read makes the rule unsupported."""
    compiled = _REGEXES.get(pattern)
    if compiled is None:
        if re.search(r"\\[pPCzQE]|\[\[:|\(\?P=|\\[0-9]|\(\?[<>=!]|(?<!\\)[*+?}]\+", pattern):
            raise Unsupported("regex syntax")
        try:
            compiled = re.compile(_re2_ends(pattern))
        except re.error as exc:
            raise Unsupported("regex") from exc
        _REGEXES[pattern] = compiled
    return compiled


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise _overload("int")
    if isinstance(value, int):
        if isinstance(value, Uint) and value > _INT_MAX:
            raise CelError("integer overflow")
        return int(value)
    if isinstance(value, float):
        if math.isnan(value) or not -(2.0**63) < value < 2.0**63:
            raise CelError("integer overflow")
        return int(value)
    if isinstance(value, str):
        if not re.fullmatch(r"[+-]?[0-9]+", value):
            raise CelError(f"cannot convert string '{value}' to int")
        number = int(value)
        if not _INT_MIN <= number <= _INT_MAX:
            raise CelError(f"cannot convert string '{value}' to int")
        return number
    if isinstance(value, Timestamp):
        return value.nanos // 10**9
    if isinstance(value, Duration):
        return value.nanos
    raise _overload("int")


def _to_uint(value: Any) -> Uint:
    if isinstance(value, bool):
        raise _overload("uint")
    if isinstance(value, int):
        if value < 0:
            raise CelError("unsigned integer overflow")
        return Uint(value)
    if isinstance(value, float):
        if math.isnan(value) or not -1 < value < 2.0**64:
            raise CelError("unsigned integer overflow")
        return Uint(int(value))
    if isinstance(value, str):
        if not re.fullmatch(r"\+?[0-9]+", value) or int(value) > _UINT_MAX:
            raise CelError(f"cannot convert string '{value}' to uint")
        return Uint(int(value))
    raise _overload("uint")


def _to_double(value: Any) -> float:
    if isinstance(value, bool):
        raise _overload("double")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise CelError(f"cannot convert string '{value}' to double") from None
    raise _overload("double")


def _format_double(value: float) -> str:
    """A double as cel-go's ``string()`` writes it: Go's ``%g`` (the shortest digits;
    an exponent below 1e-4 and from 1e+06 up)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent
    exp = point - 1
    head = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{head}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{head}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{head}{text}{'0' * (point - len(text))}"
    return f"{head}{text[:point]}.{text[point:]}"


def _format_duration(nanos: int) -> str:
    seconds, rest = divmod(abs(nanos), 10**9)
    sign = "-" if nanos < 0 else ""
    if rest:
        return f"{sign}{seconds}.{rest:09d}".rstrip("0") + "s"
    return f"{sign}{seconds}s"


def _format_timestamp(nanos: int) -> str:
    seconds, rest = divmod(nanos, 10**9)
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if rest:
        text += f".{rest:09d}".rstrip("0")
    return text + "Z"


def _to_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return _format_double(value)
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            raise CelError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(value, Duration):
        return _format_duration(value.nanos)
    if isinstance(value, Timestamp):
        return _format_timestamp(value.nanos)
    raise _overload("string")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        if value in ("1", "t", "true", "TRUE", "True", "T"):
            return True
        if value in ("0", "f", "false", "FALSE", "False", "F"):
            return False
        raise CelError("type conversion error from 'string' to 'bool'")
    raise _overload("bool")


_DURATION_UNIT: Final = {
    "h": 3600 * 10**9,
    "m": 60 * 10**9,
    "s": 10**9,
    "ms": 10**6,
    "us": 10**3,
    "µs": 10**3,
    "μs": 10**3,
    "ns": 1,
}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(h|ms|m|s|us|µs|μs|ns)")


def parse_duration(text: str) -> Duration:
    """Go's time.ParseDuration (what CEL's ``duration()`` reads)."""
    body = text
    sign = 1
    if body[:1] in "+-" and body:
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return Duration(0)
    if not body:
        raise CelError(f'invalid duration "{text}"')
    total = 0
    at = 0
    while at < len(body):
        found = _DURATION_PART.match(body, at)
        if found is None or found[1] in ("", "."):
            raise CelError(f'time: invalid duration "{text}"')
        whole, _, fraction = found[1].partition(".")
        unit = _DURATION_UNIT[found[2]]
        total += int(whole or "0") * unit
        if fraction:
            total += int(fraction) * unit // 10 ** len(fraction)
        at = found.end()
    return Duration(sign * total)


def parse_timestamp(text: str) -> Timestamp:
    """An RFC 3339 timestamp (what CEL's ``timestamp()`` reads)."""
    found = re.fullmatch(
        r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})",
        text,
    )
    if found is None:
        raise CelError(f'cannot parse "{text}" as a timestamp')
    try:
        moment = datetime.datetime(
            int(found[1]),
            int(found[2]),
            int(found[3]),
            int(found[4]),
            int(found[5]),
            int(found[6]),
        )
    except ValueError:
        raise CelError(f'cannot parse "{text}" as a timestamp') from None
    seconds = (moment - datetime.datetime(1970, 1, 1)) // datetime.timedelta(seconds=1)
    zone = found[8]
    if zone not in ("Z", "z"):
        offset = int(zone[1:3]) * 3600 + int(zone[4:6]) * 60
        seconds -= offset if zone[0] == "+" else -offset
    fraction = (found[7] or ".")[1:]
    nanos = int(fraction.ljust(9, "0")) if fraction else 0
    return Timestamp(seconds * 10**9 + nanos)


def _zone_offset(zone: str, seconds: int) -> int:
    """The offset in seconds of a CEL time zone argument (``UTC``, ``+01:00``,
    ``01:00``, an IANA name) at an instant."""
    found = re.fullmatch(r"([+-]?)(\d{2}):(\d{2})", zone)
    if found:
        offset = int(found[2]) * 3600 + int(found[3]) * 60
        return -offset if found[1] == "-" else offset
    if zone == "UTC":
        return 0
    try:
        info = zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError) as exc:  # (no such zone here)
        raise Unsupported(f"time zone {zone}") from exc
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    delta = moment.astimezone(info).utcoffset()
    return int(delta.total_seconds()) if delta is not None else 0


def _timestamp_part(stamp: Timestamp, part: str, zone: str | None = None) -> int:
    seconds, rest = divmod(stamp.nanos, 10**9)
    if zone is not None:
        seconds += _zone_offset(zone, seconds)
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=seconds)
    return {
        "getFullYear": moment.year,
        "getMonth": moment.month - 1,
        "getDate": moment.day,
        "getDayOfMonth": moment.day - 1,
        "getDayOfYear": moment.timetuple().tm_yday - 1,
        "getDayOfWeek": (moment.weekday() + 1) % 7,
        "getHours": moment.hour,
        "getMinutes": moment.minute,
        "getSeconds": moment.second,
        "getMilliseconds": rest // 10**6,
    }[part]


def _duration_part(duration: Duration, part: str) -> int:
    nanos = duration.nanos
    unit = {
        "getHours": 3600 * 10**9,
        "getMinutes": 60 * 10**9,
        "getSeconds": 10**9,
        "getMilliseconds": 10**6,
    }[part]
    return _truncated_divide(nanos, unit)


def _code_points(text: str, index: int, name: str) -> None:
    if index < 0 or index > len(text):
        raise CelError(f"index out of range: {index}")


def _substring(text: str, start: int, end: int | None = None) -> str:
    end = len(text) if end is None else end
    if start < 0 or start > len(text):
        raise CelError(f"index out of range: {start}")
    if end < 0 or end > len(text):
        raise CelError(f"index out of range: {end}")
    if start > end:
        raise CelError(f"invalid substring range. start: {start}, end: {end}")
    return text[start:end]


def _index_of(text: str, sub: str, offset: int = 0, last: bool = False) -> int:
    if last:
        offset = len(text) if offset is None else offset
    if offset < 0 or offset > len(text):
        raise CelError(f"index out of range: {offset}")
    if last:
        if sub == "":
            return offset
        return text.rfind(sub, 0, offset + len(sub))
    if sub == "":
        return offset
    return text.find(sub, offset)


def _split(text: str, sep: str, limit: int = -1) -> list[str]:
    if limit == 0:
        return []
    if sep == "":
        chars = list(text)
        if limit > 0 and len(chars) > limit:
            return [*chars[: limit - 1], "".join(chars[limit - 1 :])]
        return chars
    if limit < 0:
        return text.split(sep)
    return text.split(sep, limit - 1)


def _replace(text: str, old: str, new: str, limit: int = -1) -> str:
    if limit == 0:
        return text
    if old == "":
        # Go's strings.Replace: the new text before each code point and at the end
        pieces = list(text)
        out = []
        count = 0
        for piece in [*pieces, ""]:
            if limit < 0 or count < limit:
                out.append(new)
                count += 1
            out.append(piece)
        return "".join(out)
    return text.replace(old, new, limit)


_TRIM_SPACE: Final = "".join(
    chr(c)
    for c in (
        0x09,
        0x0A,
        0x0B,
        0x0C,
        0x0D,
        0x20,
        0x85,
        0xA0,
        0x1680,
        0x2000,
        0x2001,
        0x2002,
        0x2003,
        0x2004,
        0x2005,
        0x2006,
        0x2007,
        0x2008,
        0x2009,
        0x200A,
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
    )
)


_FORMAT_VERB = re.compile(r"%(?:\.(\d+))?([sdfeboxX%])")


def _format_list_item(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(_format_list_item(v) for v in value) + "]"
    if isinstance(value, dict):
        items = sorted((_format_list_item(k), _format_list_item(v)) for k, v in value.items())
        return "{" + ", ".join(f"{k}:{v}" for k, v in items) + "}"
    if value is None:
        return "null"
    return _to_string(value)


def _format(template: str, args: Any) -> str:
    """The strings extension's ``format`` for the verbs rules use (``%s``, ``%d``,
    ``%f`` with a precision, ``%e``, ``%b``, ``%o``, ``%x``, ``%X``, ``%%``)."""
    if not isinstance(args, list):
        raise _overload("format")
    out: list[str] = []
    at = 0
    used = 0
    for found in _FORMAT_VERB.finditer(template):
        out.append(template[at : found.start()])
        at = found.end()
        precision, verb = found[1], found[2]
        if verb == "%":
            out.append("%")
            continue
        if used >= len(args):
            raise CelError(f"index {used} out of range")
        value = args[used]
        used += 1
        if verb == "s":
            out.append(_format_list_item(value))
        elif verb == "d":
            if not _is_number(value) or isinstance(value, float):
                raise Unsupported("format %d of a non-integer")
            out.append(str(int(value)))
        elif verb in "fe":
            if not _is_number(value):
                raise Unsupported(f"format %{verb}")
            digits = 6 if precision is None else int(precision)
            if verb == "f":
                out.append(f"{float(value):.{digits}f}")
            else:
                raise Unsupported("format %e")  # (cel-go writes "× 10⁰⁰")
        else:
            if not _is_int(value) and not isinstance(value, Uint):
                raise Unsupported(f"format %{verb}")
            number = int(value)
            text = format(abs(number), {"b": "b", "o": "o", "x": "x", "X": "X"}[verb])
            out.append(("-" if number < 0 else "") + text)
    out.append(template[at:])
    return "".join(out)


def _lower_ascii(text: str) -> str:
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in text)


def _upper_ascii(text: str) -> str:
    return "".join(c.upper() if "a" <= c <= "z" else c for c in text)


def _join(items: Any, sep: str = "") -> str:
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise _overload("join")
    return sep.join(items)


def _comparable_list(items: Any, name: str) -> list[Any]:
    if not isinstance(items, list):
        raise _overload(name)
    return items


def _is_sorted(items: list[Any]) -> bool:
    return all(_compare(items[i], items[i + 1]) <= 0 for i in range(len(items) - 1))


def _sum(items: list[Any]) -> Any:
    if not items:
        return 0
    total = items[0]
    for item in items[1:]:
        total = _add(total, item)
    return total


def _extreme(items: list[Any], name: str, sign: int) -> Any:
    if not items:
        raise CelError(f"{name} called on empty list")
    best = items[0]
    for item in items[1:]:
        if _compare(item, best) * sign > 0:
            best = item
    return best


def _list_index(items: list[Any], wanted: Any, last: bool) -> int:
    order = range(len(items) - 1, -1, -1) if last else range(len(items))
    for i in order:
        if _equal(items[i], wanted):
            return i
    return -1


def _url(text: str) -> urllib.parse.SplitResult:
    if not _is_url(text):
        raise CelError(f"URL parse error during conversion from string: {text}")
    return urllib.parse.urlsplit(text)


def _is_url(text: str) -> bool:
    """Go's url.ParseRequestURI, roughly: an absolute URL (a scheme; a host with a
    numeric port if any) or an absolute path; no control characters."""
    if not text or any(ord(c) < 0x20 or c == "\x7f" for c in text):
        return False
    if text.startswith("/"):
        return True
    scheme, colon, rest = text.partition(":")
    if not colon or not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        return False
    if rest.startswith("//"):
        host = re.split(r"[/?#]", rest[2:], maxsplit=1)[0].rpartition("@")[2]
        if host.startswith("["):
            close = host.find("]")
            if close < 0:
                return False
            port = host[close + 1 :]
            return port == "" or bool(re.fullmatch(r":[0-9]*", port))
        if host.count(":") > 1:
            return False
        _, has_port, port_text = host.partition(":")
        return not has_port or port_text.isdigit() or port_text == ""
    return True


class _URL:
    __slots__ = ("parts",)

    def __init__(self, parts: urllib.parse.SplitResult) -> None:
        self.parts = parts


def _url_part(url: _URL, name: str) -> Any:
    parts = url.parts
    if name == "getScheme":
        return parts.scheme
    if name == "getHost":
        return parts.netloc.rpartition("@")[2]
    if name == "getHostname":
        host = parts.netloc.rpartition("@")[2]
        if host.startswith("["):
            return host[1 : host.find("]")]
        return host.partition(":")[0]
    if name == "getPort":
        host = parts.netloc.rpartition("@")[2]
        if host.startswith("["):
            tail = host[host.find("]") + 1 :]
            return tail[1:] if tail.startswith(":") else ""
        return host.partition(":")[2]
    if name == "getEscapedPath":
        return urllib.parse.quote(parts.path, safe="/!$&'()*+,;=:@~%")
    if name == "getQuery":
        out: dict[str, list[str]] = {}
        for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
            out.setdefault(key, []).append(value)
        return out
    raise Unsupported(name)


def _optional_method(name: str, target: Optional, args: list[Any]) -> Any:
    if name == "hasValue" and not args:
        return target.value is not _EMPTY
    if name == "value" and not args:
        if target.value is _EMPTY:
            raise CelError("optional.none() dereference")
        return target.value
    if name == "orValue" and len(args) == 1:
        return target.value if target.value is not _EMPTY else args[0]
    if name == "or" and len(args) == 1:
        return target if target.value is not _EMPTY else args[0]
    raise Unsupported(name)


def _method(name: str, target: Any, args: list[Any]) -> Any:
    n = len(args)
    if isinstance(target, Optional):
        return _optional_method(name, target, args)
    if isinstance(target, _URL) and n == 0:
        return _url_part(target, name)
    if isinstance(target, Quantity):
        return _quantity_method(name, target, args)
    if isinstance(target, str):
        if name == "size" and n == 0:
            return len(target)
        if name == "matches" and n == 1 and isinstance(args[0], str):
            return _regex(args[0]).search(target) is not None
        if name == "find" and n == 1 and isinstance(args[0], str):
            found = _regex(args[0]).search(target)
            return found.group() if found else ""
        if name == "findAll" and n in (1, 2) and isinstance(args[0], str):
            found_all = [m.group() for m in _regex(args[0]).finditer(target)]
            if n == 2:
                limit = args[1]
                if not _is_int(limit):
                    raise _overload("findAll")
                return found_all if limit < 0 else found_all[:limit]
            return found_all
        if n == 1 and isinstance(args[0], str):
            if name == "startsWith":
                return target.startswith(args[0])
            if name == "endsWith":
                return target.endswith(args[0])
            if name == "contains":
                return args[0] in target
        if name == "format" and n == 1:
            return _format(target, args[0])
        if name == "lowerAscii" and n == 0:
            return _lower_ascii(target)
        if name == "upperAscii" and n == 0:
            return _upper_ascii(target)
        if name == "trim" and n == 0:
            return target.strip(_TRIM_SPACE)
        if name == "charAt" and n == 1 and _is_int(args[0]):
            index = args[0]
            if index < 0 or index > len(target):
                raise CelError(f"index out of range: {index}")
            return target[index] if index < len(target) else ""
        if name in ("indexOf", "lastIndexOf") and n in (1, 2) and isinstance(args[0], str):
            if n == 2 and not _is_int(args[1]):
                raise _overload(name)
            if name == "indexOf":
                return _index_of(target, args[0], args[1] if n == 2 else 0)
            return _index_of(target, args[0], args[1] if n == 2 else len(target), last=True)
        if name == "substring" and n in (1, 2) and all(_is_int(a) for a in args):
            return _substring(target, *args)
        if name == "split" and n in (1, 2) and isinstance(args[0], str):
            if n == 2 and not _is_int(args[1]):
                raise _overload(name)
            return _split(target, *args)
        if (
            name == "replace"
            and n in (2, 3)
            and isinstance(args[0], str)
            and isinstance(args[1], str)
        ):
            if n == 3 and not _is_int(args[2]):
                raise _overload(name)
            return _replace(target, *args)
        raise Unsupported(name)
    if isinstance(target, (bytes, dict)) and name == "size" and n == 0:
        return len(target)
    if isinstance(target, list):
        if name == "size" and n == 0:
            return len(target)
        if name == "join" and n in (0, 1):
            if n == 1 and not isinstance(args[0], str):
                raise _overload(name)
            return _join(target, *args)
        if name == "isSorted" and n == 0:
            return _is_sorted(target)
        if name == "sum" and n == 0:
            return _sum(target)
        if name == "min" and n == 0:
            return _extreme(target, "min", -1)
        if name == "max" and n == 0:
            return _extreme(target, "max", 1)
        if name in ("indexOf", "lastIndexOf") and n == 1:
            return _list_index(target, args[0], name == "lastIndexOf")
        raise Unsupported(name)
    if (
        isinstance(target, Timestamp)
        and (n == 0 or (n == 1 and isinstance(args[0], str)))
        and name.startswith("get")
    ):
        try:
            return _timestamp_part(target, name, args[0] if args else None)
        except KeyError:
            raise Unsupported(name) from None
    if isinstance(target, Duration) and n == 0 and name.startswith("get"):
        try:
            return _duration_part(target, name)
        except KeyError:
            raise Unsupported(name) from None
    if target is None or isinstance(target, (bool, int, float, bytes, dict)):
        raise Unsupported(name)  # (a type checker refuses the call)
    raise Unsupported(name)


def _function(name: str, args: list[Any]) -> Any:
    n = len(args)
    if n == 1:
        value = args[0]
        if name == "size":
            return _size(value)
        if name == "int":
            return _to_int(value)
        if name == "uint":
            return _to_uint(value)
        if name == "double":
            return _to_double(value)
        if name == "string":
            return _to_string(value)
        if name == "bool":
            return _to_bool(value)
        if name == "bytes":
            if isinstance(value, bytes):
                return value
            if isinstance(value, str):
                return value.encode()
            raise _overload("bytes")
        if name == "dyn":
            return value
        if name == "type":
            return CelType(_type_name(value))
        if name == "duration":
            if isinstance(value, Duration):
                return value
            if isinstance(value, str):
                return parse_duration(value)
            raise _overload("duration")
        if name == "timestamp":
            if isinstance(value, Timestamp):
                return value
            if isinstance(value, str):
                return parse_timestamp(value)
            if _is_int(value):
                return Timestamp(value * 10**9)
            raise _overload("timestamp")
        if name == "quantity" and isinstance(value, str):
            return parse_quantity(value)
        if name == "isQuantity" and isinstance(value, str):
            try:
                parse_quantity(value)
            except CelError:
                return False
            return True
        if name == "isURL" and isinstance(value, str):
            return _is_url(value)
        if name == "url" and isinstance(value, str):
            return _URL(_url(value))
        if name == "optional.of":
            return Optional(value)
        if name == "optional.ofNonZeroValue":
            return Optional(_EMPTY if _is_zero(value) else value)
    if name == "optional.none" and n == 0:
        return Optional(_EMPTY)
    if n == 2:
        first, second = args
        if name == "matches" and isinstance(first, str) and isinstance(second, str):
            return _regex(second).search(first) is not None
        if name in ("sets.contains", "sets.intersects", "sets.equivalent"):
            if not isinstance(first, list) or not isinstance(second, list):
                raise _overload(name)
            if name == "sets.contains":
                return all(any(_equal(x, y) for y in first) for x in second)
            if name == "sets.intersects":
                return any(any(_equal(x, y) for y in first) for x in second)
            return all(any(_equal(x, y) for y in first) for x in second) and all(
                any(_equal(x, y) for y in second) for x in first
            )
    raise Unsupported(name)


def _is_zero(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, (bool, int, float, str, bytes, list, dict)):
        return not value
    if isinstance(value, Duration):
        return value.nanos == 0
    if isinstance(value, Timestamp):  # (Go's zero time: the first instant of year 1)
        return value.nanos == -62135596800 * 10**9
    return False


def _qualified_name(tree: Any) -> str | None:
    """``a.b.c`` as a dotted name when it is made of identifiers only."""
    if tree[0] == "id":
        return str(tree[1])
    if tree[0] == "sel":
        head = _qualified_name(tree[1])
        return None if head is None else f"{head}.{tree[2]}"
    return None


def _call(tree: Any, env: dict[str, Any]) -> Any:
    _, name, target_tree, arg_trees = tree
    if target_tree is not None:
        namespace = _qualified_name(target_tree)
        if namespace in ("optional", "sets", "strings") and namespace not in env:
            return _function(f"{namespace}.{name}", [_eval(a, env) for a in arg_trees])
        target = _eval(target_tree, env)
        return _method(name, target, [_eval(a, env) for a in arg_trees])
    if name in ("duration", "timestamp") and len(arg_trees) == 1 and arg_trees[0][0] == "lit":
        try:
            return _function(name, [arg_trees[0][1]])
        except CelError as exc:  # (a real server checks literals when it compiles)
            raise Unsupported(str(exc)) from None
    return _function(name, [_eval(a, env) for a in arg_trees])
