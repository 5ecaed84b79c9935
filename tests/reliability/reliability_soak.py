"""Seeded soak runs of the property state machine, reproducible from a seed.

Hypothesis explores and shrinks; this driver sweeps. Run ``i`` uses seed
``base + i``: a ``random.Random(seed)`` picks the fault profile (round robin
over all profiles unless ``--profile``), watch-cache or live decisions, the
FaultyStore seed, and a sequence of ``--steps`` rules of
``test_reliability_properties.GCMachine`` with their arguments. The same
invariants are checked after every step and at the end (heal, converge to
the oracle, queues drained).

    python tests/reliability/reliability_soak.py --runs 220 --seed 1000 --report runs.jsonl
    python tests/reliability/reliability_soak.py --runs 1 --seed 1037     # reproduce run 37

Faults are deterministic per call for a seed; task interleaving is not (see
ownergc.testing.faults), so a failure reproduces as "the same history under
the same faults", usually but not always with the same outcome. A failing
run prints its seed, profile and history.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from typing import Any

from tests.reliability.test_reliability_properties import NAMESPACES, POLICIES, PROFILES, GCMachine

KINDS = ["ConfigMap", "ConfigMap", "Secret", "ClusterRole"]


def _owner_specs(rng: random.Random) -> list[Any]:
    return [
        (rng.randrange(10**6), rng.choice([None, True, False]), rng.random() < 0.25)
        for _ in range(rng.randrange(4))
    ]


def soak_run(seed: int, profile: str | None = None, steps: int = 30) -> dict[str, Any]:
    """One run; returns its record (with ``ok``). Raises nothing on a failed check."""
    rng = random.Random(seed)
    profiles = sorted(PROFILES)
    chosen = profile or profiles[seed % len(profiles)]
    machine = GCMachine()
    machine.run_seed = seed
    record: dict[str, Any] = {"seed": seed, "profile": chosen}
    error: BaseException | None = None
    try:
        machine.setup(seed=rng.randrange(2**32), profile=chosen, use_cache=rng.random() < 0.5)
        for _ in range(steps):
            roll = rng.random()
            if roll < 0.30 or not machine.objects:
                batch = [
                    (
                        rng.choice(KINDS),
                        rng.choice(NAMESPACES),
                        _owner_specs(rng),
                        rng.random() < 0.25,
                    )
                    for _ in range(rng.randint(1, 4))
                ]
                machine.create(batch=batch)
            elif roll < 0.45:
                machine.set_owner_references(pick=rng.randrange(10**6), owners=_owner_specs(rng))
            elif roll < 0.58:
                machine.toggle_finalizer(pick=rng.randrange(10**6), add=rng.random() < 0.5)
            elif roll < 0.83:
                machine.delete(pick=rng.randrange(10**6), policy=rng.choice(POLICIES))
            elif roll < 0.86:
                if machine.runner.restarts < 2:
                    machine.restart_controller()
            else:
                machine.let_time_pass(seconds=rng.choice([0.0, 0.005, 0.02, 0.05]))
            machine.nothing_wrongly_deleted()
            machine.collector_alive()
    except BaseException as exc:  # reported in the record
        error = exc
    finally:
        try:
            machine.teardown()
        except BaseException as exc:
            error = error or exc
    record.update(
        use_cache=getattr(machine, "use_cache", None),
        steps=machine.steps,
        ok=error is None,
        error=repr(error) if error else None,
    )
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=22)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--profile", choices=sorted(PROFILES))
    parser.add_argument("--report", help="append one JSON line per run (teardown's record)")
    args = parser.parse_args(argv)
    if args.report:
        os.environ["OWNERGC_RELIABILITY_REPORT"] = args.report
    failed = 0
    for i in range(args.runs):
        rec = soak_run(args.seed + i, args.profile, args.steps)
        if not rec["ok"]:
            failed += 1
            print(json.dumps(rec, indent=1), flush=True)
    print(json.dumps({"runs": args.runs, "failed": failed, "base_seed": args.seed}))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
