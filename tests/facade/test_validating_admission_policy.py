"""ValidatingAdmissionPolicy enforced by serve's facade as kube-apiserver 1.30 enforces it.

No real kube-apiserver 1.30 runs here (the project's real server is 1.20, which has no
ValidatingAdmissionPolicy: alpha in 1.26, GA in 1.30). The expected answers are facts
read from the sources, named on each case:

* ``docs``: the Kubernetes documentation page "Validating Admission Policy" (v1.30):
  its examples (``demo-policy.example.com``: ``object.spec.replicas <= 5`` bound in
  namespaces labelled ``environment: test``; the replica limit taken from a parameter
  resource; ``validationActions`` Warn and Audit; ``matchConditions``; ``variables``
  with ``namespaceObject`` and a ``messageExpression``);
* ``dispatcher.go``: kubernetes/apiserver v0.30.0
  pkg/admission/plugin/policy/validating/dispatcher.go: the refusal is
  ``admission.NewForbidden`` (``<resource>.<group> "<name>" is forbidden: ...``) with
  ``ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request:
  <message>``, its reason the validation's (Invalid when unset) and the code of that
  reason (policy_decision.go: Forbidden 403, Unauthorized 401, RequestEntityTooLarge
  413, Invalid 422); a Warn action's header ``Validation failed for
  ValidatingAdmissionPolicy '<policy>' with binding '<binding>': <message>``;
  configuration errors ``failed to configure policy: ...`` / ``failed to configure
  binding: ...`` under failurePolicy Fail;
* ``validator.go``: the message is the messageExpression's (trimmed, one line), else
  ``message``, else ``failed expression: <expression>``; an expression's error follows
  failurePolicy; ``filter.go``: the error's words ``expression '<e>' resulted in error:
  <cel error>``;
* ``policy_dispatcher.go`` (pkg/admission/plugin/policy/generic, CollectParams) and
  ``admission_test.go`` (pkg/admission/plugin/policy/validating): the words of params
  that cannot be had (``no params found for policy binding with `Deny`
  parameterNotFoundAction``, ``failed to configure policy: failed to find resource
  referenced by paramKind: 'example.com/v1, Kind=BadParamKind'``, ``cannot use
  namespaced paramRef in policy binding that matches cluster-scoped resources``);
* ``matching.go`` (pkg/admission/plugin/policy/matching): excludeResourceRules and
  resourceNames; a binding's matchResources narrows the policy's matchConstraints.

Differences from a real server (documented in docs/serve.md): serve does not type-check
the expressions when a policy is written; an expression its CEL interpreter cannot read
(or one using ``authorizer``) is skipped instead. Serve serves only
admissionregistration.k8s.io/v1 of these kinds (v1beta1 is off by default in 1.30).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import connect, send

REG = "/apis/admissionregistration.k8s.io/v1"
POLICIES = f"{REG}/validatingadmissionpolicies"
BINDINGS = f"{REG}/validatingadmissionpolicybindings"
TEST_NS = "vap-test"  # labelled environment: test
PROD_NS = "vap-prod"  # labelled environment: prod


def deployment(name: str, replicas: int, image: str = "nginx") -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    }


def deployments(namespace: str) -> str:
    return f"/apis/apps/v1/namespaces/{namespace}/deployments"


def configmap(name: str, labels: dict[str, str] | None = None, **data: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


DEPLOYMENT_RULES = [
    {
        "apiGroups": ["apps"],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"],
        "resources": ["deployments"],
    }
]
CONFIGMAP_RULES = [
    {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE", "DELETE"],
        "resources": ["configmaps"],
    }
]


def policy(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("matchConstraints", {"resourceRules": DEPLOYMENT_RULES})
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": spec,
    }


def binding(name: str, policy_name: str, actions: list[str], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {"policyName": policy_name, "validationActions": actions, **spec},
    }


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        for name, env in ((TEST_NS, "test"), (PROD_NS, "prod")):
            namespace = {"metadata": {"name": name, "labels": {"environment": env}}}
            assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        yield running


class Installed:
    """Policies and bindings created for one test, deleted after it."""

    def __init__(self, server: KubeAPIServer) -> None:
        self.server = server
        self.paths: list[str] = []

    def add(self, *objects: dict[str, Any]) -> None:
        for obj in objects:
            base = POLICIES if obj["kind"] == "ValidatingAdmissionPolicy" else BINDINGS
            status, _, answer = send(self.server, "POST", base, json.dumps(obj))
            assert status == 201, answer
            self.paths.append(f"{base}/{obj['metadata']['name']}")

    def remove(self) -> None:
        for path in reversed(self.paths):
            assert send(self.server, "DELETE", path, "")[0] == 200


@pytest.fixture
def installed(server: KubeAPIServer) -> Iterator[Installed]:
    found = Installed(server)
    yield found
    found.remove()


def create(server: KubeAPIServer, path: str, obj: dict[str, Any]) -> tuple[int, list[str], Any]:
    return send(server, "POST", path, json.dumps(obj))


def delete(server: KubeAPIServer, path: str) -> None:
    send(server, "DELETE", path, "")


def assert_denied(
    answer: tuple[int, list[str], Any], resource: str, name: str, denied: str, code: int = 422
) -> None:
    status, _, body = answer
    reason = {403: "Forbidden", 401: "Unauthorized", 413: "RequestEntityTooLarge"}.get(
        code, "Invalid"
    )
    assert (status, body["reason"], body["code"]) == (code, reason, code), body
    assert body["message"] == f'{resource} "{name}" is forbidden: {denied}'
    assert body["details"]["causes"] == [{"message": denied}]


# -- the objects themselves ----------------------------------------------------------


def test_served_with_their_defaults(server: KubeAPIServer, installed: Installed) -> None:
    """Defaults (k8s pkg/apis/admissionregistration/v1 defaults: failurePolicy Fail;
    MatchResources matchPolicy Equivalent, namespaceSelector and objectSelector {};
    a rule's scope "*"), generation 1, and the discovery entries (policies with
    /status, bindings without)."""
    installed.add(
        policy("defaults.example.com", validations=[{"expression": "true"}]),
        binding(
            "defaults-binding.example.com",
            "defaults.example.com",
            ["Deny"],
            matchResources={"resourceRules": CONFIGMAP_RULES},
        ),
    )
    stored = send(server, "GET", f"{POLICIES}/defaults.example.com", "")[2]
    assert stored["spec"]["failurePolicy"] == "Fail"
    match = stored["spec"]["matchConstraints"]
    assert match["matchPolicy"] == "Equivalent"
    assert match["namespaceSelector"] == {} and match["objectSelector"] == {}
    assert match["resourceRules"][0]["scope"] == "*"
    assert stored["metadata"]["generation"] == 1
    bound = send(server, "GET", f"{BINDINGS}/defaults-binding.example.com", "")[2]
    assert bound["spec"]["matchResources"]["matchPolicy"] == "Equivalent"
    assert bound["spec"]["matchResources"]["namespaceSelector"] == {}
    names = [r["name"] for r in send(server, "GET", REG, "")[2]["resources"]]
    assert "validatingadmissionpolicies/status" in names
    assert "validatingadmissionpolicybindings" in names
    assert "validatingadmissionpolicybindings/status" not in names


@pytest.mark.parametrize(
    ("kind", "spec", "expected"),
    [
        (
            "policy",
            {"failurePolicy": "Sometimes", "validations": [{"expression": "true"}]},
            [
                'spec.failurePolicy: Unsupported value: "Sometimes": supported values: '
                '"Fail", "Ignore"',
                "spec.matchConstraints: Required value",
            ],
        ),
        (
            "policy",
            {"matchConstraints": {}},
            [
                "spec.matchConstraints.resourceRules: Required value",
                "spec.validations: Required value: validations or auditAnnotations must "
                "contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must "
                "contain at least one item",
            ],
        ),
        (
            "policy",
            {
                "matchConstraints": {"resourceRules": DEPLOYMENT_RULES},
                "variables": [{"name": "in", "expression": "1"}],
                "validations": [{"expression": " ", "reason": "Teapot"}],
            },
            [
                'spec.variables[0].name: Invalid value: "in": name is not a valid CEL identifier',
                "spec.validations[0].expression: Required value: expression is not specified",
                'spec.validations[0].reason: Unsupported value: "Teapot": supported values: '
                '"Forbidden", "Invalid", "RequestEntityTooLarge", "Unauthorized"',
            ],
        ),
        (
            "binding",
            {"validationActions": []},
            [
                "spec.policyName: Required value",
                "spec.validationActions: Required value: at least one validation action is "
                "required",
            ],
        ),
        (
            "binding",
            {"policyName": "p", "validationActions": ["Deny", "Warn", "Deny"]},
            [
                'spec.validationActions[2]: Duplicate value: "Deny"',
                "spec.validationActions: Invalid value: []admissionregistration.ValidationAction"
                '{"Deny", "Warn", "Deny"}: must not '
                "contain both Deny and Warn (repeating the same validation failure "
                "information in the API response and headers serves no purpose)",
            ],
        ),
        (
            "binding",
            {"policyName": "p", "validationActions": ["Deny"], "paramRef": {}},
            [
                "spec.paramRef: Required value: one of name or selector must be specified",
                "spec.paramRef.parameterNotFoundAction: Required value",
            ],
        ),
    ],
)
def test_the_objects_own_validation(
    server: KubeAPIServer, kind: str, spec: dict[str, Any], expected: list[str]
) -> None:
    """k8s pkg/apis/admissionregistration/validation (validateValidatingAdmissionPolicySpec,
    validateValidatingAdmissionPolicyBindingSpec, validateParamRef,
    validateValidationActions): the paths, reasons and words, in order."""
    obj: dict[str, Any] = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy"
        if kind == "policy"
        else "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "invalid.example.com"},
        "spec": spec,
    }
    status, _, body = send(
        server, "POST", POLICIES if kind == "policy" else BINDINGS, json.dumps(obj)
    )
    assert status == 422, body
    causes = [f"{c['field']}: {c['message']}" for c in body["details"]["causes"]]
    assert causes == expected


# -- the docs' examples --------------------------------------------------------------


def test_replicas_limit_in_the_bound_namespaces(
    server: KubeAPIServer, installed: Installed
) -> None:
    """docs: demo-policy.example.com bound to namespaces labelled environment: test;
    dispatcher.go for the words (no reason: Invalid, 422)."""
    installed.add(
        policy(
            "demo-policy.example.com",
            validations=[{"expression": "object.spec.replicas <= 5"}],
        ),
        binding(
            "demo-binding-test.example.com",
            "demo-policy.example.com",
            ["Deny"],
            matchResources={"namespaceSelector": {"matchLabels": {"environment": "test"}}},
        ),
    )
    answer = create(server, deployments(TEST_NS), deployment("nginx", 6))
    assert_denied(
        answer,
        "deployments.apps",
        "nginx",
        "ValidatingAdmissionPolicy 'demo-policy.example.com' with binding "
        "'demo-binding-test.example.com' denied request: failed expression: "
        "object.spec.replicas <= 5",
    )
    # Not in a bound namespace: allowed; 5 replicas: allowed.
    assert create(server, deployments(PROD_NS), deployment("nginx", 6))[0] == 201
    assert create(server, deployments(TEST_NS), deployment("nginx", 5))[0] == 201
    # An update is checked too (the rule lists UPDATE).
    path = f"{deployments(TEST_NS)}/nginx"
    current = send(server, "GET", path, "")[2]
    current["spec"]["replicas"] = 7
    status, _, body = send(server, "PUT", path, json.dumps(current))
    assert (status, body["reason"]) == (422, "Invalid")
    delete(server, path)
    delete(server, f"{deployments(PROD_NS)}/nginx")


def test_params_replica_limit(server: KubeAPIServer, installed: Installed) -> None:
    """docs: the replica limit read from a parameter resource named by the binding's
    paramRef (the page uses a ReplicaLimit CRD; a ConfigMap here), with its
    ``reason: Invalid`` and a messageExpression built from the params."""
    installed.add(
        policy(
            "replicalimit-policy.example.com",
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
            validations=[
                {
                    "expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                    "messageExpression": "'object.spec.replicas must be no greater than ' "
                    "+ params.data.maxReplicas",
                    "reason": "Invalid",
                }
            ],
        ),
        binding(
            "replicalimit-binding-test.example.com",
            "replicalimit-policy.example.com",
            ["Deny"],
            paramRef={
                "name": "replica-limit-test.example.com",
                "namespace": "default",
                "parameterNotFoundAction": "Deny",
            },
            matchResources={"namespaceSelector": {"matchLabels": {"environment": "test"}}},
        ),
    )
    prefix = (
        "ValidatingAdmissionPolicy 'replicalimit-policy.example.com' with binding "
        "'replicalimit-binding-test.example.com' denied request: "
    )
    # No param yet, parameterNotFoundAction Deny (policy_dispatcher.go's words).
    assert_denied(
        create(server, deployments(TEST_NS), deployment("limited", 1)),
        "deployments.apps",
        "limited",
        prefix + "failed to configure binding: no params found for policy binding with "
        "`Deny` parameterNotFoundAction",
    )
    params = configmap("replica-limit-test.example.com", maxReplicas="3")
    assert create(server, "/api/v1/namespaces/default/configmaps", params)[0] == 201
    try:
        assert_denied(
            create(server, deployments(TEST_NS), deployment("limited", 4)),
            "deployments.apps",
            "limited",
            prefix + "object.spec.replicas must be no greater than 3",
        )
        assert create(server, deployments(TEST_NS), deployment("limited", 3))[0] == 201
        delete(server, f"{deployments(TEST_NS)}/limited")
    finally:
        delete(server, "/api/v1/namespaces/default/configmaps/replica-limit-test.example.com")


def test_params_by_selector_and_allow_when_none(
    server: KubeAPIServer, installed: Installed
) -> None:
    """docs / policy_dispatcher.go: a paramRef selector evaluates the policy once per
    matching param (any failing denies); none found with parameterNotFoundAction Allow:
    the request is allowed. The params are looked up in the request's namespace when
    the paramRef names none."""
    installed.add(
        policy(
            "selector-policy.example.com",
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
            validations=[
                {
                    "expression": "object.spec.replicas <= int(params.data.max)",
                    "messageExpression": "'at most ' + params.data.max + ' (' + "
                    "params.metadata.name + ')'",
                }
            ],
        ),
        binding(
            "selector-binding.example.com",
            "selector-policy.example.com",
            ["Deny"],
            paramRef={
                "selector": {"matchLabels": {"limits": "replicas"}},
                "parameterNotFoundAction": "Allow",
            },
        ),
    )
    assert create(server, deployments(PROD_NS), deployment("sel", 9))[0] == 201
    delete(server, f"{deployments(PROD_NS)}/sel")
    cms = f"/api/v1/namespaces/{PROD_NS}/configmaps"
    create(server, cms, configmap("loose", {"limits": "replicas"}, max="10"))
    create(server, cms, configmap("strict", {"limits": "replicas"}, max="2"))
    try:
        assert_denied(
            create(server, deployments(PROD_NS), deployment("sel", 9)),
            "deployments.apps",
            "sel",
            "ValidatingAdmissionPolicy 'selector-policy.example.com' with binding "
            "'selector-binding.example.com' denied request: at most 2 (strict)",
        )
        # The namespace-less paramRef looks in the request's namespace: none in TEST_NS.
        assert create(server, deployments(TEST_NS), deployment("sel", 9))[0] == 201
        delete(server, f"{deployments(TEST_NS)}/sel")
    finally:
        delete(server, f"{cms}/loose")
        delete(server, f"{cms}/strict")


def test_warn_and_audit(server: KubeAPIServer, installed: Installed) -> None:
    """docs: validationActions [Warn, Audit] let the request through with a warning;
    dispatcher.go / admission_test.go for the warning's words."""
    installed.add(
        policy(
            "denypolicy.example.com",
            validations=[{"expression": "object.spec.replicas <= 5", "message": "I'm sorry Dave"}],
        ),
        binding("denybinding.example.com", "denypolicy.example.com", ["Warn", "Audit"]),
    )
    status, warnings, _ = create(server, deployments(PROD_NS), deployment("warned", 6))
    assert status == 201
    assert warnings == [
        "Validation failed for ValidatingAdmissionPolicy 'denypolicy.example.com' with "
        "binding 'denybinding.example.com': I'm sorry Dave"
    ]
    delete(server, f"{deployments(PROD_NS)}/warned")
    # Audit alone: nothing a client sees.
    installed.add(binding("auditbinding.example.com", "denypolicy.example.com", ["Audit"]))
    send(server, "DELETE", f"{BINDINGS}/denybinding.example.com", "")
    installed.paths.remove(f"{BINDINGS}/denybinding.example.com")
    status, warnings, _ = create(server, deployments(PROD_NS), deployment("audited", 6))
    assert (status, warnings) == (201, [])
    delete(server, f"{deployments(PROD_NS)}/audited")


