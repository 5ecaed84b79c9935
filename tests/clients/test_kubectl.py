"""kubectl 1.37 (what people have installed now) and Debian's 1.20 against `ownergc serve`.

kubectl ≥ 1.32 waits for deletions with a watch-list request
(sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true)
and needs the BOOKMARK annotated k8s.io/initial-events-end to stop waiting;
`get --chunk-size` pages with limit/continue.
"""

from __future__ import annotations

import subprocess
import time

from tests.cli.cli_helpers import Kubectl, wait_for

OWNER = """
apiVersion: v1
kind: ConfigMap
metadata: {name: owner, namespace: default}
"""


def dependent(kubectl: Kubectl, name: str) -> None:
    uid = kubectl.json("get", "configmap", "owner")["metadata"]["uid"]
    kubectl.apply(
        f"{name}.yaml",
        f"""
apiVersion: v1
kind: Secret
metadata:
  name: {name}
  namespace: default
  ownerReferences:
  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}, blockOwnerDeletion: true}}
""",
    )


def test_delete_waits_for_a_finalizer_then_returns(kubectl: Kubectl) -> None:
    kubectl.apply(
        "held.yaml",
        """
apiVersion: v1
kind: ConfigMap
metadata: {name: held, namespace: default, finalizers: [example.com/hold]}
""",
    )
    cmd = [
        kubectl.binary,
        "--kubeconfig",
        str(kubectl.kubeconfig),
        "delete",
        "configmap",
        "held",
        "--timeout=60s",
    ]
    deleting = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        assert deleting.poll() is None, "kubectl returned before the object was gone"
        kubectl.run(
            "patch", "configmap", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
        )
        out, err = deleting.communicate(timeout=30)
    finally:
        if deleting.poll() is None:
            deleting.kill()
    assert deleting.returncode == 0, err
    assert 'configmap "held" deleted' in out
    assert not kubectl.exists("configmap", "held")


def test_wait_for_delete(kubectl: Kubectl) -> None:
    kubectl.apply("owner.yaml", OWNER)
    dependent(kubectl, "dep")
    kubectl.run(
        "patch", "secret", "dep", "--type=merge", "-p", '{"metadata":{"finalizers":["x.io/hold"]}}'
    )
    kubectl.run("delete", "configmap", "owner", "--wait=false")
    wait_for(
        lambda: kubectl.json("get", "secret", "dep")["metadata"].get("deletionTimestamp"),
        what="the collector to delete the dependent",
    )
    cmd = [kubectl.binary, "--kubeconfig", str(kubectl.kubeconfig), "wait", "--for=delete",
           "secret/dep", "--timeout=30s"]  # fmt: skip
    waiting = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        assert waiting.poll() is None, "kubectl wait returned while the secret was there"
        kubectl.run(
            "patch", "secret", "dep", "--type=merge", "-p", '{"metadata":{"finalizers":null}}'
        )
        out, err = waiting.communicate(timeout=30)
    finally:
        if waiting.poll() is None:
            waiting.kill()
    assert waiting.returncode == 0, err
    assert "condition met" in out


def test_delete_with_each_cascade(kubectl: Kubectl) -> None:
    for cascade, kept in (("background", False), ("foreground", False), ("orphan", True)):
        kubectl.apply("owner.yaml", OWNER)
        dependent(kubectl, "dep")
        kubectl.run("delete", "configmap", "owner", f"--cascade={cascade}", "--timeout=30s")
        if kept:
            refs = kubectl.json("get", "secret", "dep")["metadata"].get("ownerReferences")
            assert not refs
            kubectl.run("delete", "secret", "dep")
        else:
            wait_for(lambda: not kubectl.exists("secret", "dep"), what=f"{cascade} cascade")


def test_get_in_chunks_lists_everything(kubectl: Kubectl) -> None:
    for i in range(5):
        kubectl.apply(f"c{i}.yaml", OWNER.replace("owner", f"chunk{i}"))
    out = kubectl.run("get", "configmaps", "--chunk-size=2", "-o", "name").stdout.split()
    assert [n for n in out if "chunk" in n] == [f"configmap/chunk{i}" for i in range(5)]


def test_get_watch_streams_changes(kubectl: Kubectl) -> None:
    cmd = [
        kubectl.binary,
        "--kubeconfig",
        str(kubectl.kubeconfig),
        "get",
        "configmaps",
        "--watch",
        "-o",
        "name",
    ]
    watching = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        kubectl.apply("late.yaml", OWNER.replace("owner", "late"))
        assert watching.stdout is not None
        seen = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "configmap/late" not in seen:
            seen.append(watching.stdout.readline().strip())
        assert "configmap/late" in seen
    finally:
        watching.kill()
        watching.communicate()


def test_create_generators(kubectl: Kubectl) -> None:
    kubectl.run("create", "namespace", "gen")
    kubectl.run("create", "configmap", "cm", "-n", "gen", "--from-literal=a=1")
    kubectl.run("create", "secret", "generic", "s", "-n", "gen", "--from-literal=pw=x")
    kubectl.run("create", "serviceaccount", "sa", "-n", "gen")
    assert kubectl.json("get", "configmap", "cm", "-n", "gen")["data"] == {"a": "1"}
    assert kubectl.json("get", "secret", "s", "-n", "gen")["data"] == {"pw": "eA=="}
    assert kubectl.exists("serviceaccount", "sa", "-n", "gen")
    kubectl.run("create", "deployment", "web", "--image=nginx", "--replicas=0", "-n", "gen")
    deployment = kubectl.json("get", "deployment", "web", "-n", "gen")
    assert deployment["spec"]["replicas"] == 0  # set to zero, not left for the default
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx"
    # Every generator works (1.37's, in protobuf, each one: tests/clients/test_kubectl_create.py).
    kubectl.run("create", "priorityclass", "high", "--value=1000")
    assert kubectl.json("get", "priorityclass", "high")["value"] == 1000


def test_get_prints_each_kinds_columns(kubectl: Kubectl) -> None:
    kubectl.apply(
        "objects.yaml",
        """
apiVersion: v1
kind: ConfigMap
metadata: {name: cols, namespace: default}
data: {a: "1", b: "2"}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec: {containers: [{name: c, image: busybox}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: d}}
  template:
    metadata: {labels: {app: d}}
    spec: {containers: [{name: c, image: busybox}]}
""",
    )

    def header_and(kind: str, name: str) -> tuple[list[str], list[str]]:
        lines = kubectl.run("get", kind).stdout.splitlines()
        row = next(line for line in lines[1:] if line.split()[0] == name)
        return lines[0].split(), row.split()

    head, row = header_and("configmaps", "cols")
    assert head == ["NAME", "DATA", "AGE"] and row[1] == "2"
    head, row = header_and("namespaces", "default")
    assert head == ["NAME", "STATUS", "AGE"] and row[1] == "Active"
    head, row = header_and("pods", "p")
    assert head == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"] and row[1:4] == [
        "0/1",
        "Pending",
        "0",
    ]
    head, row = header_and("deployments", "d")
    assert head == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"] and row[1] == "0/2"
