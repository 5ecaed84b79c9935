"""Server-side field validation: the ``fieldValidation`` query parameter of a write.

kube-apiserver decodes a create or update body against its kind's schema and
reports every field the schema does not know: ``Strict`` refuses the request
(400 BadRequest, ``<Kind> in version "<v>" cannot be handled as a <Kind>:
strict decoding error: unknown field "spec.foo"``), ``Warn`` (the default)
stores the object without the field and sends one ``Warning`` header per
field, ``Ignore`` says nothing. kubectl 1.37 sends ``fieldValidation=Strict``
when the published OpenAPI names the parameter, as ours does.

The schema is the one the OpenAPI documents publish: a built-in kind's
definition from the recorded document, a custom kind's ``openAPIV3Schema``.
Only POST and PUT bodies in JSON are checked (protobuf cannot carry an
unknown field); PATCH bodies are not.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

from ownergc.errors import BadRequest
from ownergc.protocols import APIResource, JSONDict

from .._fieldmanager.schema import version_schema
from .._openapi import builtin_v2
from .._protobuf import PROTOBUF
from ..store import InMemoryStore
from .context import RequestContext

__all__ = ["FieldValidation", "unknown_fields"]

_REF: Final = "#/definitions/"
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_MODES: Final = frozenset({"Strict", "Warn", "Ignore"})


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


def _open(schema: JSONDict) -> bool:
    """True if the schema accepts any field below it."""
    return bool(
        schema.get("x-kubernetes-preserve-unknown-fields")
        or schema.get("x-kubernetes-int-or-string")
        or ("properties" not in schema and "additionalProperties" not in schema)
    )


def unknown_fields(value: Any, schema: Any, definitions: JSONDict, path: str = "") -> Iterator[str]:
    """The paths (``spec.foo``, ``spec.containers[0].bar``) of fields ``schema`` lacks."""
    schema = _resolve(schema, definitions)
    if not isinstance(schema, dict):
        return
    if isinstance(value, list):
        items = schema.get("items")
        if items is not None:
            for index, item in enumerate(value):
                yield from unknown_fields(item, items, definitions, f"{path}[{index}]")
        return
    if not isinstance(value, dict) or _open(schema):
        return
    properties = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    embedded = schema.get("x-kubernetes-embedded-resource")
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if key in properties:
            sub = properties[key]
            if key == "metadata" and (not path or embedded):
                sub = {"$ref": _REF + _OBJECT_META}
            yield from unknown_fields(item, sub, definitions, where)
        elif embedded and key in ("apiVersion", "kind", "metadata"):
            continue
        elif isinstance(extra, dict):
            yield from unknown_fields(item, extra, definitions, where)
        elif extra is not True:
            yield where


class FieldValidation:
    """Checks a write's body against its kind's schema, as its ``fieldValidation`` asks."""

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

    def _schema(self, resource: APIResource) -> JSONDict | None:
        crd = self.store.crd_for(resource)
        if crd is None:
            return self._builtin_schema(resource)
        schema = version_schema(crd, resource.version)
        if schema is None:
            return None
        # The apiserver always knows the object's own envelope.
        properties: JSONDict = {"apiVersion": {}, "kind": {}, "metadata": {}}
        properties.update(schema.get("properties") or {})
        return {**schema, "properties": properties}

    def check(self, ctx: RequestContext, resource: APIResource) -> list[str]:
        """The warnings to send; raises BadRequest for ``Strict`` with unknown fields."""
        request = ctx.request
        if request.method not in ("POST", "PUT"):
            return []
        raw = request.param("fieldValidation") or "Warn"
        mode = raw if raw in _MODES else None
        if mode is None:
            raise BadRequest(
                f'fieldValidation: Unsupported value: "{raw}": supported values: '
                f'"Ignore", "Strict", "Warn"',
                reason="BadRequest",
            )
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if mode == "Ignore" or content_type == PROTOBUF:
            return []
        try:
            body = json.loads(request.body)
        except (UnicodeDecodeError, json.JSONDecodeError):
            return []  # the handler answers the bad body
        schema = self._schema(resource)
        if schema is None or not isinstance(body, dict):
            return []
        definitions = builtin_v2()["definitions"]
        unknown = [f'unknown field "{p}"' for p in unknown_fields(body, schema, definitions)]
        if unknown and mode == "Strict":
            kind, version = resource.kind, resource.version
            raise BadRequest(
                f'{kind} in version "{version}" cannot be handled as a {kind}: '
                f"strict decoding error: {', '.join(unknown)}",
                reason="BadRequest",
            )
        return unknown