def test_match_conditions(server: KubeAPIServer, installed: Installed) -> None:
    """docs: matchConditions filter the requests a policy checks (all true to apply);
    here the policy skips objects labelled ``exempt``."""
    installed.add(
        policy(
            "conditions.example.com",
            matchConstraints={"resourceRules": CONFIGMAP_RULES},
            matchConditions=[
                {
                    "name": "exclude-leases",
                    "expression": "!(request.resource.group == 'coordination.k8s.io' && "
                    "request.resource.resource == 'leases')",
                },
                {
                    "name": "not-exempt",
                    "expression": "!has(object.metadata.labels) || "
                    "!('exempt' in object.metadata.labels)",
                },
            ],
            validations=[{"expression": "has(object.data) && 'owner' in object.data"}],
        ),
        binding("conditions-binding.example.com", "conditions.example.com", ["Deny"]),
    )
    cms = f"/api/v1/namespaces/{PROD_NS}/configmaps"
    assert_denied(
        create(server, cms, configmap("plain", x="1")),
        "configmaps",
        "plain",
        "ValidatingAdmissionPolicy 'conditions.example.com' with binding "
        "'conditions-binding.example.com' denied request: failed expression: "
        "has(object.data) && 'owner' in object.data",
    )
    assert create(server, cms, configmap("free", {"exempt": "yes"}, x="1"))[0] == 201
    assert create(server, cms, configmap("owned", owner="me"))[0] == 201
    delete(server, f"{cms}/free")
    delete(server, f"{cms}/owned")


