"""The ServiceAccount (name), Priority and DefaultTolerationSeconds admission plugins
(ownergc_backends/memory/_apiserver/podadmission.py), over HTTP as kubectl meets them.
What a real v1.20 server added to Pods is compared in test_defaults_real.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

PODS = "/api/v1/namespaces/default/pods"
NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
UNREACHABLE = {**NOT_READY, "key": "node.kubernetes.io/unreachable"}


@pytest.fixture
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        yield running


def create_pod(server: KubeAPIServer, name: str, **spec: Any) -> tuple[int, Any]:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}], **spec},
    }
    status, _, answer = send(server, "POST", PODS, json.dumps(body))
    return status, answer


def test_a_pod_gets_the_default_service_account_priority_and_tolerations(
    server: KubeAPIServer,
) -> None:
    status, pod = create_pod(server, "p")
    assert status == 201, pod
    spec = pod["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "priorityClassName" not in spec
    assert spec["tolerations"] == [NOT_READY, UNREACHABLE]


def test_the_plugins_run_on_create_only(server: KubeAPIServer) -> None:
    status, _ = create_pod(server, "p")
    assert status == 201
    patch = json.dumps({"metadata": {"labels": {"a": "b"}}})
    status, _, patched = send(server, "PATCH", f"{PODS}/p", patch, "application/merge-patch+json")
    assert status == 200
    assert patched["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]


def test_a_named_service_account_is_mirrored(server: KubeAPIServer) -> None:
    status, pod = create_pod(server, "p", serviceAccountName="builder")
    assert status == 201
    assert (pod["spec"]["serviceAccountName"], pod["spec"]["serviceAccount"]) == (
        "builder",
        "builder",
    )


def test_a_toleration_already_given_is_not_added_again(server: KubeAPIServer) -> None:
    own = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    status, pod = create_pod(server, "p", tolerations=[own])
    assert status == 201
    assert pod["spec"]["tolerations"] == [own, UNREACHABLE]
    everything = {"operator": "Exists"}
    status, pod = create_pod(server, "q", tolerations=[everything])
    assert pod["spec"]["tolerations"] == [everything]


def test_priority_from_the_class(server: KubeAPIServer) -> None:
    status, pod = create_pod(server, "system", priorityClassName="system-cluster-critical")
    assert status == 201
    assert pod["spec"]["priority"] == 2000000000
    high = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
        "preemptionPolicy": "Never",
    }
    status, _, _ = send(
        server, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", json.dumps(high)
    )
    assert status == 201
    status, pod = create_pod(server, "high", priorityClassName="high")
    assert (pod["spec"]["priority"], pod["spec"]["preemptionPolicy"]) == (1000, "Never")
    status, refused = create_pod(server, "nope", priorityClassName="nope")
    assert (status, refused["reason"], refused["message"]) == (
        403,
        "Forbidden",
        'pods "nope" is forbidden: no PriorityClass with name nope was found',
    )
    status, refused = create_pod(server, "forced", priorityClassName="high", priority=7)
    assert status == 403
    assert (
        "the integer value of priority (7) must not be provided in pod spec" in refused["message"]
    )


def test_a_global_default_class_applies_to_pods_without_one(server: KubeAPIServer) -> None:
    default = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "everyone"},
        "value": 50,
        "globalDefault": True,
    }
    send(server, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses", json.dumps(default))
    status, pod = create_pod(server, "p")
    assert status == 201
    assert (pod["spec"]["priorityClassName"], pod["spec"]["priority"]) == ("everyone", 50)


def test_a_put_without_them_keeps_priority_and_tolerations(server: KubeAPIServer) -> None:
    status, pod = create_pod(server, "p")
    assert status == 201
    replaced = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "resourceVersion": pod["metadata"]["resourceVersion"]},
        "spec": {
            "serviceAccountName": "default",
            "containers": [{"name": "c", "image": "nginx:1.26"}],
        },
    }
    status, _, answer = send(server, "PUT", f"{PODS}/p", json.dumps(replaced))
    assert status == 200, answer
    assert (answer["spec"]["priority"], answer["spec"]["preemptionPolicy"]) == (
        0,
        "PreemptLowerPriority",
    )
    assert answer["spec"]["tolerations"] == [NOT_READY, UNREACHABLE]


def test_a_preemption_policy_other_than_the_class_s_is_refused(server: KubeAPIServer) -> None:
    status, refused = create_pod(server, "p", preemptionPolicy="Never")
    assert (status, refused["message"]) == (
        403,
        'pods "p" is forbidden: the string value of PreemptionPolicy (Never) must not be '
        "provided in pod spec; priority admission controller computed PreemptLowerPriority "
        "from the given PriorityClass name",
    )


def test_a_refusal_names_a_generated_pod_by_its_prefix(server: KubeAPIServer) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"generateName": "web-"},
        "spec": {"priorityClassName": "nope", "containers": [{"name": "c", "image": "x"}]},
    }
    status, _, refused = send(server, "POST", PODS, json.dumps(body))
    assert (status, refused["message"]) == (
        403,
        'pods "web-" is forbidden: no PriorityClass with name nope was found',
    )
