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

Admission sees an eviction as kube-apiserver shows it (recorded from 1.20,
tests/data/real-apiserver-1.20/eviction-admission.json): a CREATE of
``pods/eviction`` whose object is the policy/v1 ``Eviction``, through the
server's admission chain (:class:`~.rest.WriteSteps`), mutating before the name
check and validating after; the budget's status write as the server's own
UPDATE of ``poddisruptionbudgets/status``. The Pod's condition and delete are
not admitted, as a real server's eviction does not admit them.

Dry runs check everything and change nothing. The answers are worded as a real
server's (recorded from kube-apiserver 1.20, tests/data/real-apiserver-1.20/
eviction.json). Nothing here runs the disruption controller: a budget's status
is what a client wrote, as in a cluster whose controller is down.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Final

from ownergc.errors import BadRequest, Conflict, Forbidden, TooManyRequests
from ownergc.protocols import APIResource, JSONDict, Preconditions

from .._negotiation import _json_response, failure_without_reason, object_body
from .._objects import format_time
from .._selectors import label_selector_matches
from ..store import InMemoryStore
from .admission import AdmissionAttributes, AdmissionChain
from .bodies import subresource_body, undecodable
from .context import Reply, RequestContext, ResourceRoute, UserInfo
from .dryrun import DRY_RUN_ALL, AcceptDryRun, DryRunPolicy
from .rest import WriteSteps

__all__ = ["EvictionHandler"]

_EVICTION_VERSIONS: Final = ("policy/v1", "policy/v1beta1")
#: How many times a write that lost a race (a changed budget or Pod) is tried again.
_ATTEMPTS: Final = 20
#: A budget whose ``disruptedPods`` is this big is refused (its controller is behind).
_MAX_DISRUPTED_PODS: Final = 2000
_REFUSED: Final = "Cannot evict pod as it would violate the pod's disruption budget."
#: The user kube-apiserver's writes through its loopback client are admitted as.
LOOPBACK_USER: Final = "system:apiserver"


