"""The merge facts of a kind: which maps and lists merge, and how.

Server-side apply and strategic merge patch need to know, for every field,
whether it is a scalar, a struct (named fields), a map (granular or atomic)
or a list (atomic, set, or map keyed by some fields). The apiserver reads
these from its OpenAPI models; built-in kinds here read them from the
``/openapi/v2`` document shipped with the package (``memory/_openapi_v2.json.gz``,
kube-apiserver v1.30.0's definitions, loaded on first use), custom resources from their
CRD's ``openAPIV3Schema``.

Rules, as the server's conversion of OpenAPI to merge types applies them:

- ``x-kubernetes-list-type`` names the list kind; without it a list with
  ``x-kubernetes-patch-strategy: merge`` is a map list keyed by
  ``x-kubernetes-patch-merge-key`` (a set if it has no key), any other list
  is atomic;
- ``x-kubernetes-map-type: atomic`` makes a map or struct atomic;
- an object with neither properties nor additionalProperties (and anything
  with ``x-kubernetes-preserve-unknown-fields``) is *untyped*: its maps
  merge key by key and its lists are atomic.

:class:`Node` also keeps ``patch_strategy`` / ``patch_merge_key`` so strategic
merge patch can read the same facts (see :func:`strategic_list_facts`).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any, Final, Literal

__all__ = [
    "KEY_FIELD_DEFAULTS",
    "Node",
    "SchemaError",
    "builtin_schema",
    "crd_schema",
    "crd_version_schema",
    "openapi_document",
    "strategic_list_facts",
    "strategic_merge_keys",
    "untyped",
    "version_schema",
]

NodeKind = Literal["scalar", "struct", "map", "list", "untyped"]
ListType = Literal["atomic", "set", "map"]

#: One packaged copy, shared with the published documents (``memory/_openapi.py``).
_OPENAPI_RESOURCE = "_openapi_v2.json.gz"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"

#: Key fields of map lists that the server fills in when an item omits them.
#: The served v2 document (1.24 as 1.30) carries no ``default`` values, but the server's
#: own models do for these (observed: an applied container port without a
#: protocol is owned as ``k:{"containerPort":80,"protocol":"TCP"}``).
KEY_FIELD_DEFAULTS: Mapping[tuple[str, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.EndpointPort", "protocol"): "TCP",
    ("io.k8s.api.discovery.v1.EndpointPort", "protocol"): "TCP",
}


class SchemaError(ValueError):
    """A schema document that cannot be read as merge facts."""


@dataclass(eq=False)
class Node:
    """One type in the merge model; children are resolved on first access."""

    kind: NodeKind
    atomic: bool = False
    list_type: ListType = "atomic"
    keys: tuple[str, ...] = ()
    key_defaults: Mapping[str, Any] = field(default_factory=dict)
    patch_strategy: str = ""
    patch_merge_key: str = ""
    #: Top-level fields a new object of this kind already holds empty (a
    #: built-in kind's ``spec``/``status`` are Go structs, never absent), so
    #: a create does not record them as added.
    zero_fields: tuple[str, ...] = ()
    _fields: Mapping[str, Callable[[], Node]] = field(default_factory=dict, repr=False)
    _values: Callable[[], Node] | None = field(default=None, repr=False)
    _items: Callable[[], Node] | None = field(default=None, repr=False)

    @property
    def field_names(self) -> frozenset[str]:
        """Names of a struct's declared fields."""
        return frozenset(self._fields)

    def child(self, name: str) -> Node:
        """The type of a struct field or map value (untyped when unknown)."""
        make = self._fields.get(name)
        if make is not None:
            return make()
        if self._values is not None:
            return self._values()
        return untyped()

    def items(self) -> Node:
        """The type of a list's items."""
        return self._items() if self._items is not None else untyped()

    @property
    def takes_any_key(self) -> bool:
        """True when keys beyond the declared fields are allowed (a map's values)."""
        return self._values is not None

    def is_named_field(self, name: str) -> bool:
        """True when ``name`` is a declared field of this struct (not a map key)."""
        return name in self._fields


