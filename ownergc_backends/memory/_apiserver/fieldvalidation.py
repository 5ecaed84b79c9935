"""Server-side field validation: the ``fieldValidation`` query parameter of a write.

kube-apiserver decodes a create or update body into its kind's type (built-in
kinds) or prunes it by its structural schema (custom kinds); either way a
field the schema does not know is dropped from what is stored, and
``fieldValidation`` says what the client hears of it: ``Strict`` refuses the
request, ``Warn`` (the default) sends one ``Warning`` header per field,
``Ignore`` says nothing. A key given twice in the JSON body is reported the
same way (``duplicate field "spec.paused"``; the last value wins). kubectl
1.37 sends ``fieldValidation=Strict`` when the published OpenAPI names the
parameter, as ours does.

* POST and PUT: problems in the body's order; ``Strict`` is a 400
  (``<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding
  error: unknown field "spec.foo"``).
* PATCH (JSON, merge, strategic merge): the patch's own duplicate keys (for a
  JSON patch, unknown and duplicate keys of its operations: ``json patch
  unknown field "[0].foo"``) first, then the unknown fields of the patched
  object, sorted; ``Strict`` is a 422 on the field ``patch``.
* Server-side apply checks its body against the schema in the field manager.

The schema is the one the OpenAPI documents publish: a built-in kind's
definition from the recorded document, a custom kind's ``openAPIV3Schema``
(structural: an object schema without ``properties`` keeps no fields unless
it says ``x-kubernetes-preserve-unknown-fields``). Protobuf bodies cannot
carry an unknown field and are not checked.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any, Final

from ownergc.errors import BadRequest
from ownergc.protocols import APIResource, JSONDict, PatchType

from .._fieldmanager.schema import version_schema
from .._objects import _invalid
from .._openapi import builtin_v2
from .._patch import go_json_type
from .._protobuf import PROTOBUF
from .._validation import FieldError
from ..store import InMemoryStore
from .context import RequestContext

__all__ = ["FieldValidation", "go_value", "loads_tracking_duplicates", "unknown_fields"]

_REF: Final = "#/definitions/"
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_MODES: Final = frozenset({"Strict", "Warn", "Ignore"})
#: The keys a JSON patch operation may have (RFC 6902).
_PATCH_OP_KEYS: Final = frozenset({"op", "path", "value", "from"})


def _resolve(schema: Any, definitions: JSONDict) -> Any:
    """A schema with its ``$ref`` (or a lone ``allOf`` reference) followed."""
    for _ in range(32):
        if not isinstance(schema, dict):
            return schema
        ref = schema.get("$ref")
        if ref is None and len(schema.get("allOf") or []) == 1:
            ref = schema["allOf"][0].get("$ref")
        if not isinstance(ref, str) or not ref.startswith(_REF):
            return schema
        schema = definitions.get(ref[len(_REF) :])
    return schema


def _open(schema: JSONDict, structural: bool) -> bool:
    """True if the schema accepts any field below it.

    In the OpenAPI v2 document of built-in kinds a schema without properties is
    free-form (``RawExtension``, ``JSON``); in a CRD's structural schema it is an
    object that keeps no field (pruning drops them all) unless it says
    ``x-kubernetes-preserve-unknown-fields``."""
    if schema.get("x-kubernetes-preserve-unknown-fields") or schema.get(
        "x-kubernetes-int-or-string"
    ):
        return True
    if "properties" in schema or "additionalProperties" in schema:
        return False
    if structural:
        return schema.get("type") != "object" and not schema.get("x-kubernetes-embedded-resource")
    return True


def _problems(
    value: Any,
    schema: Any,
    definitions: JSONDict,
    duplicates: dict[int, list[str]],
    *,
    structural: bool,
    prune: bool,
) -> list[str]:
    """Unknown (and, where ``duplicates`` tells, duplicated) fields of ``value`` in
    document order, as ``unknown field "p"`` / ``duplicate field "p"``; unknown
    ones are deleted from ``value`` when ``prune``."""
    out: list[str] = []
    _walk(value, schema, definitions, duplicates, structural, prune, "", out)
    return out


def _walk(
    value: Any,
    schema: Any,
    definitions: JSONDict,
    duplicates: dict[int, list[str]],
    structural: bool,
    prune: bool,
    path: str,
    out: list[str],
) -> None:
    """:func:`_problems` below ``path``, appended to ``out`` (a plain recursion, not a
    generator per level: this walks every object a PATCH writes)."""
    schema = _resolve(schema, definitions)
    if isinstance(value, list):
        items = schema.get("items") if isinstance(schema, dict) else None
        for index, item in enumerate(value):
            if isinstance(item, (dict, list)):  # a scalar has no fields
                _walk(
                    item, items, definitions, duplicates, structural, prune, f"{path}[{index}]", out
                )
        return
    if not isinstance(value, dict):
        return
    twice = duplicates.get(id(value), ())
    closed = isinstance(schema, dict) and not _open(schema, structural)
    properties = (schema.get("properties") or {}) if closed else {}
    extra = schema.get("additionalProperties") if closed else None
    embedded = closed and schema.get("x-kubernetes-embedded-resource")
    unknown: list[str] = []
    for key, item in value.items():
        if not closed and not twice and not isinstance(item, (dict, list)):
            continue  # known (nothing below is checked), not repeated, no fields below
        where = f"{path}.{key}" if path else key
        sub: Any = None
        known = True
        # ObjectMeta comes from the built-in document, free-form parts and all
        # (``fieldsV1``), whatever the kind's own schema is.
        inner_structural = structural
        if not closed:
            sub = None
        elif key in properties:
            sub = properties[key]
            if key == "metadata" and (not path or embedded):
                sub = {"$ref": _REF + _OBJECT_META}
                inner_structural = False
        elif embedded and key in ("apiVersion", "kind", "metadata"):
            sub = {"$ref": _REF + _OBJECT_META} if key == "metadata" else None
            inner_structural = False
        elif isinstance(extra, dict):
            sub = extra
        elif extra is not True:
            known = False
        if not known:
            # A field both unknown and duplicated is reported once, as unknown.
            unknown.append(key)
            out.append(f'unknown field "{where}"')
            continue
        if key in twice:
            out.append(f'duplicate field "{where}"')
        if isinstance(item, (dict, list)):  # a scalar has no fields
            _walk(item, sub, definitions, duplicates, inner_structural, prune, where, out)
    if prune:
        for key in unknown:
            del value[key]


def unknown_fields(value: Any, schema: Any, definitions: JSONDict, path: str = "") -> Iterator[str]:
    """The paths (``spec.foo``, ``spec.containers[0].bar``) of fields ``schema`` lacks
    (a built-in kind's schema; nothing is changed)."""
    prefix = len('unknown field "')
    for problem in _problems(value, schema, definitions, {}, structural=False, prune=False):
        yield (f"{path}." if path else "") + problem[prefix:-1]


def loads_tracking_duplicates(data: bytes) -> tuple[Any, dict[int, list[str]]]:
    """JSON decoded as ``json.loads`` decodes it (the last of a repeated key wins),
    and which keys each object repeated (by the ``id`` of the decoded dict)."""
    duplicates: dict[int, list[str]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        twice: list[str] = []
        for key, item in items:
            if key in out and key not in twice:
                twice.append(key)
            out[key] = item
        if twice:
            duplicates[id(out)] = twice
        return out

    return json.loads(data, object_pairs_hook=pairs), duplicates


def go_value(value: Any) -> str:
    """``value`` printed as Go's ``%+v`` prints a decoded JSON value (the form
    kube-apiserver quotes a patch in): ``map[k:v]`` with sorted keys, ``[a b]``."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _json_patch_problems(document: Any, duplicates: dict[int, list[str]]) -> list[str]:
    """Unknown and repeated keys of a JSON patch's operations."""
    out: list[str] = []
    if not isinstance(document, list):
        return out
    for index, op in enumerate(document):
        if not isinstance(op, dict):
            continue
        twice = duplicates.get(id(op), ())
        for key in op:
            if key not in _PATCH_OP_KEYS:
                out.append(f'json patch unknown field "[{index}].{key}"')
            elif key in twice:
                out.append(f'json patch duplicate field "[{index}].{key}"')
    return out


def _patch_duplicates(
    value: Any, duplicates: dict[int, list[str]], path: str = ""
) -> Iterator[str]:
    """The repeated keys of a merge or strategic merge patch, in document order."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _patch_duplicates(item, duplicates, f"{path}[{index}]")
    elif isinstance(value, dict):
        twice = duplicates.get(id(value), ())
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if key in twice:
                yield f'duplicate field "{where}"'
            yield from _patch_duplicates(item, duplicates, where)


class FieldValidation:
    """Checks a write's body against its kind's schema, as its ``fieldValidation`` asks,
    and drops the fields the schema does not know, as the server's decoding does."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store
        self._by_gvk: dict[tuple[str, str, str], JSONDict] | None = None

    def _builtin_schema(self, resource: APIResource) -> JSONDict | None:
        if self._by_gvk is None:
            self._by_gvk = {}
            for schema in builtin_v2()["definitions"].values():
                for gvk in schema.get("x-kubernetes-group-version-kind") or []:
                    key = (gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", ""))
                    self._by_gvk[key] = schema
        return self._by_gvk.get((resource.group, resource.version, resource.kind))

    def _schema(self, resource: APIResource) -> tuple[JSONDict | None, bool]:
        """The kind's schema, and whether it is a CRD's structural one."""
        crd = self.store.crd_for(resource)
        if crd is None:
            return self._builtin_schema(resource), False
        schema = version_schema(crd, resource.version)
        if schema is None:
            return None, True
        # The apiserver always knows the object's own envelope.
        properties: JSONDict = {"apiVersion": {}, "kind": {}, "metadata": {}}
        properties.update(schema.get("properties") or {})
        return {**schema, "properties": properties}, True

    @staticmethod
    def mode(ctx: RequestContext) -> str:
        raw = ctx.request.param("fieldValidation") or "Warn"
        if raw not in _MODES:
            raise BadRequest(
                f'fieldValidation: Unsupported value: "{raw}": supported values: '
                f'"Ignore", "Strict", "Warn"',
                reason="BadRequest",
            )
        return raw

    @staticmethod
    def _found(
        kind_schema: tuple[JSONDict | None, bool],
        obj: Any,
        duplicates: dict[int, list[str]],
        *,
        report: bool,
    ) -> list[str]:
        schema, structural = kind_schema
        if schema is None or not isinstance(obj, dict):
            return []
        found = _problems(
            obj,
            schema,
            builtin_v2()["definitions"],
            duplicates if report else {},
            structural=structural,
            prune=True,
        )
        problems = list(found)
        return problems if report else []

    @staticmethod
    def _type_error(
        kind_schema: tuple[JSONDict | None, bool], resource: APIResource, obj: Any
    ) -> str | None:
        """A built-in kind's value its Go type cannot hold (the decoder refuses it
        whatever ``fieldValidation`` says); custom resources are checked by their
        schema's validation instead."""
        schema, structural = kind_schema
        if schema is None or structural:
            return None
        return type_error(obj, schema, builtin_v2()["definitions"], resource.kind)

    def check(self, ctx: RequestContext, resource: APIResource) -> None:
        """A POST or PUT: decode the JSON body once, drop unknown fields, report them as
        the mode asks (``Strict``: 400; ``Warn``: the request's warnings). The decoded
        body is left in ``ctx.decoded_body`` for the handler. Other methods: the mode is
        checked (a bad value is a 400 whatever the verb)."""
        request = ctx.request
        mode = self.mode(ctx)
        if request.method not in ("POST", "PUT"):
            return
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type not in ("", "application/json", "*/*") or content_type == PROTOBUF:
            return
        try:
            body, duplicates = loads_tracking_duplicates(request.body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return  # the handler answers the bad body
        kind_schema = self._schema(resource)  # once: both walks below read it
        wrong = self._type_error(kind_schema, resource, body)
        if wrong is not None:
            kind, version = resource.kind, resource.version
            raise BadRequest(
                f'{kind} in version "{version}" cannot be handled as a {kind}: {wrong}',
                reason="BadRequest",
            )
        problems = self._found(kind_schema, body, duplicates, report=mode != "Ignore")
        if problems and mode == "Strict":
            kind, version = resource.kind, resource.version
            raise BadRequest(
                f'{kind} in version "{version}" cannot be handled as a {kind}: '
                f"strict decoding error: {', '.join(problems)}",
                reason="BadRequest",
            )
        ctx.warnings.extend(problems)
        ctx.decoded_body = (body,)

    def patched(
        self,
        ctx: RequestContext,
        resource: APIResource,
        patch_type: PatchType,
        document: Any,
        result: JSONDict,
        *,
        first: bool = True,
    ) -> None:
        """After a patch was applied: drop the patched object's unknown fields and report
        the patch's problems as the mode asks (``Strict``: 422 on ``patch``). A patch
        applied again after a race (not ``first``) is not reported twice."""
        mode = self.mode(ctx)
        kind_schema = self._schema(resource)  # once: both walks below read it
        wrong = self._type_error(kind_schema, resource, result)
        if wrong is not None:
            shown = json.dumps(result, separators=(",", ":"))
            raise _invalid("", "", [FieldError("patch", "FieldValueInvalid", wrong, shown)])
        report = mode != "Ignore" and first
        problems: list[str] = []
        if report:
            try:
                tracked, duplicates = loads_tracking_duplicates(ctx.request.body)
            except (UnicodeDecodeError, json.JSONDecodeError):
                tracked, duplicates = None, {}
            if patch_type is PatchType.JSON:
                problems.extend(_json_patch_problems(tracked, duplicates))
            else:
                problems.extend(_patch_duplicates(tracked, duplicates))
        unknown = self._found(kind_schema, result, {}, report=report)
        problems.extend(sorted(unknown))
        if problems and mode == "Strict":
            shown = (
                json.dumps(result, separators=(",", ":"))
                if patch_type is not PatchType.STRATEGIC_MERGE
                else go_value(document)
            )
            detail = "strict decoding error: " + ", ".join(problems)
            raise _invalid("", "", [FieldError("patch", "FieldValueInvalid", detail, shown)])
        ctx.warnings.extend(problems)


def _json_duplicate_lines(text: str) -> list[str]:
    """Repeated keys of a JSON text, each as ``line N: key "k" already set in map``
    (N the line of the repeat), in document order: how the server's YAML reader
    reports a JSON apply body, which it reads as YAML."""
    found: list[str] = []
    stack: list[set[str] | None] = []  # a set per open object, None per open array
    line = 1
    i = 0
    n = len(text)
    expect_key = False
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
        elif ch == "{":
            stack.append(set())
            expect_key = True
        elif ch == "[":
            stack.append(None)
        elif ch in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif ch == ",":
            expect_key = bool(stack) and stack[-1] is not None
        elif ch == '"':
            start_line = line
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            token = text[i : j + 1]
            if expect_key and stack and stack[-1] is not None:
                key = json.loads(token)
                if key in stack[-1]:
                    found.append(f'line {start_line}: key "{key}" already set in map')
                stack[-1].add(key)
                expect_key = False
            line += token.count("\n")
            i = j
        i += 1
    return found


def duplicate_key_lines(text: str, *, is_json: bool) -> list[str]:
    """Repeated keys of an apply body (JSON, or YAML when PyYAML is installed) as the
    server's YAML reader words them."""
    if is_json:
        return _json_duplicate_lines(text)
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:  # pragma: no cover - pyyaml ships with the cli and test extras
        return []
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    found: list[tuple[int, str]] = []
    todo = [root] if root is not None else []
    while todo:
        node = todo.pop()
        if isinstance(node, yaml.MappingNode):
            seen: set[Any] = set()
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is not None:
                    if key in seen:
                        line = key_node.start_mark.line + 1
                        found.append((line, f'line {line}: key "{key}" already set in map'))
                    seen.add(key)
                todo.append(value_node)
        elif isinstance(node, yaml.SequenceNode):
            todo.extend(node.value)
    return [message for _, message in sorted(found)]


#: Types whose JSON form is not what their schema's ``type`` says (a Quantity
#: takes a number too, an IntOrString either), or that take anything.
_ANY_JSON: Final = frozenset(
    {
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        "io.k8s.apimachinery.pkg.runtime.RawExtension",
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1",
    }
)
_JSON_TYPES: Final = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


def _go_type(schema: Any, name: str | None, definitions: JSONDict) -> str:
    """The Go type a schema stands for, as Go's JSON decoder names it in its errors."""
    if name is not None:
        parts = name.split(".")
        return f"{parts[-2]}.{parts[-1]}" if len(parts) > 1 else name
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "string":
        return "string"
    if kind == "integer":
        return str(schema.get("format") or "int")
    if kind == "number":
        return "float64"
    if kind == "boolean":
        return "bool"
    if kind == "array":
        item, item_name = _deref(schema.get("items"), definitions)
        return "[]" + _go_type(item, item_name, definitions)
    extra = schema.get("additionalProperties") if isinstance(schema, dict) else None
    if isinstance(extra, dict):
        value, value_name = _deref(extra, definitions)
        return "map[string]" + _go_type(value, value_name, definitions)
    return "map[string]interface {}"


def _deref(schema: Any, definitions: JSONDict) -> tuple[Any, str | None]:
    """The schema a ``$ref`` (or a lone ``allOf``) points to, and its definition name."""
    name = None
    for _ in range(8):
        if not isinstance(schema, dict):
            break
        ref = schema.get("$ref")
        if ref is None and len(schema.get("allOf") or []) == 1:
            ref = schema["allOf"][0].get("$ref")
        if not isinstance(ref, str) or not ref.startswith(_REF):
            break
        name = ref[len(_REF) :]
        schema = definitions.get(name)
    return schema, name


def type_error(
    value: Any, schema: Any, definitions: JSONDict, struct: str, field: str = ""
) -> str | None:
    """The first value of a built-in kind's body whose JSON type its Go field cannot
    take, in Go's decoder's words (``json: cannot unmarshal number into Go struct
    field ConfigMap.data of type string``); None when every value fits. ``null``
    fits anything (Go decodes it as the zero value)."""
    if value is None:
        return None
    schema, name = _deref(schema, definitions)
    if not isinstance(schema, dict) or name in _ANY_JSON:
        return None
    if schema.get("format") == "int-or-string" or schema.get("x-kubernetes-int-or-string"):
        return None
    kind = schema.get("type")
    if kind is None and ("properties" in schema or "additionalProperties" in schema):
        kind = "object"
    allowed = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
    if allowed is not None:
        fits = isinstance(value, allowed) and (kind == "boolean" or not isinstance(value, bool))
        if fits and kind == "integer" and isinstance(value, float):
            fits = False
        if not fits:
            shown = go_json_type(value)
            if shown == "number" and kind == "integer":
                shown = f"number {json.dumps(value)}"
            where = f"{struct}.{field}" if field else struct
            return (
                f"json: cannot unmarshal {shown} into Go struct field {where} of type "
                f"{_go_type(schema, name, definitions)}"
            )
    inner = name.rsplit(".", 1)[-1] if name is not None else struct
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = properties.get(key)
            if sub is not None:
                found = type_error(
                    item, sub, definitions, inner, f"{field}.{key}" if field else key
                )
            elif isinstance(extra, dict):
                found = type_error(item, extra, definitions, inner, field)
            else:
                continue
            if found is not None:
                return found
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            found = type_error(item, schema["items"], definitions, inner, field)
            if found is not None:
                return found
    return None