def test_variables_namespace_object_and_message_expression(
    server: KubeAPIServer, installed: Installed
) -> None:
    """docs: image-matches-namespace-environment.policy.example.com (variables read
    from namespaceObject, a variable built from another, a messageExpression)."""
    installed.add(
        policy(
            "image-matches-namespace-environment.policy.example.com",
            variables=[
                {
                    "name": "environment",
                    "expression": "'environment' in namespaceObject.metadata.labels ? "
                    "namespaceObject.metadata.labels['environment'] : 'prod'",
                },
                {
                    "name": "exempt",
                    "expression": "'exempt' in namespaceObject.metadata.labels && "
                    "namespaceObject.metadata.labels['exempt'] == 'true'",
                },
                {"name": "containers", "expression": "object.spec.template.spec.containers"},
                {
                    "name": "containersToCheck",
                    "expression": "variables.containers.filter(c, "
                    "c.image.contains('example.com/'))",
                },
            ],
            validations=[
                {
                    "expression": "variables.exempt || variables.containersToCheck.all(c, "
                    "c.image.startsWith(variables.environment + '.'))",
                    "messageExpression": "'only ' + variables.environment + ' images are "
                    "allowed in namespace ' + namespaceObject.metadata.name",
                }
            ],
        ),
        binding(
            "image-matches-namespace-environment.binding.example.com",
            "image-matches-namespace-environment.policy.example.com",
            ["Deny"],
        ),
    )
    assert_denied(
        create(server, deployments(TEST_NS), deployment("img", 1, "prod.example.com/nginx")),
        "deployments.apps",
        "img",
        "ValidatingAdmissionPolicy 'image-matches-namespace-environment.policy.example.com' "
        "with binding 'image-matches-namespace-environment.binding.example.com' denied "
        f"request: only test images are allowed in namespace {TEST_NS}",
    )
    assert (
        create(server, deployments(TEST_NS), deployment("img", 1, "test.example.com/x"))[0] == 201
    )
    assert create(server, deployments(PROD_NS), deployment("img", 1, "docker.io/x"))[0] == 201
    delete(server, f"{deployments(TEST_NS)}/img")
    delete(server, f"{deployments(PROD_NS)}/img")