@lru_cache(maxsize=1)
def untyped() -> Node:
    """The type of a value with no schema: maps merge key by key, lists are atomic."""
    return Node(kind="untyped")


@lru_cache(maxsize=1)
def _scalar() -> Node:
    return Node(kind="scalar")


def _lazy(value: Node) -> Callable[[], Node]:
    return lambda: value


class _Converter:
    """Builds :class:`Node` trees from OpenAPI schema objects (v2 or v3)."""

    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self._definitions = definitions
        self._by_ref: dict[str, Node] = {}

    def ref(self, name: str) -> Node:
        node = self._by_ref.get(name)
        if node is None:
            spec = self._definitions.get(name)
            if spec is None:
                raise SchemaError(f"unknown definition {name!r}")
            node = self.convert(spec, name)
            self._by_ref[name] = node
        return node

    def _thunk(self, spec: Any, name: str = "") -> Callable[[], Node]:
        cache: list[Node] = []

        def make() -> Node:
            if not cache:
                cache.append(self.convert(spec, name))
            return cache[0]

        return make

    def convert(self, spec: Any, name: str = "") -> Node:
        if not isinstance(spec, Mapping):
            raise SchemaError("a schema must be a JSON object")
        ref = spec.get("$ref")
        if isinstance(ref, str):
            target = ref.rsplit("/", 1)[-1]
            base = self.ref(target)
            return _with_extensions(base, spec)
        if spec.get("x-kubernetes-preserve-unknown-fields") is True and not spec.get("properties"):
            return untyped()
        if spec.get("x-kubernetes-int-or-string") is True:
            return _scalar()
        all_of = spec.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and not spec.get("properties"):
            return _with_extensions(self.convert(all_of[0], name), spec)
        kind = spec.get("type")
        if kind == "array":
            return self._list(spec, name)
        properties = spec.get("properties")
        additional = spec.get("additionalProperties")
        if kind == "object" or properties is not None or additional is not None:
            atomic = spec.get("x-kubernetes-map-type") == "atomic"
            fields = {k: self._thunk(v, "") for k, v in (properties or {}).items()}
            values: Callable[[], Node] | None = None
            if isinstance(additional, Mapping):
                values = self._thunk(additional)
            elif additional is True:
                values = _lazy(untyped())
            if values is None and (
                spec.get("x-kubernetes-preserve-unknown-fields") is True
                or spec.get("x-kubernetes-embedded-resource") is True
            ):
                # Fields beyond the declared ones are kept (or, for an embedded
                # object, are its own apiVersion/kind/metadata).
                values = _lazy(untyped())
            if not fields and values is None:
                return Node(kind="untyped", atomic=atomic)
            return Node(
                kind="struct" if fields else "map",
                atomic=atomic,
                _fields=fields,
                _values=values,
            )
        return _scalar()

    def _list(self, spec: Mapping[str, Any], name: str) -> Node:
        items = spec.get("items")
        item_thunk = self._thunk(items) if isinstance(items, Mapping) else _lazy(untyped())
        strategy = str(spec.get("x-kubernetes-patch-strategy", ""))
        merge_key = str(spec.get("x-kubernetes-patch-merge-key", ""))
        declared = spec.get("x-kubernetes-list-type")
        keys: tuple[str, ...] = ()
        list_type: ListType
        if declared in ("atomic", "set", "map"):
            list_type = declared
            if declared == "map":
                raw = spec.get("x-kubernetes-list-map-keys") or ([merge_key] if merge_key else [])
                keys = tuple(str(k) for k in raw)
        elif "merge" in strategy.split(","):
            list_type = "map" if merge_key else "set"
            keys = (merge_key,) if merge_key else ()
        else:
            list_type = "atomic"
        defaults: dict[str, Any] = {}
        if isinstance(items, Mapping) and isinstance(items.get("$ref"), str):
            item_name = items["$ref"].rsplit("/", 1)[-1]
            for key in keys:
                if (item_name, key) in KEY_FIELD_DEFAULTS:
                    defaults[key] = KEY_FIELD_DEFAULTS[(item_name, key)]
        if isinstance(items, Mapping):
            for key in keys:
                prop = (items.get("properties") or {}).get(key)
                if isinstance(prop, Mapping) and "default" in prop:
                    defaults[key] = prop["default"]
        return Node(
            kind="list",
            list_type=list_type,
            keys=keys,
            key_defaults=defaults,
            patch_strategy=strategy,
            patch_merge_key=merge_key,
            _items=item_thunk,
        )


