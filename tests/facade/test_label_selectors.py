"""One LabelSelector reading for the whole server (``_selectors.label_selector_*``): the
webhooks' namespace/object selectors, a Job's generated selector and a budget's selector
match alike, and what a write may store is what they can parse. With the recorded
refusals (test_label_selectors_real.py): valid objects taken, loaded objects that
kube-apiserver would refuse kept writable, kubectl's message.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver.eviction import _selects as budget_selects
from ownergc_backends.memory._defaults import selects as job_selects
from ownergc_backends.memory._selectors import label_selector_errors, label_selector_matches
from ownergc_backends.memory._webhooks import label_selector_matches as webhook_selects
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import Kubectl
from tests.facade.test_field_validation_cases import send

WEB = {"app": "web", "tier": "front"}


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


#: (selector, labels, selects): valid selectors
VALID = [
    ({}, WEB, True),
    ({"matchLabels": {"app": "web"}}, WEB, True),
    ({"matchLabels": {"app": "api"}}, WEB, False),
    ({"matchExpressions": [_expr("tier", "In", "front", "back")]}, WEB, True),
    ({"matchExpressions": [_expr("tier", "NotIn", "front")]}, WEB, False),
    ({"matchExpressions": [_expr("zone", "NotIn", "a")]}, WEB, True),
    ({"matchExpressions": [_expr("app", "Exists")]}, WEB, True),
    ({"matchExpressions": [_expr("app", "DoesNotExist")]}, WEB, False),
    ({"matchLabels": {"app": "web"}, "matchExpressions": [_expr("x.io/z", "DoesNotExist")]},
     WEB, True),
]  # fmt: skip
#: Selectors kube-apiserver cannot parse (and now refuses on a write); the three old
#: matchers disagreed on the first three (the webhooks' took the bad key and the
#: Exists with values, the budgets' checked operators and value counts only).
INVALID = [
    {"matchExpressions": [_expr("bad key", "Exists")]},
    {"matchExpressions": [_expr("app", "Exists", "web")]},
    {"matchLabels": {"app": "not ok"}},
    {"matchExpressions": [_expr("app", "In")]},
    {"matchExpressions": [_expr("app", "Equals", "web")]},
]


@pytest.mark.parametrize(("selector", "labels", "selects"), VALID)
def test_every_matcher_is_the_one_matcher(
    selector: dict[str, Any], labels: dict[str, str], selects: bool
) -> None:
    assert label_selector_errors(selector, "s") == []
    assert label_selector_matches(selector, labels) is selects
    assert webhook_selects(selector, labels) is selects
    assert job_selects(selector, labels) is selects
    assert budget_selects(selector, labels) is selects


@pytest.mark.parametrize("selector", INVALID)
def test_a_selector_that_does_not_parse_selects_nothing_anywhere(
    selector: dict[str, Any],
) -> None:
    labels = {"app": "web", "bad key": "x", "app2": "not ok"}
    assert label_selector_errors(selector, "s") != []
    assert not label_selector_matches(selector, labels | {"app": "not ok"})
    assert not webhook_selects(selector, labels)
    assert not job_selects(selector, labels)
    assert not budget_selects(selector, labels)
    # what a missing selector selects stays each field's
    assert webhook_selects(None, labels) and not budget_selects(None, labels)


def _post(server: KubeAPIServer, path: str, body: Any) -> tuple[int, Any]:
    code, _, answer = send(server, "POST", path, json.dumps(body))
    return code, answer


TEMPLATE = {"metadata": {"labels": WEB}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def test_valid_selectors_of_every_kind_are_taken(server: KubeAPIServer) -> None:
    apps = "/apis/apps/v1/namespaces/default"
    selector = {"matchLabels": {"app": "web"}, "matchExpressions": [_expr("tier", "In", "front")]}
    for resource, kind, extra in (
        ("deployments", "Deployment", {}),
        ("replicasets", "ReplicaSet", {}),
        ("daemonsets", "DaemonSet", {}),
        ("statefulsets", "StatefulSet", {"serviceName": "s"}),
    ):
        body = {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w"},
                "spec": {"selector": selector, "template": TEMPLATE, **extra}}  # fmt: skip
        code, made = _post(server, f"{apps}/{resource}", body)
        assert code == 201, made
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"manualSelector": True, "selector": selector,
                    "template": {**TEMPLATE, "spec": {**TEMPLATE["spec"],
                                                      "restartPolicy": "Never"}}}}  # fmt: skip
    assert _post(server, "/apis/batch/v1/namespaces/default/jobs", job)[0] == 201
    policy = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "np"},
        "spec": {
            "podSelector": {},
            "ingress": [{"from": [{"namespaceSelector": selector, "podSelector": {}}]}],
        },
    }
    path = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
    assert _post(server, path, policy)[0] == 201
    hook = {
        "name": "a.example.com",
        "clientConfig": {"url": "https://example.com/hook"},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "namespaceSelector": selector,
        "objectSelector": {"matchExpressions": [_expr("x", "DoesNotExist")]},
    }
    config = {"apiVersion": "admissionregistration.k8s.io/v1",
              "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"},
              "webhooks": [hook]}  # fmt: skip
    path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
    assert _post(server, path, config)[0] == 201
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "rc"},
        "spec": {"template": TEMPLATE},
    }  # fmt: skip  (its selector defaults to the labels)
    assert _post(server, "/api/v1/namespaces/default/replicationcontrollers", rc)[0] == 201


def test_a_loaded_object_kube_apiserver_would_refuse_stays_writable(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    path = "/apis/apps/v1/namespaces/default/deployments/old"
    bad = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "old", "namespace": "default"},
           "spec": {"template": TEMPLATE}}  # fmt: skip
    store.load_objects([bad])  # (no selector)
    code, _, answer = send(
        server, "PATCH", path, json.dumps({"metadata": {"finalizers": ["x.io/keep"]}}),
        "application/merge-patch+json",
    )  # fmt: skip
    assert code == 200, answer
    code, _, answer = send(server, "PUT", path + "/status", json.dumps(answer))
    assert code == 200, answer
    code, _, answer = send(
        server, "PATCH", path, json.dumps({"spec": {"replicas": 3}}),
        "application/merge-patch+json",
    )  # fmt: skip
    assert code == 422
    assert [c["field"] for c in answer["details"]["causes"]] == [
        "spec.selector",
        "spec.template.metadata.labels",
    ]


def test_an_update_keeping_a_budget_s_bad_values_is_taken_as_1_27_takes_it(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    path = "/apis/policy/v1/namespaces/default/poddisruptionbudgets/old"
    selector = {"matchExpressions": [_expr("app", "In", "not ok")]}
    store.load_objects(
        [{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
          "metadata": {"name": "old", "namespace": "default"},
          "spec": {"minAvailable": 1, "selector": selector}}]
    )  # fmt: skip
    code, _, answer = send(
        server, "PATCH", path, json.dumps({"spec": {"minAvailable": 2}}),
        "application/merge-patch+json",
    )  # fmt: skip
    assert code == 200, answer
    code, _, answer = send(
        server, "PATCH", path,
        json.dumps({"spec": {"selector": {"matchExpressions": [_expr("app", "In")]}}}),
        "application/merge-patch+json",
    )  # fmt: skip
    assert code == 422 and answer["details"]["causes"][0]["field"] == (
        "spec.selector.matchExpressions[0].values"
    )


MISMATCH = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
"""


@pytest.mark.parametrize("how", [["create"], ["apply"], ["apply", "--server-side"]])
def test_kubectl_says_the_selector_does_not_match_the_template(
    kubectl: Kubectl, how: list[str]
) -> None:
    path = kubectl.workdir / "deploy.yaml"
    path.write_text(MISMATCH)
    result = kubectl.run(*how, "-f", str(path), check=False)
    assert result.returncode != 0
    # (as a real kube-apiserver answers kubectl, word for word)
    assert result.stderr.strip() == (
        'The Deployment "web" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"web"}: `selector` does not match template `labels`'
    )
