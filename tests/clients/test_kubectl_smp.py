"""kubectl's strategic merge patches (``patch --type strategic``, client-side ``apply``) on serve.

Both merge a Deployment's containers by name, as kube-apiserver does, so a
container the patch does not name is kept.
"""

from __future__ import annotations

from tests.cli.cli_helpers import Kubectl

MANIFEST = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
      - name: a
        image: {image}
        env:
        - {{name: X, value: "1"}}
"""


def containers(kubectl: Kubectl) -> dict[str, dict[str, object]]:
    spec = kubectl.json("get", "deployment", "web", "-n", "default")["spec"]
    return {c["name"]: c for c in spec["template"]["spec"]["containers"]}


def test_patch_strategic_and_apply_keep_the_other_container(kubectl: Kubectl) -> None:
    kubectl.apply("web.yaml", MANIFEST.format(image="a:1"))
    kubectl.run(
        "patch",
        "deployment",
        "web",
        "-n",
        "default",
        "--type",
        "strategic",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"x"}]}}}}',
    )
    after_patch = containers(kubectl)
    assert set(after_patch) == {"a", "b"}
    assert after_patch["a"]["image"] == "a:1"
    assert after_patch["b"]["image"] == "x"

    # Client-side apply sends a strategic merge patch that names only container a.
    kubectl.apply("web.yaml", MANIFEST.format(image="a:2"))
    after_apply = containers(kubectl)
    assert set(after_apply) == {"a", "b"}
    assert after_apply["a"]["image"] == "a:2"
    assert after_apply["a"]["env"] == [{"name": "X", "value": "1"}]
    assert after_apply["b"]["image"] == "x"