# -- reasons, errors, failure policy ---------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "code"),
    [("Forbidden", 403), ("Unauthorized", 401), ("RequestEntityTooLarge", 413)],
)
def test_reason_sets_the_code(
    server: KubeAPIServer, installed: Installed, reason: str, code: int
) -> None:
    """policy_decision.go: reasonToCode."""
    installed.add(
        policy(
            "reason.example.com",
            validations=[{"expression": "object.spec.replicas < 2", "reason": reason}],
        ),
        binding("reason-binding.example.com", "reason.example.com", ["Deny"]),
    )
    assert_denied(
        create(server, deployments(PROD_NS), deployment("reasoned", 3)),
        "deployments.apps",
        "reasoned",
        "ValidatingAdmissionPolicy 'reason.example.com' with binding "
        "'reason-binding.example.com' denied request: failed expression: "
        "object.spec.replicas < 2",
        code,
    )


@pytest.mark.parametrize("failure_policy", ["Fail", "Ignore"])
def test_expression_error_follows_failure_policy(
    server: KubeAPIServer, installed: Installed, failure_policy: str
) -> None:
    """validator.go / filter.go: a runtime error refuses under Fail (its words), is
    ignored under Ignore; composition.go: a variable's error names the variable."""
    installed.add(
        policy(
            "errors.example.com",
            failurePolicy=failure_policy,
            variables=[{"name": "strategy", "expression": "object.spec.strategy.type"}],
            validations=[
                {"expression": "object.spec.paused == false"},
                {"expression": "variables.strategy != 'Recreate'"},
            ],
        ),
        binding("errors-binding.example.com", "errors.example.com", ["Deny"]),
    )
    answer = create(server, deployments(PROD_NS), deployment("erring", 1))
    if failure_policy == "Ignore":
        assert answer[0] == 201
        delete(server, f"{deployments(PROD_NS)}/erring")
        return
    assert_denied(
        answer,
        "deployments.apps",
        "erring",
        "ValidatingAdmissionPolicy 'errors.example.com' with binding "
        "'errors-binding.example.com' denied request: expression "
        "'object.spec.paused == false' resulted in error: no such key: paused",
    )


