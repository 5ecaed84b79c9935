"""``--dry-run=server`` and ``kubectl diff`` (kubectl 1.37 and 1.20) against `ownergc serve`.

kubectl sends ``dryRun=All`` (a query parameter on create and patch, the
DeleteOptions body on delete); ``kubectl diff`` asks the server for the
merged object with a dry-run patch (a dry-run create for an object that does
not exist yet). Each command must answer as on a real server and leave the
server as it was: same objects, same resourceVersion.

kubectl 1.20 first asks ``/openapi/v2`` (in protobuf) whether the kind's
PATCH takes a ``dryRun`` parameter and refuses to send one otherwise
("doesn't support dry-run"): serve publishes the recorded document, so it does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cli.cli_helpers import Kubectl

NS = "dry"
LIST = f"/api/v1/namespaces/{NS}/configmaps"


def manifest(name: str, color: str) -> str:
    return f"""
apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
  namespace: {NS}
data:
  color: {color}
"""


def server_state(kubectl: Kubectl) -> Any:
    """Every ConfigMap of the namespace and the list's resourceVersion (the store's
    newest: any write anywhere moves it)."""
    return json.loads(kubectl.run("get", "--raw", LIST).stdout)


@pytest.fixture
def live(kubectl: Kubectl) -> Kubectl:
    """The namespace with one applied ConfigMap, ``web`` (color blue)."""
    kubectl.run("create", "namespace", NS)
    kubectl.apply("web.yaml", manifest("web", "blue"))
    return kubectl


def test_create_dry_run_server_stores_nothing(live: Kubectl) -> None:
    before = server_state(live)
    out = live.run(
        "create",
        "configmap",
        "new",
        "-n",
        NS,
        "--from-literal=a=b",
        "--dry-run=server",
        "-o",
        "json",
    )
    obj = json.loads(out.stdout)
    assert (obj["metadata"]["name"], obj["data"]) == ("new", {"a": "b"})
    assert "uid" in obj["metadata"] and "resourceVersion" not in obj["metadata"]
    assert server_state(live) == before
    missing = live.run("get", "configmap", "new", "-n", NS, check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


def test_apply_dry_run_server_creates_and_patches_nothing(live: Kubectl) -> None:
    before = server_state(live)
    (live.workdir / "other.yaml").write_text(manifest("other", "green"))
    (live.workdir / "web.yaml").write_text(manifest("web", "red"))
    for name in ("other", "web"):
        out = live.run(
            "apply", "-f", str(live.workdir / f"{name}.yaml"), "--dry-run=server", "-o", "json"
        )
        obj = json.loads(out.stdout)
        assert obj["metadata"]["name"] == name
        assert obj["data"] == {"color": "green" if name == "other" else "red"}
    assert server_state(live) == before
    stored = live.json("get", "configmap", "web", "-n", NS)
    assert stored["data"] == {"color": "blue"}


def test_delete_dry_run_server_deletes_nothing(live: Kubectl) -> None:
    before = server_state(live)
    out = live.run("delete", "configmap", "web", "-n", NS, "--dry-run=server")
    assert "web" in out.stdout and "(server dry run)" in out.stdout
    out = live.run("delete", "configmap", "web", "-n", NS, "--dry-run=server", "--cascade=orphan")
    assert "(server dry run)" in out.stdout
    assert server_state(live) == before
    assert live.exists("configmap", "web", "-n", NS)


def test_diff_shows_the_change_and_changes_nothing(live: Kubectl) -> None:
    before = server_state(live)
    path = live.workdir / "changed.yaml"
    path.write_text(manifest("web", "red") + "---" + manifest("brand-new", "green"))
    diff = live.run("diff", "-f", str(path), check=False)
    assert diff.returncode == 1, diff.stderr  # 1: there are differences
    assert "-  color: blue" in diff.stdout and "+  color: red" in diff.stdout
    assert "+  color: green" in diff.stdout and "brand-new" in diff.stdout
    assert server_state(live) == before
    same = live.workdir / "same.yaml"
    same.write_text(manifest("web", "blue"))
    unchanged = live.run("diff", "-f", str(same), check=False)
    assert (unchanged.returncode, unchanged.stdout) == (0, ""), unchanged.stderr
    assert server_state(live) == before