def _with_extensions(base: Node, spec: Mapping[str, Any]) -> Node:
    """A ``$ref`` may carry its own map type; everything else comes from the target."""
    if spec.get("x-kubernetes-map-type") == "atomic" and not base.atomic:
        return Node(
            kind=base.kind,
            atomic=True,
            _fields=base._fields,
            _values=base._values,
        )
    return base


@lru_cache(maxsize=1)
def openapi_document() -> Mapping[str, Any]:
    """The packaged ``/openapi/v2`` document: recorded paths, v1.30.0 definitions."""
    data = resources.files("ownergc_backends.memory").joinpath(_OPENAPI_RESOURCE).read_bytes()
    document = json.loads(gzip.decompress(data))
    if not isinstance(document, dict) or not isinstance(document.get("definitions"), dict):
        raise SchemaError("the packaged OpenAPI document has no definitions")
    _add_admission_policy_paths(document)
    return document


#: The kinds GA in 1.30 whose definitions the packaged document has and whose paths the
#: recording (an older server) lacks: (resource, kind, with a /status).
_POLICY_KINDS: Final = (
    ("validatingadmissionpolicies", "ValidatingAdmissionPolicy", True),
    ("validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", False),
)


_VERBS: Final = {"get": "read", "put": "replace", "patch": "partially update"}


def _add_admission_policy_paths(document: dict[str, Any]) -> None:
    """The admissionregistration.k8s.io/v1 paths of ValidatingAdmissionPolicy and its
    binding, shaped as the ValidatingWebhookConfiguration ones (cluster-scoped kinds of
    the same group version, served alike); the policy's ``/status`` as get/put/patch of
    the object."""
    paths = document.get("paths")
    if not isinstance(paths, dict):
        return
    prefix = "/apis/admissionregistration.k8s.io/v1/"
    template = "validatingwebhookconfigurations"
    for resource, kind, status in _POLICY_KINDS:
        for path, item in list(paths.items()):
            if not path.startswith(prefix) or template not in path:
                continue
            text = json.dumps(item)
            text = text.replace(template, resource)
            text = text.replace("ValidatingWebhookConfiguration", kind)
            new_path = path.replace(template, resource)
            paths.setdefault(new_path, json.loads(text))
            if status and path.endswith("/{name}") and "/watch/" not in path:
                copied = json.loads(text)
                status_item = {k: v for k, v in copied.items() if k not in ("delete", "post")}
                for method in ("get", "put", "patch"):
                    operation = status_item.get(method)
                    if isinstance(operation, dict) and "operationId" in operation:
                        operation["operationId"] = str(operation["operationId"]) + "Status"
                        verb = _VERBS[method]
                        operation["description"] = f"{verb} status of the specified {kind}"
                paths.setdefault(new_path + "/status", status_item)


@lru_cache(maxsize=1)
def _builtin() -> tuple[_Converter, Mapping[tuple[str, str, str], str]]:
    definitions = openapi_document()["definitions"]
    by_gvk: dict[tuple[str, str, str], str] = {}
    for name, spec in definitions.items():
        for gvk in spec.get("x-kubernetes-group-version-kind") or ():
            key = (str(gvk.get("group", "")), str(gvk.get("version", "")), str(gvk.get("kind", "")))
            # A kind can be listed by several definitions (e.g. DeleteOptions);
            # the first one seen is kept, which is the one in the kind's own group.
            by_gvk.setdefault(key, name)
    return _Converter(definitions), by_gvk


