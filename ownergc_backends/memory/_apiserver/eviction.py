"""The ``pods/eviction`` subresource: a delete that respects PodDisruptionBudgets.

``kubectl drain`` (and any operator that evicts) POSTs a policy ``Eviction``
here instead of deleting the Pod. What kube-apiserver 1.30 does with it, and
this handler too:

* the Eviction's name must be the Pod's (400), the Pod must exist (404);
* a Pod that is Pending, Succeeded or Failed, or already being deleted, is
  deleted at once: it is not part of what a budget protects;
* otherwise the PodDisruptionBudgets of its namespace whose selector selects
  it are found (a ``policy/v1`` budget: an empty selector selects every Pod, a
  missing one none). More than one is a 500. With one, a Pod that is not
  Ready is deleted without touching the budget when the budget's
  ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow`` or it is healthy anyway
  (``currentHealthy >= desiredHealthy > 0``); else the budget must have been
  processed by its controller (``status.observedGeneration`` up to date, else
  429 "still being processed") and allow a disruption (else 429 naming the
  healthy Pods it needs). Allowed, ``disruptionsAllowed`` is decremented and
  the Pod recorded in ``disruptedPods``, in the budget's status;
* the Pod gets the ``DisruptionTarget`` condition (reason
  ``EvictionByEvictionAPI``), then is deleted with the Eviction's
  ``deleteOptions``; the answer is a ``Status`` of ``Success`` (201).

Dry runs check everything and change nothing. The answers are worded as a real
server's (recorded from kube-apiserver 1.20, tests/data/real-apiserver-1.20/
eviction.json). Nothing here runs the disruption controller: a budget's status
is what a client wrote, as in a cluster whose controller is down.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from ownergc.errors import BadRequest, Conflict, Forbidden, ServerError, TooManyRequests
from ownergc.protocols import APIResource, JSONDict, Preconditions

from .._negotiation import _json_response, object_body
from .._objects import format_time
from .._webhooks import label_selector_matches
from ..store import InMemoryStore
from .context import Reply, RequestContext, ResourceRoute

__all__ = ["EvictionHandler"]

_EVICTION_VERSIONS: Final = ("policy/v1", "policy/v1beta1")
#: How many times a write that lost a race (a changed budget or Pod) is tried again.
_ATTEMPTS: Final = 20
#: A budget whose ``disruptedPods`` is this big is refused (its controller is behind).
_MAX_DISRUPTED_PODS: Final = 2000
_REFUSED: Final = "Cannot evict pod as it would violate the pod's disruption budget."


class EvictionHandler:
    """POST ``/api/v1/namespaces/<ns>/pods/<name>/eviction``."""

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        assert route.name is not None and route.namespace is not None
        eviction = object_body(ctx.request, "the Eviction")
        _check_eviction(eviction)
        meta = eviction.get("metadata") or {}
        if meta.get("name") != route.name:
            raise BadRequest(
                "name in URL does not match name in Eviction object", reason="BadRequest"
            )
        options = eviction.get("deleteOptions") or {}
        if not isinstance(options, dict):
            raise BadRequest("deleteOptions must be an object", reason="BadRequest")
        dry_run = _dry_run(ctx.request.query.get("dryRun"), options.get("dryRun"))
        pods = route.resource
        pod = await self._evict_or_get(pods, route.name, route.namespace, options, dry_run)
        if pod is None:
            return _success()
        budgets = await self._budgets_of(pod, route.namespace)
        if len(budgets) > 1:
            return _json_response(
                500,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Failure",
                    "message": "This pod has more than one PodDisruptionBudget, which the "
                    "eviction subresource does not support.",
                    "code": 500,
                },
            )
        pinned = False
        if budgets:
            budget = budgets[0]
            if not _ready(pod) and _may_go_unhealthy(budget):
                pinned = True  # deleted if still not ready: the budget is not consulted
            else:
                await self._take_disruption(budget, route.name, route.namespace, dry_run)
        preconditions = _preconditions(options)
        if pinned and preconditions.resource_version is None:
            preconditions = Preconditions(preconditions.uid, _meta(pod).get("resourceVersion"))
        try:
            await self._delete(pods, pod, route.namespace, options, preconditions, dry_run)
        except Conflict:
            if pinned and _preconditions(options).resource_version is None:
                raise _still_processed(budgets[0]) from None
            raise
        return _success()

    async def _evict_or_get(
        self,
        pods: APIResource,
        name: str,
        namespace: str,
        options: JSONDict,
        dry_run: bool,
    ) -> JSONDict | None:
        """Delete the Pod at once if no budget can protect it (None), else return it."""
        for attempt in range(_ATTEMPTS):
            pod = await self.store.get(pods, name, namespace=namespace, metadata_only=False)
            if not _budget_ignored(pod):
                return pod
            preconditions = _preconditions(options)
            pin = preconditions.resource_version is None and _running_or_pending(pod)
            if pin:
                preconditions = Preconditions(preconditions.uid, _meta(pod).get("resourceVersion"))
            try:
                await self._delete(pods, pod, namespace, options, preconditions, dry_run)
                return None
            except Conflict:
                # a changed Pod: looked at again, unless the client pinned a version
                if not pin or attempt == _ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _budgets_of(self, pod: JSONDict, namespace: str) -> list[JSONDict]:
        budgets = self.store.resource_for("policy/v1", "PodDisruptionBudget")
        listed = await self.store.list(budgets, namespace=namespace, metadata_only=False)
        labels = _meta(pod).get("labels") or {}
        return [
            budget
            for budget in listed.items
            if _selects((budget.get("spec") or {}).get("selector"), labels)
        ]

    async def _take_disruption(
        self, budget: JSONDict, pod_name: str, namespace: str, dry_run: bool
    ) -> None:
        """Check that ``budget`` allows one more disruption and record it in its status
        (looked at again after a lost race)."""
        resource = self.store.resource_for("policy/v1", "PodDisruptionBudget")
        name = _meta(budget)["name"]
        for attempt in range(_ATTEMPTS):
            status = dict(budget.get("status") or {})
            generation = _meta(budget).get("generation") or 0
            allowed = status.get("disruptionsAllowed") or 0
            if (status.get("observedGeneration") or 0) < generation:
                raise _still_processed(budget)
            if allowed < 0:
                raise _budget_forbidden(name, "pdb disruptions allowed is negative")
            if len(status.get("disruptedPods") or {}) > _MAX_DISRUPTED_PODS:
                raise _budget_forbidden(
                    name,
                    "DisruptedPods map too big - too many evictions not confirmed by PDB "
                    "controller",
                )
            if allowed == 0:
                raise TooManyRequests(
                    _REFUSED,
                    details={
                        "causes": [
                            {
                                "reason": "DisruptionBudget",
                                "message": f"The disruption budget {name} needs "
                                f"{status.get('desiredHealthy') or 0} healthy pods and has "
                                f"{status.get('currentHealthy') or 0} currently",
                            }
                        ]
                    },
                )
            if dry_run:
                return
            status["disruptionsAllowed"] = allowed - 1
            if allowed == 1:
                status["conditions"] = _no_more_disruptions(status, self.store.now())
            disrupted = dict(status.get("disruptedPods") or {})
            disrupted[pod_name] = format_time(self.store.now())
            status["disruptedPods"] = disrupted
            try:
                await self.store.update(
                    resource,
                    {**budget, "status": status},
                    namespace=namespace,
                    subresource="status",
                )
                return
            except Conflict:
                if attempt == _ATTEMPTS - 1:
                    raise _still_processed(budget) from None
                budget = await self.store.get(
                    resource, name, namespace=namespace, metadata_only=False
                )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _delete(
        self,
        pods: APIResource,
        pod: JSONDict,
        namespace: str,
        options: JSONDict,
        preconditions: Preconditions,
        dry_run: bool,
    ) -> None:
        """The Pod marked as a disruption's target, then deleted (checked only, dry)."""
        meta = _meta(pod)
        _check_preconditions(meta, preconditions)
        if not dry_run:
            marked = copy.deepcopy(pod)
            status = marked.setdefault("status", {})
            status["conditions"] = _with_disruption_target(
                status.get("conditions"), format_time(self.store.now())
            )
            updated = await self.store.update(
                pods, marked, namespace=namespace, subresource="status"
            )
            if preconditions.resource_version is not None:
                # (the condition was this eviction's own write)
                preconditions = Preconditions(
                    preconditions.uid, _meta(updated).get("resourceVersion")
                )
        await self.store.delete(
            pods,
            meta["name"],
            namespace=namespace,
            propagation_policy=options.get("propagationPolicy"),
            orphan_dependents=options.get("orphanDependents"),
            preconditions=preconditions if preconditions.to_dict() else None,
            dry_run=dry_run,
        )


