"""The commands people type every day, in the order a session would, against `ownergc serve`
with kubectl 1.37 and 1.20: every one must succeed, as on a real apiserver. (Commands 1.20
does not have are run with 1.37 only.)"""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_helpers import Kubectl

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx, ports: [{containerPort: 80}]}]}
"""

NODE = '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}'

#: (name, kubectl arguments) in session order; "{dep}" is the Deployment manifest's path.
COMMANDS: list[tuple[str, list[str]]] = [
    ("version", ["version"]),
    ("cluster-info", ["cluster-info"]),
    ("api-resources", ["api-resources"]),
    ("api-versions", ["api-versions"]),
    ("apply", ["apply", "-f", "{dep}"]),
    ("apply again", ["apply", "-f", "{dep}"]),
    ("get -o wide", ["get", "deploy", "web", "-o", "wide"]),
    ("get -o yaml", ["get", "deploy", "web", "-o", "yaml"]),
    ("describe", ["describe", "deploy", "web"]),
    ("label", ["label", "deploy", "web", "tier=front"]),
    ("annotate", ["annotate", "deploy", "web", "note=x"]),
    ("set image", ["set", "image", "deploy/web", "web=nginx:2"]),
    ("rollout restart", ["rollout", "restart", "deploy/web"]),
    ("scale", ["scale", "deploy", "web", "--replicas=3"]),
    (
        "patch (strategic, a second container)",
        [
            "patch",
            "deploy",
            "web",
            "-p",
            '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}',
        ],
    ),
    ("apply --server-side", ["apply", "--server-side", "--force-conflicts", "-f", "{dep}"]),
    ("apply --dry-run=server", ["apply", "--dry-run=server", "-f", "{dep}"]),
    ("explain", ["explain", "deployment.spec.replicas"]),
    ("auth can-i", ["auth", "can-i", "create", "pods"]),
    ("create job", ["create", "job", "j1", "--image=busybox"]),
    ("create cronjob", ["create", "cronjob", "cj1", "--image=busybox", "--schedule=*/1 * * * *"]),
    ("create role", ["create", "role", "r1", "--verb=get", "--resource=pods"]),
    ("create rolebinding", ["create", "rolebinding", "rb1", "--role=r1", "--user=bob"]),
    ("create service", ["create", "service", "clusterip", "s1", "--tcp=80:80"]),
    ("create quota", ["create", "quota", "q1", "--hard=pods=3"]),
    ("create pdb", ["create", "pdb", "p1", "--selector=app=web", "--min-available=1"]),
    ("create ingress", ["create", "ingress", "i1", "--rule=a.com/=s1:80"]),
    ("create priorityclass", ["create", "priorityclass", "pc1", "--value=10"]),
    ("create serviceaccount", ["create", "serviceaccount", "sa1"]),
    ("expose", ["expose", "deploy", "web", "--port=80", "--name=web-svc"]),
    ("run", ["run", "p1", "--image=nginx"]),
    ("autoscale", ["autoscale", "deploy", "web", "--max=3"]),
    ("get events", ["get", "events"]),
    ("get all", ["get", "all"]),
    ("delete --wait", ["delete", "pod", "p1", "--wait=true", "--timeout=20s"]),
    ("delete --dry-run=server", ["delete", "deploy", "web", "--dry-run=server"]),
    ("create configmap", ["create", "cm", "c1", "--from-literal=a=b"]),
    ("cordon", ["cordon", "n1"]),
    ("get --raw", ["get", "--raw", "/apis/apps/v1"]),
    ("delete", ["delete", "deploy", "web"]),
]

#: What kubectl 1.20 (outside the supported skew of a 1.30 server) fails to do, as it
#: fails against a real 1.30 server: its generators write a batch/v1beta1 CronJob and a
#: policy/v1beta1 PodDisruptionBudget, group versions 1.25 stopped serving.
REFUSED_FOR_1_20: dict[str, str] = {
    "create cronjob": "failed to create cronjob: the server could not find the requested resource",
    "create pdb": 'no matches for kind "PodDisruptionBudget" in version "policy/v1beta1"',
}

#: Commands kubectl 1.20 does not have (added in 1.24 and 1.26).
ONLY_NEW: list[tuple[str, list[str]]] = [
    ("auth whoami", ["auth", "whoami"]),
    ("create token", ["create", "token", "sa1"]),
]


def test_everyday_commands_all_succeed(kubectl: Kubectl, tmp_path: Path) -> None:
    dep = tmp_path / "web.yaml"
    dep.write_text(DEPLOYMENT)
    node = tmp_path / "node.json"
    node.write_text(NODE)
    kubectl.run("create", "-f", str(node))
    version = kubectl.run("version", "--client", "-o", "json").stdout
    commands = list(COMMANDS)
    old = '"minor": "20"' in version
    if not old:
        commands += ONLY_NEW
    failed = []
    for name, args in commands:
        result = kubectl.run(*[a.replace("{dep}", str(dep)) for a in args], check=False)
        if old and name in REFUSED_FOR_1_20:
            assert result.returncode != 0, name
            assert REFUSED_FOR_1_20[name] in result.stderr, result.stderr
        elif result.returncode != 0:
            failed.append(f"{name}: {result.stderr.strip()[-300:]}")
    # `kubectl diff` exits 1 when it found a difference, >1 on an error.
    diff = kubectl.run("diff", "-f", str(dep), check=False)
    if diff.returncode > 1:
        failed.append(f"diff: {diff.stderr.strip()[-300:]}")
    assert failed == []
