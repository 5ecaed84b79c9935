"""``ownergc node``: flags, validation, and --once runs on the memory and CRI runtimes."""

from __future__ import annotations

import argparse
import json
from datetime import timedelta

import pytest

from ownergc.cli import build_parser
from ownergc.cli.node import build_policies, run


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["node", *argv])


def test_defaults_are_the_kubelets():
    args = parse()
    cpol, ipol = build_policies(args)
    assert (cpol.min_age, cpol.max_per_pod_container, cpol.max_containers) == (
        timedelta(0),
        1,
        -1,
    )
    assert (ipol.high_threshold_percent, ipol.low_threshold_percent) == (85, 80)
    assert (ipol.min_age, ipol.max_age) == (timedelta(minutes=2), timedelta(0))
    assert args.runtime_endpoint == "unix:///run/containerd/containerd.sock"
    assert args.func is run


def test_go_durations():
    args = parse(
        "--minimum-container-ttl-duration", "1h30m",
        "--minimum-image-ttl-duration", "0s",
        "--image-maximum-gc-age", "48h",
    )  # fmt: skip
    cpol, ipol = build_policies(args)
    assert cpol.min_age == timedelta(hours=1, minutes=30)
    assert ipol.min_age == timedelta(0) and ipol.max_age == timedelta(hours=48)


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--minimum-image-ttl-duration", "2x", 'time: unknown unit "x" in duration "2x"'),
        ("--image-maximum-gc-age", "5", 'time: missing unit in duration "5"'),
        ("--image-gc-high-threshold", "lots", "invalid integer percentage"),
    ],
)
def test_bad_flag_values_are_argparse_errors(flag, value, message, capsys):
    with pytest.raises(SystemExit) as info:
        parse(flag, value)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--image-gc-high-threshold", "101"], "invalid HighThresholdPercent 101"),
        (["--image-gc-high-threshold", "80"], "must be less than imageGCHighThresholdPercent"),
        (
            ["--image-maximum-gc-age", "1m", "--minimum-image-ttl-duration", "2m"],
            "imageMaximumGCAge 1m0s must be greater than imageMinimumGCAge 2m0s",
        ),
        (["--minimum-container-ttl-duration=-1s"], "invalid minimum garbage collection age"),
    ],
)
def test_invalid_policies_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        run(parse(*argv, "--runtime", "memory", "--once"))
    assert info.value.code == 2
    assert message in capsys.readouterr().err


def test_memory_demo_dry_run_then_real(tmp_path, capsys):
    metrics = tmp_path / "nodegc.prom"
    code = run(parse("--runtime", "memory", "--once", "--dry-run"))
    dry = json.loads(capsys.readouterr().out)
    assert code == 0 and dry["dry_run"]
    assert len(dry["containers"]["planned"]) == 3 and dry["containers"]["removed"] == []
    assert dry["sandboxes"]["removed"] == []
    assert dry["images"]["planned"] and dry["images"]["removed"] == []

    code = run(parse("--runtime", "memory", "--once", "--metrics-file", str(metrics)))
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    # 4 dead nginx attempts, keep 1: the 3 oldest go; the superseded sandbox goes.
    assert len(out["containers"]["removed"]) == 3
    assert out["sandboxes"]["removed"] == ["web_default_uid-web_0"]
    # 18 GiB + 1 MiB (the pause image) of 20 GiB used: 9.99 % free floors to 9, usage 91 %.
    # Down to 80 % means freeing 2 GiB + 1 MiB: the 2 GiB unused image is 1 MiB short, so
    # the next unused one goes too (both never used: id order).
    assert out["images"]["usage_percent"] == 91
    assert out["images"]["bytes_to_free"] == 2 * (1 << 30) + (1 << 20)
    assert out["images"]["removed"] == ["sha256:old-app", "sha256:tools"]
    text = metrics.read_text()
    assert 'kubelet_image_garbage_collected_total{reason="space"} 2' in text


def test_main_cli_wires_node(capsys):
    cli = pytest.importorskip("ownergc.cli")
    code = cli.main(["node", "--runtime", "memory", "--once", "--dry-run"])
    assert code == 0
    assert json.loads(capsys.readouterr().out)["dry_run"] is True


@pytest.mark.cri
def test_once_against_containerd(containerd, capsys):
    from ownergc_backends.cri import CRIRuntime
    from tests.nodegc._nodegc_cri_env import EXTRA, PAUSE, run_in_fresh_loop

    async def setup():
        async with CRIRuntime(containerd.endpoint) as rt:
            await containerd.reset(rt)
            sb = await containerd.run_pod(rt, "cli", "uid-cli")
            for attempt in range(3):
                await containerd.run_container(rt, sb, "c", attempt)

    run_in_fresh_loop(setup)
    try:
        code = run(
            parse(
                "--once",
                "--runtime-endpoint", containerd.endpoint,
                "--pod-logs-dir", str(containerd.pod_logs_dir),
                "--container-logs-dir", str(containerd.container_logs_dir),
                "--image-gc-high-threshold", "1", "--image-gc-low-threshold", "0",
                "--minimum-image-ttl-duration", "0s",
            )
        )  # fmt: skip
        out = json.loads(capsys.readouterr().out)
        assert len(out["containers"]["removed"]) == 2
        # The sandbox image (found through containerd's config) and the image in use stay;
        # the unused test images go, and the disk can never get to 0 %: exit 1.
        removed = set(out["images"]["removed"])
        assert len(removed) == len(EXTRA)
        assert code == 1 and "Failed to garbage collect" in out["images"]["error"]

        async def check():
            async with CRIRuntime(containerd.endpoint) as rt:
                assert await rt.image_status(PAUSE) is not None
                for ref in EXTRA:
                    assert await rt.image_status(ref) is None

        run_in_fresh_loop(check)
    finally:
        run_in_fresh_loop(containerd.remove_everything)


def test_image_records_file_round_trip(tmp_path):
    from ownergc.cli.node import load_image_records, save_image_records
    from ownergc.nodegc import ZERO_TIME, ImageRecord

    path = str(tmp_path / "records.json")
    assert load_image_records(path) == {}
    records = {"sha256:a": ImageRecord(5, ZERO_TIME, 10, True, "sha256:a", "")}
    save_image_records(path, records)
    assert load_image_records(path) == records


def test_importing_ownergc_never_imports_grpc():
    import subprocess
    import sys

    code = (
        "import sys, ownergc, ownergc.nodegc, ownergc.protocols, ownergc.cli.node, "
        "ownergc.controller; "
        "bad = [m for m in ('grpc', 'cri_api', 'kubernetes') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
