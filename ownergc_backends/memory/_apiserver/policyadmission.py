"""ValidatingAdmissionPolicy: CEL validations of the stored policies, enforced on writes.

kube-apiserver 1.30 runs the ``ValidatingAdmissionPolicy`` plugin just before
``ValidatingAdmissionWebhook``; so does the facade. For each stored
``ValidatingAdmissionPolicyBinding`` (admissionregistration.k8s.io/v1) whose policy
exists, a write is checked when it matches the policy's ``matchConstraints`` and the
binding's ``matchResources`` (rules with their equivalents, ``resourceNames``,
``excludeResourceRules``, namespace and object selectors) and every
``matchConditions`` expression is true; then each ``validations`` expression runs with
``object``, ``oldObject``, ``request``, ``params``, ``namespaceObject`` and
``variables`` (evaluated when first read). A failed validation does what the
binding's ``validationActions`` say: ``Deny`` refuses the request, ``Warn`` adds a
``Warning`` header, ``Audit`` nothing a client sees (serve writes no audit log).
Expression errors, unknown param kinds and missing params follow the policy's
``failurePolicy``.

The words, reasons and codes are kubernetes/apiserver v0.30.0's
(``pkg/admission/plugin/policy/validating/dispatcher.go``, ``validator.go``,
``policy_decision.go``, ``pkg/admission/plugin/policy/generic/policy_dispatcher.go``,
``pkg/admission/plugin/policy/matching/matching.go``,
``pkg/admission/plugin/cel/filter.go`` and ``composition.go``); the code is this
project's own.

Where serve differs: a real server type-checks the expressions when the policy is
written (refusing some, reporting the rest in ``status.typeChecking``); serve does
not, and an expression its CEL interpreter cannot read or evaluate
(:class:`~.._cel.Unsupported`: a syntax it lacks, ``authorizer``, a function it does
not have, a field of null) is never a reason to refuse a request: such a validation is
skipped, such a match condition makes the policy not apply. ``auditAnnotations`` are
not evaluated (they go only to the audit log); no cost budget is kept.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from ownergc.errors import APIError, NotFound, RESTMappingError
from ownergc.protocols import APIResource, JSONDict

from .. import _webhooks
from .._cel import CelError, Unsupported, compile_rule
from ..store import InMemoryStore
from .admission import AdmissionAttributes
from .webhookadmission import StoreWebhookSource, _dispatch_attributes

__all__ = ["POLICIES", "POLICY_BINDINGS", "ValidatingAdmissionPolicies"]

_REG: Final = _webhooks.REGISTRATION
POLICIES: Final = APIResource(
    _REG, "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False
)
POLICY_BINDINGS: Final = APIResource(
    _REG, "v1", "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", False
)
#: The status code of each reason a validation may give (policy_decision.go).
_CODES: Final = {
    "Forbidden": 403,
    "Unauthorized": 401,
    "RequestEntityTooLarge": 413,
    "Invalid": 422,
}
#: celconfig.MaxEvaluatedMessageExpressionSizeBytes.
_MESSAGE_LIMIT: Final = 5 * 1024


def _count(store: InMemoryStore, resource: APIResource) -> int:
    try:
        return store.object_count(resource)
    except NotFound:
        return 0


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def _spec(obj: Mapping[str, Any]) -> JSONDict:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


class _Refused(Exception):
    """A policy or binding that cannot be applied (failure policy decides)."""


class _Variables(dict[str, Any]):
    """``variables``: each composited variable evaluated when first read."""

    def __init__(self, declared: Sequence[tuple[str, str]], env: dict[str, Any]) -> None:
        super().__init__()
        self._declared = dict(declared)
        self._env = env

    def __contains__(self, key: object) -> bool:
        return key in self._declared

    def __iter__(self) -> Iterator[str]:
        return iter(self._declared)

    def __len__(self) -> int:
        return len(self._declared)

    def __getitem__(self, key: str) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if key not in self._declared:
            raise KeyError(key)
        try:
            value = compile_rule(self._declared[key]).evaluate(self._env)
        except CelError as exc:
            raise CelError(f'composited variable "{key}" fails to evaluate: {exc}') from None
        dict.__setitem__(self, key, value)
        return value


class _Request:
    """One write as the policies see it (the facade's attributes, resolved once)."""

    def __init__(self, attrs: AdmissionAttributes, source: StoreWebhookSource) -> None:
        self.attrs = attrs
        self.source = source
        self.dispatch = _dispatch_attributes(attrs)
        self._namespace: JSONDict | bool | None = False

    def namespace_object(self) -> JSONDict | None:
        """The request's Namespace (null for cluster-scoped writes and Namespaces)."""
        if self._namespace is False:
            found = None
            d = self.dispatch
            if d.namespace and not (d.group == "" and d.resource == "namespaces"):
                found = self.source.store.get_object("v1", "Namespace", d.namespace)
            self._namespace = found
        return self._namespace if isinstance(self._namespace, dict) else None

    # -- matching (matching.go) ------------------------------------------------------

    def _rule_matches(self, rule: JSONDict, group: str, version: str, resource: str) -> bool:
        if not _webhooks._rule_matches(rule, self.dispatch, group, version, resource):
            return False
        names = rule.get("resourceNames")
        return not names or self.dispatch.name in [str(n) for n in names]

    def _rules_match(
        self, rules: Sequence[Any], match_policy: Any
    ) -> tuple[str, str, str, str] | None:
        d = self.dispatch
        exact = (d.group, d.version, d.resource, d.kind)
        rules = [r for r in rules if isinstance(r, dict)]
        if any(self._rule_matches(r, *exact[:3]) for r in rules):
            return exact
        if match_policy not in (None, "Equivalent"):
            return None
        for rule in rules:
            for candidate in self.source.equivalents(d.group, d.resource):
                if candidate[:3] != exact[:3] and self._rule_matches(rule, *candidate[:3]):
                    return candidate
        return None

    def matches(self, match: Any) -> tuple[str, str, str, str] | None:
        """The (group, version, resource, kind) ``match`` (a MatchResources) takes the
        request as, or None when it does not match."""
        d = self.dispatch
        exact = (d.group, d.version, d.resource, d.kind)
        if not isinstance(match, dict):
            return exact
        if not _webhooks._selectors_match(match, d, self.source):
            return None
        policy = match.get("matchPolicy")
        if self._rules_match(match.get("excludeResourceRules") or [], policy) is not None:
            return None
        rules = match.get("resourceRules") or []
        if not rules:
            return exact
        return self._rules_match(rules, policy)

    # -- the CEL variables (filter.go) -----------------------------------------------

    def request_value(self, matched: tuple[str, str, str, str]) -> JSONDict:
        d = self.dispatch
        group, version, resource, kind = matched
        request_group, request_version = d.kind_group_version or (d.group, d.version)
        # (A typed AdmissionRequest: every field is there, empty ones with their zero
        # value, so ``request.subResource == ''`` reads on a plain write.)
        user: JSONDict = {
            "username": self.attrs.user.name,
            "uid": self.attrs.user.uid,
            "groups": list(self.attrs.user.groups),
            "extra": {},
        }
        return {
            "uid": "",
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": resource},
            "subResource": d.subresource,
            "requestKind": {"group": request_group, "version": request_version, "kind": d.kind},
            "requestResource": {"group": d.group, "version": d.version, "resource": d.resource},
            "requestSubResource": d.subresource,
            "name": d.name,
            "namespace": d.namespace,
            "operation": d.operation,
            "userInfo": user,
            "dryRun": d.dry_run,
            "options": dict(d.options or {}),
        }


def _params(
    policy: JSONDict, binding: JSONDict, request: _Request, store: InMemoryStore
) -> list[JSONDict | None]:
    """The params each evaluation gets (CollectParams): ``[None]`` when the policy or the
    binding names none; raises :class:`_Refused` when they cannot be had."""
    kind = _spec(policy).get("paramKind")
    ref = _spec(binding).get("paramRef")
    if not isinstance(kind, dict) or not isinstance(ref, dict):
        return [None]
    resource = _param_resource(kind, store)
    namespace = ""
    if resource.namespaced:
        namespace = str(ref.get("namespace") or request.dispatch.namespace or "")
        if not namespace:
            raise _Refused(
                "cannot use namespaced paramRef in policy binding that matches "
                "cluster-scoped resources"
            )
    elif ref.get("namespace"):
        raise _Refused("paramRef.namespace must not be provided for a cluster-scoped `paramKind`")
    name = ref.get("name")
    selector = ref.get("selector")
    candidates = [
        obj
        for obj in store.objects_of(resource)
        if not namespace or (obj.get("metadata") or {}).get("namespace") == namespace
    ]
    if name:
        if selector is not None:
            raise _Refused("paramRef.name and paramRef.selector are mutually exclusive")
        found: list[JSONDict | None] = [o for o in candidates if _name(o) == name]
    elif isinstance(selector, dict):
        found = [
            o
            for o in candidates
            if _webhooks.label_selector_matches(
                selector, (o.get("metadata") or {}).get("labels") or {}
            )
        ]
    else:
        raise _Refused("one of name or selector must be provided")
    if not found and ref.get("parameterNotFoundAction") == "Deny":
        raise _Refused("no params found for policy binding with `Deny` parameterNotFoundAction")
    return found


def _param_resource(kind: JSONDict, store: InMemoryStore) -> APIResource:
    api_version = str(kind.get("apiVersion") or "")
    name = str(kind.get("kind") or "")
    group, _, version = api_version.rpartition("/")
    try:
        return store.resource_for(api_version, name)
    except (RESTMappingError, NotFound):
        raise _Refused(
            f"failed to find resource referenced by paramKind: '{group}/{version}, Kind={name}'"
        ) from None


def _forbidden_error(request: _Request, message: str, reason: str) -> APIError:
    """admission.NewForbidden with the decision's reason and code (dispatcher.go)."""
    d = request.dispatch
    name = d.name
    if not name:
        meta = (d.object or {}).get("metadata") or {}
        name = str(meta.get("generateName") or "") or "Unknown"
    group_resource = f"{d.resource}.{d.group}" if d.group else d.resource
    error = APIError(
        f'{group_resource} "{name}" is forbidden: {message}',
        reason=reason,
        code=_CODES.get(reason, 422),
        details={
            "name": name,
            "group": d.group,
            "kind": d.resource,
            "causes": [{"message": message}],
        },
    )
    return error


class ValidatingAdmissionPolicies:
    """The ``ValidatingAdmissionPolicy`` admission plugin over the facade's store."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store
        self.source = StoreWebhookSource(store)

    @property
    def wants_old_object(self) -> bool:
        """Only while a binding exists: otherwise a write reads nothing more."""
        return _count(self.store, POLICY_BINDINGS) > 0

    async def validate(self, attrs: AdmissionAttributes) -> None:
        if not isinstance(attrs.obj, dict) and attrs.operation != "DELETE":
            return
        resource = attrs.resource
        if (resource.group, resource.resource) in _webhooks._EXEMPT:
            return
        if not _count(self.store, POLICY_BINDINGS) or not _count(self.store, POLICIES):
            return
        by_policy: dict[str, list[JSONDict]] = {}
        for binding in sorted(self.store.objects_of(POLICY_BINDINGS), key=_name):
            policy_name = _spec(binding).get("policyName")
            if isinstance(policy_name, str) and policy_name:
                by_policy.setdefault(policy_name, []).append(binding)
        if not by_policy:
            return
        request = _Request(attrs, self.source)
        denied: list[tuple[str, str]] = []  # (message, reason)
        for policy in sorted(self.store.objects_of(POLICIES), key=_name):
            bindings = by_policy.get(_name(policy))
            if bindings:
                denied.extend(self._policy(policy, bindings, request, attrs.warnings))
        if denied:
            message, reason = denied[0]
            raise _forbidden_error(request, message, reason)

    def _policy(
        self,
        policy: JSONDict,
        bindings: list[JSONDict],
        request: _Request,
        warnings: list[str],
    ) -> Iterator[tuple[str, str]]:
        spec = _spec(policy)
        policy_name = _name(policy)
        fail = spec.get("failurePolicy") != "Ignore"
        matched = request.matches(spec.get("matchConstraints"))
        if matched is None:
            return
        kind = spec.get("paramKind")
        if isinstance(kind, dict):
            try:
                _param_resource(kind, self.store)
            except _Refused as exc:
                if fail:
                    yield (
                        f"ValidatingAdmissionPolicy '{policy_name}' denied request: "
                        f"failed to configure policy: {exc}",
                        "Invalid",
                    )
                return
        for binding in bindings:
            binding_name = _name(binding)
            prefix = (
                f"ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}' "
                "denied request: "
            )
            if request.matches(_spec(binding).get("matchResources")) is None:
                continue
            try:
                params = _params(policy, binding, request, self.store)
            except _Refused as exc:
                if fail:
                    yield f"{prefix}failed to configure binding: {exc}", "Invalid"
                continue
            actions = [str(a) for a in _spec(binding).get("validationActions") or ()]
            for param in params:
                # (an expression's error under failurePolicy Fail is a failed validation
                # too: the binding's actions apply to it, as dispatcher.go does)
                for message, reason in _evaluate(spec, request, matched, param, fail):
                    for action in actions:
                        if action == "Deny":
                            yield f"{prefix}{message}", reason
                        elif action == "Warn":
                            warnings.append(
                                f"Validation failed for ValidatingAdmissionPolicy "
                                f"'{policy_name}' with binding '{binding_name}': {message}"
                            )


def _evaluate(
    spec: JSONDict,
    request: _Request,
    matched: tuple[str, str, str, str],
    param: JSONDict | None,
    fail: bool,
) -> Iterator[tuple[str, str]]:
    """The failed validations of one evaluation, as (message, reason); under
    failurePolicy Fail an expression's error is one, with reason Invalid (validator.go)."""
    d = request.dispatch
    # The objects in the version the policy matched the request as (an equivalent's:
    # the server converts them, as for webhooks).
    as_matched = _webhooks.MatchedWebhook("", {}, *matched)
    obj, old = _webhooks.review_objects(as_matched, d)
    env: dict[str, Any] = {
        "object": obj,
        "oldObject": old,
        "request": request.request_value(matched),
        "namespaceObject": request.namespace_object(),
    }
    if isinstance(spec.get("paramKind"), dict):
        env["params"] = param
    declared = [
        (str(v.get("name")), str(v.get("expression")))
        for v in spec.get("variables") or ()
        if isinstance(v, dict) and isinstance(v.get("expression"), str)
    ]
    env["variables"] = _Variables(declared, env)
    # matchConditions: all must be true; any false wins over errors (matcher.go).
    errors: list[str] = []
    for condition in spec.get("matchConditions") or ():
        if not isinstance(condition, dict):
            continue
        text = str(condition.get("expression") or "")
        try:
            result = compile_rule(text).evaluate(env)
        except Unsupported:
            return  # (a condition serve cannot evaluate: the policy does not apply)
        except CelError as exc:
            errors.append(f"expression '{text}' resulted in error: {exc}")
            continue
        if result is False:
            return
    if errors:
        if fail:
            yield (errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"), "Invalid"
        return
    for validation in spec.get("validations") or ():
        if not isinstance(validation, dict):
            continue
        text = str(validation.get("expression") or "")
        try:
            result = compile_rule(text).evaluate(env)
        except Unsupported:
            continue  # (a real server would not have compiled it: see the module's notes)
        except CelError as exc:
            if fail:
                yield f"expression '{text}' resulted in error: {exc}", "Invalid"
            continue
        if result is True or not isinstance(result, bool):
            continue
        reason = validation.get("reason")
        if not isinstance(reason, str) or not reason:
            reason = "Invalid"
        yield _message(validation, env), reason


def _message(validation: JSONDict, env: dict[str, Any]) -> str:
    expression = validation.get("messageExpression")
    if isinstance(expression, str) and expression:
        try:
            result = compile_rule(expression).evaluate(env)
        except (Unsupported, CelError):
            result = None
        if isinstance(result, str):
            text = result.strip()
            if text and len(text.encode()) <= _MESSAGE_LIMIT and "\n" not in text:
                return text
    message = validation.get("message")
    if isinstance(message, str) and message.strip():
        return message.strip()
    return f"failed expression: {str(validation.get('expression') or '').strip()}"