def test_unknown_param_kind(server: KubeAPIServer, installed: Installed) -> None:
    """admission_test.go (TestDefinitionDoesntMatch's neighbour, the bad param kind):
    ``failed to configure policy: failed to find resource referenced by paramKind``,
    reported without the binding."""
    installed.add(
        policy(
            "badparams.example.com",
            paramKind={"apiVersion": "example.com/v1", "kind": "BadParamKind"},
            validations=[{"expression": "true"}],
        ),
        binding(
            "badparams-binding.example.com",
            "badparams.example.com",
            ["Deny"],
            paramRef={"name": "x", "parameterNotFoundAction": "Allow"},
        ),
    )
    assert_denied(
        create(server, deployments(PROD_NS), deployment("bad", 1)),
        "deployments.apps",
        "bad",
        "ValidatingAdmissionPolicy 'badparams.example.com' denied request: failed to "
        "configure policy: failed to find resource referenced by paramKind: "
        "'example.com/v1, Kind=BadParamKind'",
    )


def test_namespaced_params_for_a_cluster_scoped_request(
    server: KubeAPIServer, installed: Installed
) -> None:
    """admission_test.go / policy_dispatcher.go: a namespaced param kind without a
    paramRef namespace cannot serve a cluster-scoped request."""
    installed.add(
        policy(
            "nsparams.example.com",
            matchConstraints={
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["namespaces"],
                    }
                ]
            },
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
            validations=[{"expression": "true"}],
        ),
        binding(
            "nsparams-binding.example.com",
            "nsparams.example.com",
            ["Deny"],
            paramRef={"name": "x", "parameterNotFoundAction": "Allow"},
        ),
    )
    assert_denied(
        create(server, "/api/v1/namespaces", {"metadata": {"name": "vap-cluster"}}),
        "namespaces",
        "vap-cluster",
        "ValidatingAdmissionPolicy 'nsparams.example.com' with binding "
        "'nsparams-binding.example.com' denied request: failed to configure binding: "
        "cannot use namespaced paramRef in policy binding that matches cluster-scoped "
        "resources",
    )


# -- matching ----------------------------------------------------------------------