def _check_eviction(body: Any) -> None:
    """An Eviction (policy/v1 or v1beta1), or the 400 a real server answers."""
    if not isinstance(body, dict):
        raise BadRequest("the Eviction must be a JSON object", reason="BadRequest")
    api_version, kind = body.get("apiVersion"), body.get("kind")
    if api_version in _EVICTION_VERSIONS and kind == "Eviction":
        return
    if api_version is None and kind is None:
        return  # (a body without type information is read as the Eviction it is sent as)
    version = str(api_version).rpartition("/")[2]
    raise BadRequest(
        f'{kind} in version "{version}" cannot be handled as a Eviction: converting '
        f"({version}.{kind}) to (policy.Eviction): unknown conversion",
        reason="BadRequest",
    )


def _dry_run(query: list[str] | None, in_body: Any) -> bool:
    """The request's ``dryRun`` and the Eviction's ``deleteOptions.dryRun``, which must
    agree when both are given."""
    from_query = list(query or [])
    from_body = in_body if isinstance(in_body, list) else []
    if from_query and from_body and from_query != from_body:
        raise ServerError(
            "Non-matching dry-run options in request and content: "
            f"[{' '.join(from_query)}] and [{' '.join(str(v) for v in from_body)}]"
        )
    return "All" in (from_query or from_body)


