"""Regenerate ownergc/_core/builtin_kinds.py's table from a real apiserver's discovery.

The operator API (ownergc.ownerrefs), ``ownergc lint`` and the admission webhook need
to know, without a cluster, whether a kind is served and namespaced: the table is what
a stock kube-apiserver 1.30 serves, made from what a real 1.24 served
(fixtures/real-apiserver-1.24/discovery.json) less the group versions 1.25-1.29 stopped
serving (``REMOVED_VERSIONS``) plus those 1.30 serves by default that 1.24 did not
(``ADDED_KINDS``), both from Kubernetes' API migration guide and release notes.
Run from the repository root:

    python scripts/gen_builtin_kinds.py /work/shared/fixtures/real-apiserver-1.24/discovery.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "ownergc" / "_core" / "builtin_kinds.py"

BEGIN = "BUILTIN_KINDS: tuple[tuple[str, str, str, str, bool], ...] = (\n"
END = "# end of the generated table\n"


def main(path: str) -> int:
    sys.path.insert(0, str(OUT.parents[2]))
    from ownergc._core.builtin_kinds import ADDED_KINDS, REMOVED_VERSIONS

    discovery = json.loads(Path(path).read_text())
    rows: set[tuple[str, str, str, str, bool]] = set(ADDED_KINDS)
    for body in discovery.values():
        if body.get("kind") != "APIResourceList":
            continue
        group, _, version = body["groupVersion"].rpartition("/")
        for res in body["resources"]:
            if "/" in res["name"]:
                continue  # subresources are not kinds an owner can be
            if (body["groupVersion"], res["kind"]) in REMOVED_VERSIONS:
                continue
            rows.add((group, version, res["kind"], res["name"], bool(res["namespaced"])))
    source = OUT.read_text()
    lines = [source[: source.index(BEGIN) + len(BEGIN)]]
    for row in sorted(rows):
        text = "(" + ", ".join(json.dumps(v) if isinstance(v, str) else str(v) for v in row) + ")"
        if len(text) + 5 <= 100:
            lines.append(f"    {text},\n")
        else:  # one field a line, as a formatter would wrap it
            fields = "".join(
                f"        {json.dumps(v) if isinstance(v, str) else v},\n" for v in row
            )
            lines.append(f"    (\n{fields}    ),\n")
    lines.append(")\n" + source[source.index(END) :])
    OUT.write_text("".join(lines))
    print(f"wrote {len(rows)} kinds to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