def test_delete_old_object_resource_names_and_excludes(
    server: KubeAPIServer, installed: Installed
) -> None:
    """matching.go: resourceNames narrow a rule, excludeResourceRules win; on DELETE
    ``object`` is null and ``oldObject`` the stored object; ``request`` carries the
    operation and name."""
    rules = [dict(CONFIGMAP_RULES[0], resourceNames=["keep-me", "also-me"])]
    installed.add(
        policy(
            "keep.example.com",
            matchConstraints={
                "resourceRules": rules,
                "excludeResourceRules": [
                    dict(CONFIGMAP_RULES[0], resourceNames=["also-me"]),
                ],
            },
            validations=[
                {
                    "expression": "request.operation != 'DELETE' || object != null || "
                    "oldObject.metadata.name != request.name",
                    "message": "this ConfigMap stays",
                    "reason": "Forbidden",
                }
            ],
        ),
        binding("keep-binding.example.com", "keep.example.com", ["Deny"]),
    )
    cms = f"/api/v1/namespaces/{PROD_NS}/configmaps"
    for name in ("keep-me", "also-me", "other"):
        assert create(server, cms, configmap(name))[0] == 201
    status, _, body = send(server, "DELETE", f"{cms}/keep-me", "")
    assert (status, body["message"]) == (
        403,
        'configmaps "keep-me" is forbidden: ValidatingAdmissionPolicy '
        "'keep.example.com' with binding 'keep-binding.example.com' denied request: "
        "this ConfigMap stays",
    )
    assert send(server, "DELETE", f"{cms}/also-me", "")[0] == 200  # excluded
    assert send(server, "DELETE", f"{cms}/other", "")[0] == 200  # not named
    installed.remove()
    installed.paths.clear()
    assert send(server, "DELETE", f"{cms}/keep-me", "")[0] == 200


def test_not_evaluable_expressions_are_skipped(server: KubeAPIServer, installed: Installed) -> None:
    """Serve's difference: ``authorizer`` (not evaluated here) and an expression the
    interpreter cannot read are skipped; the policy's other validations still run. A
    match condition it cannot evaluate makes the policy not apply.
    The policy's own objects are never checked (kube-apiserver's excluded resources)."""
    installed.add(
        policy(
            "skipped.example.com",
            matchConstraints={
                "resourceRules": [
                    {
                        "apiGroups": ["*"],
                        "apiVersions": ["*"],
                        "operations": ["*"],
                        "resources": ["*"],
                    }
                ]
            },
            validations=[
                {"expression": "authorizer.group('apps').resource('deployments').check('x')"},
                {"expression": "object.metadata.name.unknownFunction()"},
                {"expression": "object == null || object.metadata.name != 'refused'"},
            ],
        ),
        binding("skipped-binding.example.com", "skipped.example.com", ["Deny"]),
    )
    cms = f"/api/v1/namespaces/{PROD_NS}/configmaps"
    assert create(server, cms, configmap("accepted"))[0] == 201
    assert create(server, cms, configmap("refused"))[0] == 422
    # A match condition serve cannot evaluate: the policy does not apply.
    installed.add(
        policy(
            "skipped-condition.example.com",
            matchConstraints={"resourceRules": CONFIGMAP_RULES},
            matchConditions=[
                {"name": "authz", "expression": "authorizer.path('/x').check('get').allowed()"}
            ],
            validations=[{"expression": "false"}],
        ),
        binding("skipped-condition-binding.example.com", "skipped-condition.example.com", ["Deny"]),
    )
    assert create(server, cms, configmap("accepted-too"))[0] == 201
    delete(server, f"{cms}/accepted-too")
    delete(server, f"{cms}/accepted")
    # A policy write is not checked by the policies (excluded resources).
    installed.add(policy("refused", validations=[{"expression": "true"}]))


def test_status_writes_patches_and_dry_runs(server: KubeAPIServer, installed: Installed) -> None:
    """filter.go (CreateAdmissionRequest): ``request.subResource`` names the subresource
    (empty on the object itself), ``request.dryRun`` the dry run; a rule lists
    ``deployments/status`` to see status writes; a merge patch is checked as the
    patched object."""
    rules = [dict(DEPLOYMENT_RULES[0], resources=["deployments", "deployments/status"])]
    installed.add(
        policy(
            "subresources.example.com",
            matchConstraints={"resourceRules": rules},
            validations=[
                {
                    "expression": "request.subResource != 'status' || "
                    "!has(object.status.replicas) || object.status.replicas < 5",
                    "message": "status too big",
                },
                {
                    "expression": "!has(object.metadata.labels) || "
                    "!('frozen' in object.metadata.labels) || request.dryRun",
                    "message": "frozen",
                },
            ],
        ),
        binding("subresources-binding.example.com", "subresources.example.com", ["Deny"]),
    )
    path = f"{deployments(PROD_NS)}/sub"
    assert create(server, deployments(PROD_NS), deployment("sub", 1))[0] == 201
    merge = "application/merge-patch+json"
    status, _, body = send(
        server, "PATCH", f"{path}/status", json.dumps({"status": {"replicas": 7}}), merge
    )
    assert (status, body["message"]) == (
        422,
        'deployments.apps "sub" is forbidden: ValidatingAdmissionPolicy '
        "'subresources.example.com' with binding 'subresources-binding.example.com' denied "
        "request: status too big",
    )
    frozen = json.dumps({"metadata": {"labels": {"frozen": "yes"}}})
    assert send(server, "PATCH", path, frozen, merge)[0] == 422
    assert send(server, "PATCH", f"{path}?dryRun=All", frozen, merge)[0] == 200
    delete(server, path)