class EvictionHandler:
    """POST ``/api/v1/namespaces/<ns>/pods/<name>/eviction``.

    ``writes``: the server's write steps; the eviction uses their dry-run policy and
    admission chain (None: dry runs as kube-apiserver takes them, no admission)."""

    def __init__(self, store: InMemoryStore, writes: WriteSteps | None = None) -> None:
        self.store = store
        self.writes = writes
        self.dry_runs: DryRunPolicy = writes.dry_run if writes is not None else AcceptDryRun()
        #: Who the eviction's own writes (the budget's status) are admitted as: the
        #: server's loopback client, as kube-apiserver's are.
        self.loopback = UserInfo(LOOPBACK_USER, ("system:masters",), str(uuid.uuid4()))

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        assert route.name is not None and route.namespace is not None
        # (the query's dryRun first, as the create handler checks its options)
        query = ctx.request.query.get("dryRun")
        self.dry_runs.dry_run(query, options_kind="CreateOptions")
        eviction = object_body(ctx.request, "the Eviction")
        meta, options = _check_eviction(eviction)
        if meta.get("namespace") not in (None, "", route.namespace):
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on "
                "the request",
                reason="BadRequest",
            )
        admitted = await self._mutate(ctx, route, eviction, bool(query))
        if admitted is not None:  # (what a mutating webhook made of it)
            eviction = admitted.obj
            meta, options = _check_eviction(eviction)
        if meta.get("name") != route.name:
            raise BadRequest(
                "name in URL does not match name in Eviction object", reason="BadRequest"
            )
        in_body = options.get("dryRun")
        mismatch = _dry_run_mismatch(query, in_body)
        if mismatch is not None:
            return failure_without_reason(500, mismatch)
        if admitted is not None:
            await admitted.chain.validate(_with_query_dry_run(admitted.attrs, query))
        if in_body:  # (checked where the delete would check it)
            self.dry_runs.dry_run(None, in_body, options_kind="DeleteOptions")
        dry_run = bool(query or in_body)
        pods = route.resource
        given = _preconditions(options)
        pod = await self._evict_or_get(pods, route.name, route.namespace, options, given, dry_run)
        if pod is None:
            return _success()
        budgets = await self._budgets_of(pod, route.namespace)
        if len(budgets) > 1:
            return failure_without_reason(
                500,
                "This pod has more than one PodDisruptionBudget, which the eviction "
                "subresource does not support.",
            )
        pinned = False
        if budgets:
            budget = budgets[0]
            if not _ready(pod) and _may_go_unhealthy(budget):
                pinned = True  # deleted if still not ready: the budget is not consulted
            else:
                await self._take_disruption(ctx, budget, route.name, route.namespace, dry_run)
        preconditions = given
        if pinned:  # (1.30 pins the version it read even over one the client gave)
            preconditions = Preconditions(given.uid, _meta(pod).get("resourceVersion"))
        try:
            await self._delete(pods, route.name, route.namespace, options, preconditions, dry_run)
        except Conflict:
            if pinned and given.resource_version is None:
                raise _still_processed(budgets[0]) from None
            raise
        return _success()

    async def _mutate(
        self, ctx: RequestContext, route: ResourceRoute, eviction: JSONDict, dry_run: bool
    ) -> _Admitted | None:
        """The Eviction through the mutating half of admission, as a CREATE of
        ``pods/eviction`` (None: no admission). ``dry_run``: the query's, which is all
        the request's CreateOptions say (the deleteOptions' own is the eviction's)."""
        if self.writes is None:
            return None
        chain = self.writes.admission
        attrs = self.writes.attributes(
            ctx,
            "CREATE",
            route,
            _as_policy_v1(eviction),
            dry_run=dry_run,
            options={"dryRun": [DRY_RUN_ALL]} if dry_run else None,
            kind=("policy", "v1", "Eviction"),
        )
        attrs = await chain.mutate(attrs)
        if not isinstance(attrs.obj, dict):  # (a webhook's patch left no object)
            raise BadRequest("the Eviction must be a JSON object", reason="BadRequest")
        return _Admitted(attrs, chain)

    async def _evict_or_get(
        self,
        pods: APIResource,
        name: str,
        namespace: str,
        options: JSONDict,
        given: Preconditions,
        dry_run: bool,
    ) -> JSONDict | None:
        """Delete the Pod at once if no budget can protect it (None), else return it
        (``given``: the Eviction's preconditions)."""
        for attempt in range(_ATTEMPTS):
            pod = await self.store.get(pods, name, namespace=namespace, metadata_only=False)
            if not _budget_ignored(pod):
                return pod
            preconditions = given
            if given.resource_version is None and _running_or_pending(pod):
                preconditions = Preconditions(given.uid, _meta(pod).get("resourceVersion"))
            try:
                await self._delete(pods, name, namespace, options, preconditions, dry_run)
                return None
            except Conflict:
                # a changed Pod: looked at again, unless the client gave a version
                if given.resource_version is not None or attempt == _ATTEMPTS - 1:
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
        self, ctx: RequestContext, budget: JSONDict, pod_name: str, namespace: str, dry_run: bool
    ) -> None:
        """Check that ``budget`` allows one more disruption and record it in its status
        (looked at again after a lost race). The status write is admitted as the server's
        own ``UPDATE`` of ``poddisruptionbudgets/status``, as kube-apiserver's loopback
        write is: a webhook may refuse it (the eviction fails) or change it."""
        resource = self.store.resource_for("policy/v1", "PodDisruptionBudget")
        name = _meta(budget)["name"]
        for attempt in range(_ATTEMPTS):
            written = budget.get("status")
            status = dict(written) if isinstance(written, dict) else {}
            allowed = _count(status.get("disruptionsAllowed"))
            disrupted = status.get("disruptedPods")
            disrupted = dict(disrupted) if isinstance(disrupted, dict) else {}
            if _count(status.get("observedGeneration")) < _count(_meta(budget).get("generation")):
                raise _still_processed(budget)
            if allowed < 0:
                raise _budget_forbidden(name, "pdb disruptions allowed is negative")
            if len(disrupted) > _MAX_DISRUPTED_PODS:
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
                                f"{_count(status.get('desiredHealthy'))} healthy pods and has "
                                f"{_count(status.get('currentHealthy'))} currently",
                            }
                        ]
                    },
                )
            if dry_run:
                return
            status["disruptionsAllowed"] = allowed - 1
            now = self.store.now()  # (once: the condition and the entry agree)
            if allowed == 1:
                status["conditions"] = _no_more_disruptions(status, now)
            disrupted[pod_name] = format_time(now)
            status["disruptedPods"] = disrupted
            updated = await self._admit_budget(ctx, resource, budget, {**budget, "status": status})
            try:
                await self.store.update(
                    resource,
                    updated,
                    namespace=namespace,
                    subresource="status",
                )
                return
            except Conflict:
                if attempt == _ATTEMPTS - 1:
                    raise
                budget = await self.store.get(
                    resource, name, namespace=namespace, metadata_only=False
                )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _admit_budget(
        self, ctx: RequestContext, resource: APIResource, old: JSONDict, new: JSONDict
    ) -> JSONDict:
        """The budget's new status through admission (the object to write)."""
        if self.writes is None:
            return new
        meta = _meta(old)
        route = ResourceRoute(resource, meta.get("namespace"), meta.get("name"), "status")
        attrs = self.writes.attributes(
            ctx, "UPDATE", route, new, dry_run=False, old_obj=old, user=self.loopback
        )
        attrs = await self.writes.admission.admit(attrs)
        return attrs.obj if isinstance(attrs.obj, dict) else new

    async def _delete(
        self,
        pods: APIResource,
        name: str,
        namespace: str,
        options: JSONDict,
        preconditions: Preconditions,
        dry_run: bool,
    ) -> None:
        """The Pod, as it is now, marked as a disruption's target, then deleted (checked
        only, dry). A write to the Pod between the read and the mark is read again."""
        for attempt in range(_ATTEMPTS):
            latest = await self.store.get(pods, name, namespace=namespace, metadata_only=False)
            _check_preconditions(_meta(latest), preconditions)
            if dry_run:
                break
            marked = latest  # (the store's answer is a copy of its own)
            status = marked.get("status")
            if not isinstance(status, dict):
                status = marked["status"] = {}
            status["conditions"] = _with_disruption_target(
                status.get("conditions"), format_time(self.store.now())
            )
            try:
                updated = await self.store.update(
                    pods, marked, namespace=namespace, subresource="status"
                )
            except Conflict:
                if attempt == _ATTEMPTS - 1:
                    raise
                continue
            if preconditions.resource_version is not None:
                # (the condition was this eviction's own write)
                preconditions = Preconditions(
                    preconditions.uid, _meta(updated).get("resourceVersion")
                )
            break
        await self.store.delete(
            pods,
            name,
            namespace=namespace,
            propagation_policy=options.get("propagationPolicy"),
            orphan_dependents=options.get("orphanDependents"),
            preconditions=preconditions if preconditions.to_dict() else None,
            dry_run=dry_run,
        )


