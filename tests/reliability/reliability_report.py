"""Summarize $OWNERGC_RELIABILITY_REPORT files into the fault matrix of docs/reliability.md.

    python tests/reliability/reliability_report.py runs.jsonl [more.jsonl ...]

Prints a Markdown table: one row per (fault profile, backend), with runs,
failures, runs per policy, and how many faults of that kind were injected.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from typing import Any


def summarize(paths: list[str]) -> str:
    rows: dict[tuple[str, str], dict[str, Any]] = defaultdict(
        lambda: {"runs": 0, "failures": 0, "policies": Counter(), "faults": Counter()}
    )
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                rec = json.loads(line)
                row = rows[(rec["profile"], rec["backend"])]
                row["runs"] += 1
                row["failures"] += bool(rec["diff"] or rec["violations"] or rec.get("died"))
                for policy in rec.get("policies") or ["(no delete)"]:
                    row["policies"][policy] += 1
                row["faults"].update(rec.get("faults") or {})
    out = [
        "| fault profile | backend | runs | failures | runs with Background / Foreground / "
        "Orphan / default delete | faults injected |",
        "|---|---|---|---|---|---|",
    ]
    for (profile, backend), row in sorted(rows.items()):
        p = row["policies"]
        faults = ", ".join(f"{k} {v}" for k, v in sorted(row["faults"].items())) or "–"
        out.append(
            f"| {profile} | {backend} | {row['runs']} | {row['failures']} | "
            f"{p['Background']} / {p['Foreground']} / {p['Orphan']} / {p['default']} | {faults} |"
        )
    total = sum(r["runs"] for r in rows.values())
    failed = sum(r["failures"] for r in rows.values())
    out.append(f"| **total** | | **{total}** | **{failed}** | | |")
    return "\n".join(out)


if __name__ == "__main__":
    print(summarize(sys.argv[1:]))