def test_an_error_follows_the_bindings_actions(server: KubeAPIServer, installed: Installed) -> None:
    """dispatcher.go: an expression's error under failurePolicy Fail is a denied decision
    the binding's validationActions act on (Warn: a warning, the request goes through);
    composition.go: a variable's error names the variable."""
    installed.add(
        policy(
            "warn-errors.example.com",
            variables=[{"name": "strategy", "expression": "object.spec.missing.type"}],
            validations=[{"expression": "variables.strategy != 'Recreate'"}],
        ),
        binding("warn-errors-binding.example.com", "warn-errors.example.com", ["Warn"]),
    )
    status, warnings, _ = create(server, deployments(PROD_NS), deployment("warn-err", 1))
    assert status == 201
    assert warnings == [
        "Validation failed for ValidatingAdmissionPolicy 'warn-errors.example.com' with "
        "binding 'warn-errors-binding.example.com': expression "
        "'variables.strategy != 'Recreate'' resulted in error: composited variable "
        '"strategy" fails to evaluate: no such key: missing'
    ]
    delete(server, f"{deployments(PROD_NS)}/warn-err")


def test_tables(server: KubeAPIServer, installed: Installed) -> None:
    """k8s pkg/printers/internalversion/printers.go (printValidatingAdmissionPolicy,
    printValidatingAdmissionPolicyBinding): NAME, VALIDATIONS, PARAMKIND (``<unset>``
    or apiVersion/kind), AGE; NAME, POLICYNAME, PARAMREF (``<namespace or *>/<name>``,
    else the selector as Go's String() prints it), AGE."""
    installed.add(
        policy(
            "table.example.com",
            paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
            validations=[{"expression": "true"}, {"expression": "true"}],
        ),
        binding(
            "table-a.example.com",
            "table.example.com",
            ["Audit"],
            paramRef={"name": "limits", "parameterNotFoundAction": "Allow"},
        ),
        binding(
            "table-b.example.com",
            "table.example.com",
            ["Audit"],
            paramRef={
                "selector": {"matchLabels": {"limits": "replicas"}},
                "parameterNotFoundAction": "Allow",
            },
        ),
    )
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}

    def table(path: str) -> list[list[Any]]:
        conn = connect(server)
        try:
            conn.request("GET", path, headers=accept)
            body = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        return [row["cells"][:-1] for row in body["rows"]]

    assert table(f"{POLICIES}/table.example.com") == [["table.example.com", 2, "v1/ConfigMap"]]
    assert table(BINDINGS) == [
        ["table-a.example.com", "table.example.com", "*/limits"],
        [
            "table-b.example.com",
            "table.example.com",
            "&LabelSelector{MatchLabels:map[string]string{limits: replicas,},"
            "MatchExpressions:[]LabelSelectorRequirement{},}",
        ],
    ]


def test_an_equivalent_version_is_matched_and_converted(
    server: KubeAPIServer, installed: Installed
) -> None:
    """matching.go: under matchPolicy Equivalent a rule for autoscaling/v1 matches a
    write through autoscaling/v2, and the policy sees the object (and ``request.kind``)
    in the matched version (dispatcher.go: NewVersionedAttributes with the matched
    kind); under Exact it does not match."""
    rules = [
        {
            "apiGroups": ["autoscaling"],
            "apiVersions": ["v1"],
            "operations": ["CREATE"],
            "resources": ["horizontalpodautoscalers"],
        }
    ]
    installed.add(
        policy(
            "hpa.example.com",
            matchConstraints={"resourceRules": rules},
            validations=[
                {
                    "expression": "object.apiVersion == 'autoscaling/v1' && "
                    "request.kind.version == 'v1' && request.requestKind.version == 'v2' && "
                    "object.spec.maxReplicas <= 3",
                    "message": "seen as v1, at most 3",
                }
            ],
        ),
        binding("hpa-binding.example.com", "hpa.example.com", ["Deny"]),
    )
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
        },
    }
    path = f"/apis/autoscaling/v2/namespaces/{PROD_NS}/horizontalpodautoscalers"
    status, _, body = create(server, path, hpa)
    assert (status, body["message"]) == (
        422,
        'horizontalpodautoscalers.autoscaling "web" is forbidden: ValidatingAdmissionPolicy '
        "'hpa.example.com' with binding 'hpa-binding.example.com' denied request: seen as "
        "v1, at most 3",
    )
    installed.add(
        policy(
            "hpa-exact.example.com",
            matchConstraints={"resourceRules": rules, "matchPolicy": "Exact"},
            validations=[{"expression": "false"}],
        ),
        binding("hpa-exact-binding.example.com", "hpa-exact.example.com", ["Deny"]),
    )
    hpa["spec"]["maxReplicas"] = 3
    assert create(server, path, hpa)[0] == 201
    delete(server, f"{path}/web")


def test_a_policy_needs_a_binding_and_a_binding_its_policy(
    server: KubeAPIServer, installed: Installed
) -> None:
    """docs: "At least a ValidatingAdmissionPolicy and a corresponding
    ValidatingAdmissionPolicyBinding must be defined for a policy to have an effect"."""
    installed.add(
        policy("unbound.example.com", validations=[{"expression": "false"}]),
        binding("orphan-binding.example.com", "missing.example.com", ["Deny"]),
    )
    assert create(server, deployments(PROD_NS), deployment("free", 1))[0] == 201
    delete(server, f"{deployments(PROD_NS)}/free")