@dataclass(frozen=True, slots=True)
class _Admitted:
    """An Eviction past the mutating half of admission, and the chain to validate it."""

    attrs: AdmissionAttributes
    chain: AdmissionChain

    @property
    def obj(self) -> JSONDict:
        assert isinstance(self.attrs.obj, dict)
        return self.attrs.obj


def _with_query_dry_run(attrs: AdmissionAttributes, query: list[str] | None) -> AdmissionAttributes:
    """The Eviction as validation sees it: the query's ``dryRun`` copied into deleteOptions
    that are there and say none (kube-apiserver does so before validating; deleteOptions
    left out stay out, as recorded from 1.20)."""
    eviction = attrs.obj
    options = eviction.get("deleteOptions") if isinstance(eviction, dict) else None
    if not query or not isinstance(options, dict) or options.get("dryRun"):
        return attrs
    assert isinstance(eviction, dict)
    return attrs.with_object({**eviction, "deleteOptions": {**options, "dryRun": list(query)}})


def _as_policy_v1(eviction: JSONDict) -> JSONDict:
    """The Eviction as admission sees it: in policy/v1, whichever version was sent
    (kube-apiserver 1.30's kind of the subresource; 1.20's was policy/v1beta1)."""
    return {**eviction, "apiVersion": "policy/v1", "kind": "Eviction"}


def _check_eviction(body: Any) -> tuple[JSONDict, JSONDict]:
    """An Eviction's metadata and deleteOptions (policy/v1 or v1beta1; a body that leaves
    out its apiVersion or kind is read as the Eviction the subresource takes), or the
    400 a real server answers."""
    eviction, version = subresource_body(
        body,
        kind="Eviction",
        versions=_EVICTION_VERSIONS,
        internal="policy.Eviction",
        objects=(("metadata", "v1.ObjectMeta"), ("deleteOptions", "v1.DeleteOptions")),
    )
    options = eviction.get("deleteOptions") or {}
    dry = options.get("dryRun")
    if dry is not None and not (isinstance(dry, list) and all(isinstance(v, str) for v in dry)):
        raise undecodable(
            "Eviction", version, "DeleteOptions.deleteOptions.dryRun", "[]string", dry
        )
    return eviction.get("metadata") or {}, options