def _meta(obj: JSONDict) -> JSONDict:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _phase(pod: JSONDict) -> Any:
    return (pod.get("status") or {}).get("phase")


def _budget_ignored(pod: JSONDict) -> bool:
    """Pending, finished or already going: no budget protects it."""
    return _phase(pod) in ("Pending", "Succeeded", "Failed") or bool(
        _meta(pod).get("deletionTimestamp")
    )


def _running_or_pending(pod: JSONDict) -> bool:
    """Not finished and not being deleted: its delete is pinned to the version looked at,
    so that it does not race with the Pod becoming ready."""
    return _phase(pod) not in ("Succeeded", "Failed") and not _meta(pod).get("deletionTimestamp")


def _ready(pod: JSONDict) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return False


def _may_go_unhealthy(budget: JSONDict) -> bool:
    """May a Pod that is not ready go without using up a disruption?"""
    if (budget.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = budget.get("status") or {}
    desired = status.get("desiredHealthy") or 0
    return desired > 0 and (status.get("currentHealthy") or 0) >= desired


def _selects(selector: Any, labels: Any) -> bool:
    """A policy/v1 budget's selector: an empty one selects every Pod of the namespace, a
    missing one (or one that is not an object) none."""
    if not isinstance(selector, dict):
        return False
    return not selector or label_selector_matches(selector, labels)


def _preconditions(options: JSONDict) -> Preconditions:
    given = options.get("preconditions") or {}
    if not isinstance(given, dict):
        raise BadRequest("deleteOptions.preconditions must be an object", reason="BadRequest")
    uid, rv = given.get("uid"), given.get("resourceVersion")
    return Preconditions(uid or None, rv or None)


def _check_preconditions(meta: JSONDict, preconditions: Preconditions) -> None:
    """The eviction's own precondition check, worded as kube-apiserver's."""
    name = meta.get("name")
    if preconditions.uid is not None and preconditions.uid != meta.get("uid"):
        raise Conflict(
            f'Operation cannot be fulfilled on Pod "{name}": the UID in the precondition '
            f"({preconditions.uid}) does not match the UID in record ({meta.get('uid')}). "
            "The object might have been deleted and then recreated",
            reason="Conflict",
            details={"name": name, "kind": "Pod"},
        )
    rv = preconditions.resource_version
    if rv is not None and rv != meta.get("resourceVersion"):
        raise Conflict(
            f'Operation cannot be fulfilled on Pod "{name}": the ResourceVersion in the '
            f"precondition ({rv}) does not match the ResourceVersion in record "
            f"({meta.get('resourceVersion')}). The object might have been modified",
            reason="Conflict",
            details={"name": name, "kind": "Pod"},
        )


def _with_disruption_target(conditions: Any, now: str) -> list[Any]:
    """The Pod's conditions with ``DisruptionTarget`` true (its transition time kept if
    it already was)."""
    listed = conditions if isinstance(conditions, list) else []
    target: JSONDict = {
        "type": "DisruptionTarget",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": now,
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }
    kept = []
    for condition in listed:
        if isinstance(condition, dict) and condition.get("type") == "DisruptionTarget":
            if condition.get("status") == "True":
                target["lastTransitionTime"] = condition.get("lastTransitionTime")
        else:
            kept.append(condition)
    return [*kept, target]


def _no_more_disruptions(status: JSONDict, now: Any) -> list[Any]:
    """The budget's conditions with ``DisruptionAllowed`` false (``InsufficientPods``), as
    the eviction leaves them when it takes the last disruption allowed."""
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    before = next((c for c in conditions if c.get("type") == "DisruptionAllowed"), None)
    others = [c for c in conditions if c is not before]
    changed = before is None or before.get("status") != "False"
    condition = {
        "type": "DisruptionAllowed",
        "status": "False",
        "observedGeneration": status.get("observedGeneration") or 0,
        "lastTransitionTime": format_time(now) if changed else before.get("lastTransitionTime"),  # type: ignore[union-attr]
        "reason": "InsufficientPods",
        "message": "",
    }
    return [*others, condition]


def _still_processed(budget: JSONDict) -> TooManyRequests:
    return TooManyRequests(
        _REFUSED,
        details={
            "causes": [
                {
                    "reason": "DisruptionBudget",
                    "message": f"The disruption budget {_meta(budget).get('name')} is still "
                    "being processed by the server.",
                }
            ]
        },
    )


def _budget_forbidden(name: str, why: str) -> Forbidden:
    return Forbidden(
        f'poddisruptionbudget.policy "{name}" is forbidden: {why}',
        reason="Forbidden",
        details={"name": name, "group": "policy", "kind": "poddisruptionbudget"},
    )


def _success() -> Reply:
    return _json_response(
        201,
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201},
    )