def builtin_schema(group: str, version: str, kind: str) -> Node | None:
    """The merge type of a built-in kind, or ``None`` when the document does not list it."""
    converter, by_gvk = _builtin()
    name = by_gvk.get((group, version, kind))
    if name is None:
        return None
    node = converter.ref(name)
    zero = tuple(
        f for f in ("spec", "status") if node.is_named_field(f) and node.child(f).kind == "struct"
    )
    return replace(node, zero_fields=zero) if zero else node


def crd_schema(open_api_v3_schema: Mapping[str, Any] | None) -> Node:
    """The merge type of a custom resource from its CRD version's ``openAPIV3Schema``.

    ``metadata`` always has the built-in ObjectMeta type, ``apiVersion`` and
    ``kind`` are strings, as the server treats them whatever the CRD says.
    """
    converter, _ = _builtin()
    if not open_api_v3_schema:
        root = untyped()
        fields: dict[str, Callable[[], Node]] = {}
        values: Callable[[], Node] | None = _lazy(untyped())
    else:
        root = _Converter({}).convert(open_api_v3_schema)
        fields = dict(root._fields)
        values = root._values
        if root.kind == "untyped":
            values = _lazy(untyped())
    fields["metadata"] = lambda: converter.ref(_OBJECT_META)
    fields["apiVersion"] = _lazy(_scalar())
    fields["kind"] = _lazy(_scalar())
    return Node(kind="struct", atomic=root.atomic, _fields=fields, _values=values)


def strategic_list_facts(node: Node) -> Iterator[tuple[tuple[str, ...], str, str]]:
    """``(path, patch strategy, merge key)`` for every list below ``node`` that has one.

    Paths are tuples of field names (list items add no element). This is the
    table strategic merge patch needs; a recursive type is not entered again
    below itself.
    """
    stack: list[tuple[tuple[str, ...], Node, frozenset[int]]] = [((), node, frozenset())]
    while stack:
        path, current, above = stack.pop()
        if id(current) in above:
            continue
        below = above | {id(current)}
        if current.kind == "list":
            if current.patch_strategy:
                yield path, current.patch_strategy, current.patch_merge_key
            stack.append((path, current.items(), below))
        elif current.kind == "struct":
            for name in sorted(current.field_names):
                stack.append(((*path, name), current.child(name), below))


def version_schema(crd: Any, version: str) -> dict[str, Any] | None:
    """The ``openAPIV3Schema`` a CustomResourceDefinition gives ``version`` (None when the
    version is not listed or has no schema)."""
    spec = crd.get("spec") if isinstance(crd, dict) else None
    for entry in (spec.get("versions") if isinstance(spec, dict) else None) or ():
        if isinstance(entry, dict) and entry.get("name") == version:
            schema = entry.get("schema")
            raw = schema.get("openAPIV3Schema") if isinstance(schema, dict) else None
            return raw if isinstance(raw, dict) else None
    return None


def crd_version_schema(crd: Mapping[str, Any], version: str) -> Node:
    """The merge type of one served version of a CustomResourceDefinition object.

    A version without a schema (or an unknown version) gives the untyped
    model: maps merge key by key and lists are atomic, as the server does
    for a schemaless custom resource.
    """
    if not isinstance(crd.get("spec"), Mapping):
        raise SchemaError("a CustomResourceDefinition needs a spec")
    return crd_schema(version_schema(crd, version))


def strategic_merge_keys(node: Node) -> dict[tuple[str, ...], str]:
    """``path -> merge key`` for the lists strategic merge patch merges (``""``: a set).

    The same shape as the hand-kept table in ``_patch.py``
    (``METADATA_LIST_STRATEGIES``), read from the schema instead: every list
    whose ``x-kubernetes-patch-strategy`` includes ``merge``.
    """
    return {
        path: key
        for path, strategy, key in strategic_list_facts(node)
        if "merge" in strategy.split(",")
    }
