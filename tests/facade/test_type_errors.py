"""A built-in kind's value of the wrong JSON type is refused, as kube-apiserver's
decoder refuses it, whatever ``fieldValidation`` says: 400 on a create or update
(``<Kind> in version "v1" cannot be handled as a <Kind>: json: cannot unmarshal
...``), 422 on ``patch`` for a patch; nothing is stored. The real server's own
answer to such a patch is in tests/data/real-apiserver-1.20/ (#17)."""

from __future__ import annotations

import json

import pytest

from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.test_field_validation_cases import send

CM = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"


def deployment(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
            **spec,
        },
    }


@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore"])
def test_a_number_in_a_configmaps_data_is_refused(server: KubeAPIServer, mode: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}, "data": {"k": 1}}
    status, _, answer = send(server, "POST", f"{CM}?fieldValidation={mode}", json.dumps(body))
    assert status == 400, answer
    assert answer["reason"] == "BadRequest"
    assert answer["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "number into Go struct field ConfigMap.data of type string"
    )
    assert send(server, "GET", f"{CM}/n", "")[0] == 404


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"replicas": "3"},
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas "
            "of type int32",
        ),
        (
            {"replicas": 1.5},
            "json: cannot unmarshal number 1.5 into Go struct field "
            "DeploymentSpec.spec.replicas of type int32",
        ),
        (
            {"paused": "yes"},
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused "
            "of type bool",
        ),
    ],
)
def test_scalar_types_of_a_deployment(
    server: KubeAPIServer, spec: dict[str, object], message: str
) -> None:
    status, _, answer = send(server, "POST", DEPLOYMENTS, json.dumps(deployment("d", **spec)))
    assert status == 400, answer
    assert answer["message"].endswith(message)


def test_what_go_takes_is_taken(server: KubeAPIServer) -> None:
    """null is a zero value, a Quantity takes a number, an IntOrString either."""
    body = deployment("ok", replicas=None, strategy={"rollingUpdate": {"maxSurge": 1}})
    body["spec"]["template"]["spec"]["containers"][0]["resources"] = {  # type: ignore[index]
        "limits": {"cpu": 1, "memory": "64Mi"}
    }
    status, _, answer = send(server, "POST", DEPLOYMENTS, json.dumps(body))
    assert status == 201, answer


@pytest.mark.parametrize(
    "content_type", ["application/merge-patch+json", "application/strategic-merge-patch+json"]
)
def test_a_patch_that_gives_a_wrong_type_is_422(server: KubeAPIServer, content_type: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"}, "data": {"a": "1"}}
    assert send(server, "POST", CM, json.dumps(body))[0] == 201
    status, _, answer = send(
        server, "PATCH", f"{CM}/p", json.dumps({"data": {"k": 1}}), content_type
    )
    assert status == 422, answer
    assert answer["reason"] == "Invalid"
    [cause] = answer["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith(
        "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
    )
    _, _, live = send(server, "GET", f"{CM}/p", "")
    assert live["data"] == {"a": "1"}
