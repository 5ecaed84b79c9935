"""Check ``tools/gen_openapi_v130.py``'s back-conversion against the recorded document.

kubernetes-validate's JSON Schema of an older release, converted back to
swagger by :func:`gen_openapi_v130.to_swagger`, is compared definition by
definition with the definitions a real apiserver published
(``tools/data/openapi-v2-recorded.json.gz``). Every difference is printed,
then a summary; with ``--served`` the one known difference of a served
document is taken out first: a server with the ``OpenAPIEnums`` feature off
(alpha in 1.23) publishes no ``enum`` for enum-typed string fields and cuts
their description's "Possible enum values:" list, which the swagger in
Kubernetes' repository (what kubernetes-validate converts) has.

Usage (kubernetes-validate 1.30.0 is the newest release still carrying
v1.23.0 and v1.24.0)::

    pip download --no-deps kubernetes-validate==1.30.0 -d /tmp/kv130
    python tools/check_openapi_roundtrip.py \\
        /tmp/kv130/kubernetes_validate-1.30.0-py3-none-any.whl --release v1.23.0 --served

Exit status 0 when no difference is left.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_openapi_v130 import load_recorded, read_json_schema_definitions, to_swagger

_ENUM_LIST = "\n\nPossible enum values:"


def without_enums(value: Any) -> Any:
    """``value`` as a server with ``OpenAPIEnums`` off publishes it."""
    if isinstance(value, list):
        return [without_enums(item) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key == "properties" and isinstance(item, dict):
            out[key] = {name: without_enums(schema) for name, schema in item.items()}
        elif key == "enum":
            continue
        elif key == "description" and isinstance(item, str) and _ENUM_LIST in item:
            out[key] = item[: item.index(_ENUM_LIST)] + "\n\n"
        else:
            out[key] = without_enums(item)
    return out


def differences(mine: Any, theirs: Any, path: str) -> Iterator[tuple[str, Any, Any]]:
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for key in sorted(set(mine) | set(theirs)):
            if key not in mine:
                yield f"{path}/{key}", "<absent>", theirs[key]
            elif key not in theirs:
                yield f"{path}/{key}", mine[key], "<absent>"
            else:
                yield from differences(mine[key], theirs[key], f"{path}/{key}")
    elif mine != theirs or type(mine) is not type(theirs):
        yield path, mine, theirs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("source", type=Path, help="kubernetes-validate wheel or unpacked directory")
    parser.add_argument("--release", default="v1.23.0")
    parser.add_argument("--served", action="store_true", help="drop OpenAPIEnums output first")
    args = parser.parse_args(argv)
    recorded = load_recorded()["definitions"]
    converted = to_swagger(read_json_schema_definitions(args.source, args.release), recorded)
    only_theirs = sorted(set(recorded) - set(converted))
    only_mine = sorted(set(converted) - set(recorded))
    common = sorted(set(recorded) & set(converted))
    by_key: Counter[str] = Counter()
    changed = set()
    for name in common:
        mine = without_enums(converted[name]) if args.served else converted[name]
        for path, a, b in differences(mine, recorded[name], name):
            changed.add(name)
            by_key[path.rsplit("/", 1)[-1]] += 1
            print(f"DIFF {path}\n  converted: {str(a)[:300]!r}\n  recorded:  {str(b)[:300]!r}")
    print(f"\n{args.release}: {len(converted)} converted definitions, {len(recorded)} recorded")
    print(f"only in the recorded document ({len(only_theirs)}): {', '.join(only_theirs)}")
    print(f"only in {args.release} ({len(only_mine)}): {', '.join(only_mine)}")
    same = len(common) - len(changed)
    print(f"common: {len(common)}, identical: {same}, differing: {len(changed)}")
    if by_key:
        print("differences by key:", dict(by_key.most_common()))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