@pytest.mark.parametrize(
    ("variables", "expression", "denied"),
    [
        # composition_test.go "simple"
        ([("name", "object.metadata.name")], "variables.name == 'endpoints1'", None),
        # composition_test.go "delayed eval error"
        (
            [("count", "object.subsets[114514].addresses.size()")],
            "variables.count == 810",
            "expression 'variables.count == 810' resulted in error: composited variable "
            '"count" fails to evaluate: index out of bounds: 114514',
        ),
        # composition_test.go "single boolean variable in expression"
        ([("fortuneTelling", "true")], "variables.fortuneTelling", None),
        # composition_test.go "variable of a list"
        ([("list", "[1, 2, 3, 4]")], "variables.list.sum() == 10", None),
    ],
)
def test_composition_cases(
    server: KubeAPIServer,
    installed: Installed,
    variables: list[tuple[str, str]],
    expression: str,
    denied: str | None,
) -> None:
    """kubernetes/apiserver v0.30.0 pkg/admission/plugin/cel/composition_test.go
    (TestCompositedPolicies): its variables and expressions over an Endpoints named
    ``endpoints1``; the errors' words under failurePolicy Fail (filter.go wraps them)."""
    installed.add(
        policy(
            "composition.example.com",
            matchConstraints={
                "resourceRules": [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["CREATE"],
                        "resources": ["endpoints"],
                    }
                ]
            },
            variables=[{"name": n, "expression": e} for n, e in variables],
            validations=[{"expression": expression}],
        ),
        binding("composition-binding.example.com", "composition.example.com", ["Deny"]),
    )
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "endpoints1"},
        "subsets": [{"addresses": [{"ip": "192.168.1.1"}]}],
    }
    path = f"/api/v1/namespaces/{PROD_NS}/endpoints"
    answer = create(server, path, endpoints)
    if denied is None:
        assert answer[0] == 201, answer
        delete(server, f"{path}/endpoints1")
        return
    assert_denied(
        answer,
        "endpoints",
        "endpoints1",
        "ValidatingAdmissionPolicy 'composition.example.com' with binding "
        f"'composition-binding.example.com' denied request: {denied}",
    )


@pytest.mark.parametrize(
    ("expression", "paramed", "denied"),
    [
        # filter_test.go "test Object null in delete"
        ("oldObject != null && object == null", False, None),
        # filter_test.go "test runtime error"
        (
            "oldObject.x == 100",
            False,
            "expression 'oldObject.x == 100' resulted in error: no such key: x",
        ),
        # filter_test.go "test deny paramKind without paramRef"
        ("params != null", True, "failed expression: params != null"),
        # filter_test.go "test allow paramKind without paramRef"
        ("params == null", True, None),
    ],
)
def test_filter_cases_on_delete(
    server: KubeAPIServer,
    installed: Installed,
    expression: str,
    paramed: bool,
    denied: str | None,
) -> None:
    """kubernetes/apiserver v0.30.0 pkg/admission/plugin/cel/filter_test.go (TestFilter):
    on a delete ``object`` is null and ``oldObject`` the object; a paramKind with no
    paramRef in the binding gives ``params`` null (policy_dispatcher.go)."""
    extra: dict[str, Any] = {}
    if paramed:
        extra["paramKind"] = {"apiVersion": "v1", "kind": "ConfigMap"}
    cms = f"/api/v1/namespaces/{PROD_NS}/configmaps"
    path = f"{cms}/filtered"
    assert create(server, cms, configmap("filtered"))[0] == 201  # (before the policy)
    installed.add(
        policy(
            "filter.example.com",
            matchConstraints={"resourceRules": CONFIGMAP_RULES},
            validations=[{"expression": expression}],
            **extra,
        ),
        binding("filter-binding.example.com", "filter.example.com", ["Deny"]),
    )
    status, _, body = send(server, "DELETE", path, "")
    if denied is None:
        assert status == 200, body
        return
    assert (status, body["message"]) == (
        422,
        'configmaps "filtered" is forbidden: ValidatingAdmissionPolicy '
        "'filter.example.com' with binding 'filter-binding.example.com' denied request: " + denied,
    )
    installed.remove()
    installed.paths.clear()
    assert send(server, "DELETE", path, "")[0] == 200


def test_generation_follows_the_spec(server: KubeAPIServer, installed: Installed) -> None:
    """k8s pkg/registry/admissionregistration/validatingadmissionpolicy(binding)/strategy.go:
    generation 1 at create, +1 when the spec changes, kept otherwise."""
    installed.add(policy("generation.example.com", validations=[{"expression": "true"}]))
    path = f"{POLICIES}/generation.example.com"
    merge = "application/merge-patch+json"
    labels = json.dumps({"metadata": {"labels": {"a": "b"}}})
    assert send(server, "PATCH", path, labels, merge)[2]["metadata"]["generation"] == 1
    spec = json.dumps({"spec": {"failurePolicy": "Ignore"}})
    assert send(server, "PATCH", path, spec, merge)[2]["metadata"]["generation"] == 2
