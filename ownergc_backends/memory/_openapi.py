"""The OpenAPI documents the apiserver publishes: ``/openapi/v2`` and ``/openapi/v3``.

kubectl reads them for ``explain`` and for client-side validation, and
server-side field validation and server-side apply read the same schema facts.
The built-in kinds come from ``_openapi_v2.json.gz``, not written by hand: the
paths (the served group versions and their operations) a real kube-apiserver
published (a v1.24 development build, recorded), moved to the group versions
kube-apiserver v1.30.0 serves, with v1.30.0's definitions;
``tools/gen_openapi_v130.py`` builds it. Each established CustomResourceDefinition adds
its served versions as the apiserver publishes them: a definition named by the
reversed group (``com.example.stable.v1.CronTab``) carrying
``x-kubernetes-group-version-kind``, with ``metadata`` a reference to
``ObjectMeta``, and the resource's paths.

OpenAPI v3 is published per group version (``/openapi/v3/apis/apps/v1``),
indexed by ``/openapi/v3`` with a content hash in each URL, as 1.27+ servers
do; the built-in v3 documents are derived from the v2 one (references moved to
``components/schemas``, body parameters to ``requestBody``). v2 drops what
Swagger 2.0 cannot say of a CRD's schema (``nullable``, ``oneOf`` / ``anyOf`` /
``not``), as the apiserver's v2 publishing does.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable, Iterable
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._fieldmanager.schema import openapi_document
from ._negotiation import _encode
from ._openapi_proto import encode_openapi_v2

__all__ = ["OpenAPIDocuments", "builtin_v2", "definition_name"]

_REF_V2: Final = "#/definitions/"
_REF_V3: Final = "#/components/schemas/"
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
#: Schema keys Swagger 2.0 cannot carry; the apiserver leaves them out of v2.
_NOT_IN_V2: Final = frozenset({"nullable", "oneOf", "anyOf", "not"})


def builtin_v2() -> JSONDict:
    """The built-in ``/openapi/v2`` (recorded paths, v1.30.0 definitions; do not mutate);
    the one loaded copy server-side apply reads its merge facts from too."""
    return dict(openapi_document())


def definition_name(group: str, version: str, kind: str) -> str:
    """The definition name the apiserver gives a custom kind: the group reversed, then
    version and kind (``stable.example.com`` → ``com.example.stable.v1.CronTab``)."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _refs_to_v3(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str) and item.startswith(_REF_V2):
                out[key] = _REF_V3 + item[len(_REF_V2) :]
            else:
                out[key] = _refs_to_v3(item)
        return out
    if isinstance(value, list):
        return [_refs_to_v3(item) for item in value]
    return value


def _refs_of(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str) and ref.startswith(_REF_V2):
            found.add(ref[len(_REF_V2) :])
        for item in value.values():
            _refs_of(item, found)
    elif isinstance(value, list):
        for item in value:
            _refs_of(item, found)


def _v2_schema(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _v2_schema(v) for k, v in schema.items() if k not in _NOT_IN_V2}
    if isinstance(schema, list):
        return [_v2_schema(v) for v in schema]
    return schema


def _group_version_of(path: str) -> str | None:
    """``api/v1`` / ``apis/apps/v1`` for a path under a group version, else None."""
    parts = path.strip("/").split("/")
    if parts[:1] == ["api"] and len(parts) >= 2:
        return "/".join(parts[:2])
    if parts[:1] == ["apis"] and len(parts) >= 3:
        return "/".join(parts[:3])
    return None


def _operation_to_v3(operation: JSONDict) -> JSONDict:
    out = {
        k: v
        for k, v in operation.items()
        if k not in ("consumes", "produces", "parameters", "responses", "schemes")
    }
    produces = operation.get("produces") or ["application/json"]
    consumes = operation.get("consumes") or ["application/json"]
    parameters = []
    for parameter in operation.get("parameters") or ():
        if parameter.get("in") == "body":
            out["requestBody"] = {
                "content": {mt: {"schema": parameter.get("schema", {})} for mt in consumes},
                "required": bool(parameter.get("required")),
            }
            continue
        converted = {
            k: v for k, v in parameter.items() if k in ("name", "in", "description", "required")
        }
        converted["schema"] = {
            k: v for k, v in parameter.items() if k in ("type", "uniqueItems", "format", "items")
        }
        parameters.append(converted)
    if parameters:
        out["parameters"] = parameters
    responses = {}
    for code, response in (operation.get("responses") or {}).items():
        converted = {"description": response.get("description", "")}
        if "schema" in response:
            converted["content"] = {mt: {"schema": response["schema"]} for mt in produces}
        responses[code] = converted
    out["responses"] = responses
    return out