def _dry_run_mismatch(query: list[str] | None, in_body: list[str] | None) -> str | None:
    """The error when the request's ``dryRun`` and the Eviction's
    ``deleteOptions.dryRun`` are both given and differ."""
    if query and in_body and list(query) != list(in_body):
        return (
            "Non-matching dry-run options in request and content: "
            f"[{' '.join(query)}] and [{' '.join(in_body)}]"
        )
    return None


def _count(value: Any) -> int:
    """A budget status count (0 when it is not a number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


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
    missing one (or one kube-apiserver could not parse) none."""
    return isinstance(selector, dict) and label_selector_matches(selector, labels or {})


def _preconditions(options: JSONDict) -> Preconditions:
    given = options.get("preconditions") or {}
    if not isinstance(given, dict):
        raise BadRequest("deleteOptions.preconditions must be an object", reason="BadRequest")
    # (present but empty is given: it is no match for the delete, and a resourceVersion
    # given, even empty, is never replaced by the Pod's own nor retried)
    return Preconditions(given.get("uid"), given.get("resourceVersion"))


def _check_preconditions(meta: JSONDict, preconditions: Preconditions) -> None:
    """The check of the write that marks the Pod, worded as kube-apiserver's: an empty
    uid or resourceVersion is not checked here (the delete checks it)."""
    name = meta.get("name")
    if preconditions.uid and preconditions.uid != meta.get("uid"):
        raise Conflict(
            f'Operation cannot be fulfilled on Pod "{name}": the UID in the precondition '
            f"({preconditions.uid}) does not match the UID in record ({meta.get('uid')}). "
            "The object might have been deleted and then recreated",
            reason="Conflict",
            details={"name": name, "kind": "Pod"},
        )
    rv = preconditions.resource_version
    if rv and rv != meta.get("resourceVersion"):
        raise Conflict(
            f'Operation cannot be fulfilled on Pod "{name}": the ResourceVersion in the '
            f"precondition ({rv}) does not match the ResourceVersion in record "
            f"({meta.get('resourceVersion')}). The object might have been modified",
            reason="Conflict",
            details={"name": name, "kind": "Pod"},
        )


def _set_condition(conditions: Any, condition: JSONDict, keep_time_if: str) -> list[Any]:
    """``conditions`` with the first of ``condition``'s type replaced where it stands (its
    ``lastTransitionTime`` kept when its status was already ``keep_time_if``), or
    ``condition`` appended."""
    listed = list(conditions) if isinstance(conditions, list) else []
    for index, old in enumerate(listed):
        if isinstance(old, dict) and old.get("type") == condition["type"]:
            if old.get("status") == keep_time_if:
                condition = {**condition, "lastTransitionTime": old.get("lastTransitionTime")}
            listed[index] = condition
            return listed
    return [*listed, condition]


def _with_disruption_target(conditions: Any, now: str) -> list[Any]:
    """The Pod's conditions with ``DisruptionTarget`` true (its transition time kept if
    it already was)."""
    target = {
        "type": "DisruptionTarget",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": now,
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }
    return _set_condition(conditions, target, keep_time_if="True")


def _no_more_disruptions(status: JSONDict, now: Any) -> list[Any]:
    """The budget's conditions with ``DisruptionAllowed`` false (``InsufficientPods``), as
    the eviction leaves them when it takes the last disruption allowed."""
    condition = {
        "type": "DisruptionAllowed",
        "status": "False",
        "observedGeneration": _count(status.get("observedGeneration")),
        "lastTransitionTime": format_time(now),
        "reason": "InsufficientPods",
        "message": "",
    }
    return _set_condition(status.get("conditions"), condition, keep_time_if="False")


def _still_processed(budget: JSONDict) -> TooManyRequests:
    """429 with a ten-second Retry-After (1.20 suggested none)."""
    return TooManyRequests(
        _REFUSED,
        retry_after=10,
        details={
            "retryAfterSeconds": 10,
            "causes": [
                {
                    "reason": "DisruptionBudget",
                    "message": f"The disruption budget {_meta(budget).get('name')} is still "
                    "being processed by the server.",
                }
            ],
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
