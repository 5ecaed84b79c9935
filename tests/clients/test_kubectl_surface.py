"""kubectl's everyday commands beyond CRUD against `ownergc serve`: scale, auth, explain.

Both kubectls (1.37 and Debian's 1.20) scale, ask ``auth can-i`` and
``explain``; ``auth whoami`` exists in 1.37 only. ``explain`` reads
``/openapi/v3`` in 1.37 and ``/openapi/v2`` in protobuf in 1.20.
"""

from __future__ import annotations

import pytest

from tests.cli.cli_helpers import Kubectl
from tests.clients.conftest import kubectl_137_binary

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: crontabs.stable.example.com}
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The crontab's schedule and image.
            properties:
              cronSpec: {type: string, description: When the job runs, in cron syntax.}
"""


def _is_137(kubectl: Kubectl) -> bool:
    return kubectl.binary == kubectl_137_binary()


def test_scale_deployment(kubectl: Kubectl) -> None:
    kubectl.run("create", "deployment", "web", "--image=nginx")
    out = kubectl.run("scale", "deployment/web", "--replicas=3").stdout
    assert "scaled" in out
    assert kubectl.json("get", "deployment", "web")["spec"]["replicas"] == 3
    # --current-replicas is a precondition read from /scale.
    refused = kubectl.run(
        "scale", "deployment/web", "--current-replicas=1", "--replicas=2", check=False
    )
    assert refused.returncode != 0
    assert kubectl.json("get", "deployment", "web")["spec"]["replicas"] == 3


def test_auth_can_i(kubectl: Kubectl) -> None:
    result = kubectl.run("auth", "can-i", "create", "pods")
    assert result.stdout.strip() == "yes"
    listing = kubectl.run("auth", "can-i", "--list").stdout
    assert "*.*" in listing and "[*]" in listing


def test_auth_whoami(kubectl: Kubectl) -> None:
    if not _is_137(kubectl):
        pytest.skip("kubectl 1.20 has no `auth whoami`")
    out = kubectl.run("auth", "whoami").stdout
    assert "system:anonymous" in out


def test_explain_builtin_and_crd(kubectl: Kubectl) -> None:
    out = kubectl.run("explain", "deployment.spec.replicas").stdout
    assert "FIELD:" in out and "replicas <integer>" in out
    assert "Number of desired pods" in out
    kubectl.apply("crd.yaml", CRD)
    out = kubectl.run("explain", "crontab.spec").stdout
    assert "KIND:" in out and "CronTab" in out and "cronSpec" in out
    assert "The crontab's schedule and image." in out
    kubectl.run("delete", "crd", "crontabs.stable.example.com")
    gone = kubectl.run("explain", "crontab", check=False)
    assert gone.returncode != 0


UNKNOWN_FIELD = """
apiVersion: v1
kind: ConfigMap
metadata: {name: NAME, namespace: default}
data: {a: b}
foo: bar
"""


def test_unknown_field_is_refused_by_strict_validation(kubectl: Kubectl) -> None:
    """kubectl 1.37 sends fieldValidation=Strict (the published writes name it): refused
    with the apiserver's words. 1.20 predates it and validates on its side, from
    ``/openapi/v2`` in protobuf, as it does against a real server."""
    path = kubectl.workdir / "unknown.yaml"
    path.write_text(UNKNOWN_FIELD.replace("NAME", "strict"))
    result = kubectl.run("create", "-f", str(path), check=False)
    if _is_137(kubectl):
        assert result.returncode != 0
        assert 'strict decoding error: unknown field "foo"' in result.stderr
        assert not kubectl.exists("configmap", "strict")
        path.write_text(UNKNOWN_FIELD.replace("NAME", "warned"))
        warned = kubectl.run("apply", "--validate=warn", "-f", str(path))
        assert 'Warning: unknown field "foo"' in warned.stderr
    else:
        assert result.returncode != 0
        assert 'unknown field "foo" in io.k8s.api.core.v1.ConfigMap' in result.stderr
        assert not kubectl.exists("configmap", "strict")