def _path_to_v3(item: JSONDict) -> JSONDict:
    out: JSONDict = {}
    for key, value in item.items():
        if key == "parameters":
            out[key] = [
                {
                    **{
                        k: v for k, v in p.items() if k in ("name", "in", "description", "required")
                    },
                    "schema": {k: v for k, v in p.items() if k in ("type", "uniqueItems")},
                }
                for p in value
            ]
        elif isinstance(value, dict):
            out[key] = _operation_to_v3(value)
        else:
            out[key] = value
    return out


#: The write parameter 1.25+ servers publish (the recorded paths predate it);
#: kubectl sends ``fieldValidation=Strict`` only to servers whose document names it.
FIELD_VALIDATION_PARAMETER: Final[JSONDict] = {
    "uniqueItems": True,
    "type": "string",
    "description": (
        "fieldValidation instructs the server on how to handle objects in the request "
        "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: "
        "Ignore, Warn (the default), Strict."
    ),
    "name": "fieldValidation",
    "in": "query",
}


def _with_field_validation(item: JSONDict) -> JSONDict:
    """A path item whose writes (post, put, patch) take ``fieldValidation`` (a copy)."""
    out = dict(item)
    for verb in ("post", "put", "patch"):
        operation = item.get(verb)
        if not isinstance(operation, dict):
            continue
        parameters = list(operation.get("parameters") or [])
        if not any(p.get("name") == "fieldValidation" for p in parameters):
            parameters.append(FIELD_VALIDATION_PARAMETER)
        out[verb] = {**operation, "parameters": parameters}
    return out


class OpenAPIDocuments:
    """The published documents, rebuilt only when the set of CRDs changes."""

    def __init__(self, crds: Callable[[], Iterable[JSONDict]]) -> None:
        self._crds = crds
        self._key: str | None = None
        self._v2: JSONDict = {}
        self._v3: dict[str, JSONDict] = {}
        self._hashes: dict[str, str] = {}
        self._encoded: dict[str, bytes] = {}

    def v2(self) -> JSONDict:
        self._refresh()
        return self._v2

    def v2_json(self) -> bytes:
        """``v2()`` encoded, kept until the CRDs change (it is megabytes)."""
        self._refresh()
        if "json" not in self._encoded:
            self._encoded["json"] = _encode(self._v2)
        return self._encoded["json"]

    def v2_protobuf(self) -> bytes:
        """``v2()`` as gnostic protobuf (what kubectl <= 1.26 reads), kept likewise."""
        self._refresh()
        if "protobuf" not in self._encoded:
            self._encoded["protobuf"] = encode_openapi_v2(self._v2)
        return self._encoded["protobuf"]

    def v3_index(self) -> JSONDict:
        """``/openapi/v3``: every group version's document, by path, with its hash."""
        self._refresh()
        return {
            "paths": {
                gv: {"serverRelativeURL": f"/openapi/v3/{gv}?hash={self._hashes[gv]}"}
                for gv in sorted(self._v3)
            }
        }

    def v3(self, group_version: str) -> JSONDict | None:
        """``/openapi/v3/<group_version>`` (``api/v1``, ``apis/apps/v1``), or None."""
        self._refresh()
        return self._v3.get(group_version.strip("/"))

    def _refresh(self) -> None:
        crds = [crd for crd in self._crds() if _established(crd)]
        key = json.dumps(
            [
                (c.get("metadata", {}).get("uid"), c.get("metadata", {}).get("resourceVersion"))
                for c in crds
            ]
        )
        if key == self._key:
            return
        base = builtin_v2()
        definitions = dict(base["definitions"])
        paths = dict(base["paths"])
        v3_extra: dict[str, tuple[dict[str, JSONDict], dict[str, JSONDict]]] = {}
        for crd in crds:
            for name, schema, gv, crd_paths in _crd_entries(crd):
                definitions[name] = _v2_schema(schema)
                paths.update(crd_paths)
                v3_paths, v3_schemas = v3_extra.setdefault(gv, ({}, {}))
                v3_paths.update(crd_paths)
                v3_schemas[name] = schema
        paths = {path: _with_field_validation(item) for path, item in paths.items()}
        for gv, (v3_paths, v3_schemas) in v3_extra.items():
            v3_extra[gv] = (
                {path: _with_field_validation(item) for path, item in v3_paths.items()},
                v3_schemas,
            )
        self._v2 = {**base, "paths": paths, "definitions": definitions}
        self._v3 = self._build_v3({**base, "paths": paths}, v3_extra)
        self._hashes = {
            gv: hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest().upper()
            for gv, doc in self._v3.items()
        }
        self._encoded = {}
        self._key = key

    @staticmethod
    def _build_v3(
        base: JSONDict, extra: dict[str, tuple[dict[str, JSONDict], dict[str, JSONDict]]]
    ) -> dict[str, JSONDict]:
        by_gv: dict[str, dict[str, JSONDict]] = {}
        for path, item in base["paths"].items():
            gv = _group_version_of(path)
            if gv is not None:
                by_gv.setdefault(gv, {})[path] = item
        for gv, (crd_paths, _schemas) in extra.items():
            by_gv.setdefault(gv, {}).update(crd_paths)
        documents: dict[str, JSONDict] = {}
        definitions = base["definitions"]
        for gv, gv_paths in by_gv.items():
            crd_schemas = extra.get(gv, ({}, {}))[1]
            needed: set[str] = set()
            _refs_of(gv_paths, needed)
            _refs_of(list(crd_schemas.values()), needed)
            schemas: dict[str, Any] = {}
            pending = sorted(needed)
            while pending:
                name = pending.pop()
                if name in schemas:
                    continue
                schema = crd_schemas.get(name) or definitions.get(name)
                if schema is None:
                    continue
                schemas[name] = schema
                more: set[str] = set()
                _refs_of(schema, more)
                pending.extend(more - schemas.keys())
            documents[gv] = {
                "openapi": "3.0.0",
                "info": dict(base.get("info") or {"title": "Kubernetes", "version": "v0.0.0"}),
                "paths": _refs_to_v3({p: _path_to_v3(i) for p, i in sorted(gv_paths.items())}),
                "components": {"schemas": _refs_to_v3(dict(sorted(schemas.items())))},
            }
        return documents


def _established(crd: JSONDict) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def _crd_entries(crd: JSONDict) -> Iterable[tuple[str, JSONDict, str, dict[str, JSONDict]]]:
    """(definition name, schema, group version path, paths) per served version of a CRD."""
    spec = crd.get("spec") or {}
    group = str(spec.get("group", ""))
    names = spec.get("names") or {}
    kind, plural = str(names.get("kind", "")), str(names.get("plural", ""))
    namespaced = spec.get("scope") == "Namespaced"
    for version in spec.get("versions") or ():
        if not version.get("served"):
            continue
        name = str(version.get("name", ""))
        raw = ((version.get("schema") or {}).get("openAPIV3Schema")) or {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        }
        schema: JSONDict = copy.deepcopy(raw)
        properties = schema.setdefault("properties", {})
        properties["apiVersion"] = {
            "type": "string",
            "description": (
                "APIVersion defines the versioned schema of this representation of an object."
            ),
        }
        properties["kind"] = {
            "type": "string",
            "description": (
                "Kind is a string value representing the REST resource this object represents."
            ),
        }
        properties["metadata"] = {"$ref": _REF_V2 + _OBJECT_META}
        schema["x-kubernetes-group-version-kind"] = [
            {"group": group, "version": name, "kind": kind}
        ]
        definition = definition_name(group, name, kind)
        ref = {"$ref": _REF_V2 + definition}
        base = f"/apis/{group}/{name}"
        collection = (
            f"{base}/namespaces/{{namespace}}/{plural}" if namespaced else f"{base}/{plural}"
        )
        action: JSONDict = {
            "x-kubernetes-group-version-kind": {"group": group, "version": name, "kind": kind}
        }
        body: list[JSONDict] = [{"name": "body", "in": "body", "required": True, "schema": ref}]
        ok: JSONDict = {"200": {"description": "OK", "schema": ref}}
        paths: dict[str, JSONDict] = {
            collection: {
                "get": {
                    **action,
                    "operationId": f"list{kind}",
                    "x-kubernetes-action": "list",
                    "produces": ["application/json"],
                    "responses": ok,
                },
                "post": {
                    **action,
                    "operationId": f"create{kind}",
                    "x-kubernetes-action": "post",
                    "parameters": body,
                    "produces": ["application/json"],
                    "responses": {**ok, "201": {"description": "Created", "schema": ref}},
                },
            },
            f"{collection}/{{name}}": {
                verb: {
                    **action,
                    "operationId": f"{verb}{kind}",
                    "x-kubernetes-action": action_name,
                    "produces": ["application/json"],
                    "responses": ok,
                    **({"parameters": body} if verb in ("put", "patch") else {}),
                }
                for verb, action_name in (
                    ("get", "get"),
                    ("put", "put"),
                    ("patch", "patch"),
                    ("delete", "delete"),
                )
            },
        }
        yield definition, schema, f"apis/{group}/{name}", paths
