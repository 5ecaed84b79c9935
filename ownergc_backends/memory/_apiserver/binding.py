"""``pods/binding`` and the ``bindings`` resource: a scheduler's assignment of a Pod.

A Binding (core/v1: the Pod's name, a ``target`` Node) is created, never stored;
it writes the Pod: ``spec.nodeName``, the Binding's annotations, and the
``PodScheduled`` condition true. As kube-apiserver 1.30 answers (recorded from
1.20, tests/data/real-apiserver-1.20/pod-subresources.json):

* a body of another kind is a 400 ("cannot be handled as a Binding"); at
  ``pods/<name>/binding`` a Binding that names another Pod is a 400 ("name in URL
  does not match name in Binding object"); the top-level ``bindings`` takes the
  Pod's name from the Binding;
* a target of another kind than Node, or without a name, is a 500 (the registry
  returns its validation errors as a plain error);
* no such Pod is a 404; a Pod already on a node, being deleted, or with
  scheduling gates is a 409 on ``pods/binding``;
* the Binding's uid and resourceVersion, when given, are preconditions on the
  Pod (1.27+; 1.20 ignored them): a mismatch is a 409;
* success is a ``Status`` of ``Success``, 201; ``dryRun=All`` checks everything
  and writes nothing.

Admission sees the create of ``pods/binding`` with the Binding as its object.
"""

from __future__ import annotations

from typing import Any, Final

from ownergc.errors import BadRequest, Conflict
from ownergc.protocols import APIResource, JSONDict

from .._negotiation import _json_response, failure_without_reason, object_body
from .._objects import format_time
from .._subresources import binding_errors, bound_pod
from ..store import InMemoryStore, PatchRaced
from .bodies import subresource_body
from .context import Reply, RequestContext, ResourceRoute
from .rest import WriteSteps

__all__ = ["BindingHandler"]

#: How many times a bind that lost a race with another write to the Pod is tried again.
_ATTEMPTS: Final = 20


class BindingHandler:
    """POST ``/api/v1/namespaces/<ns>/pods/<name>/binding`` and ``.../<ns>/bindings``."""

    def __init__(self, store: InMemoryStore, writes: WriteSteps) -> None:
        self.store = store
        self.writes = writes

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        assert route.namespace is not None
        dry_run = self.writes.dry_run.dry_run(
            ctx.request.query.get("dryRun"), options_kind="CreateOptions"
        )
        binding = _check_binding(object_body(ctx.request, "the Binding"))
        meta = binding["metadata"]
        name = meta.get("name")
        if route.name is not None and name != route.name:
            raise BadRequest(
                "name in URL does not match name in Binding object", reason="BadRequest"
            )
        if meta.get("namespace") not in (None, "", route.namespace):
            raise BadRequest(
                "the namespace of the provided object does not match the namespace sent on "
                "the request",
                reason="BadRequest",
            )
        if not isinstance(name, str) or not name:
            raise BadRequest("name is required for a Binding", reason="BadRequest")
        errors = binding_errors(binding)
        if errors:
            return failure_without_reason(
                500, "[" + ", ".join(errors) + "]" if len(errors) > 1 else errors[0]
            )
        pods = self.store.resource_by_name("pods.v1")
        pod_route = ResourceRoute(pods, route.namespace, name, "binding")
        await self.writes.admit(ctx, "CREATE", pod_route, binding, dry_run=dry_run)
        await self._bind(pods, route.namespace, name, binding, dry_run=dry_run)
        return _json_response(
            201,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "code": 201,
            },
        )

    async def _bind(
        self, pods: APIResource, namespace: str, name: str, binding: JSONDict, *, dry_run: bool
    ) -> None:
        meta = binding["metadata"]
        uid, rv = meta.get("uid") or None, meta.get("resourceVersion") or None
        node = binding["target"]["name"]
        for attempt in range(_ATTEMPTS):
            pod = await self.store.get(pods, name, namespace=namespace, metadata_only=False)
            pod_meta = pod.get("metadata") or {}
            refused = _refusal(pod, name, uid, rv)
            if refused is not None:
                raise refused
            new = bound_pod(pod, node, meta.get("annotations"), format_time(self.store.now()))
            try:
                updated = await self.store.update(
                    pods,
                    new,
                    namespace=namespace,
                    subresource="binding",
                    patched_from=pod_meta.get("resourceVersion"),
                    dry_run=dry_run,
                )
            except PatchRaced:
                if rv is not None or attempt == _ATTEMPTS - 1:
                    raise Conflict(
                        f'Operation cannot be fulfilled on pods "{name}": the object has been '
                        "modified; please apply your changes to the latest version and try again",
                        reason="Conflict",
                        details={"name": name, "kind": "pods"},
                    ) from None
                continue
            await self.writes.hooks.run("update", pods, updated, dry_run=dry_run)
            return


def _refusal(pod: JSONDict, name: str, uid: Any, rv: Any) -> Conflict | None:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    # A failed precondition is etcd storage's error, passed on as a Conflict.
    key = f"/registry/pods/{meta.get('namespace')}/{name}"
    if uid is not None and uid != meta.get("uid"):
        return _conflict(
            "pods",
            name,
            _storage_error(
                key,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
                f"{meta.get('uid')}",
            ),
        )
    if rv is not None and rv != meta.get("resourceVersion"):
        return _conflict(
            "pods",
            name,
            _storage_error(
                key,
                f"Precondition failed: ResourceVersion in precondition: {rv}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            ),
        )
    if meta.get("deletionTimestamp"):
        return _conflict(
            "pods/binding", name, f"pod {name} is being deleted, cannot be assigned to a host"
        )
    if spec.get("nodeName"):
        return _conflict(
            "pods/binding", name, f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        )
    if spec.get("schedulingGates"):
        return _conflict("pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
    return None


def _storage_error(key: str, message: str) -> str:
    return (
        f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, "
        f"AdditionalErrorMsg: {message}"
    )


def _conflict(resource: str, name: str, why: str) -> Conflict:
    return Conflict(
        f'Operation cannot be fulfilled on {resource} "{name}": {why}',
        reason="Conflict",
        details={"name": name, "kind": resource},
    )


def _check_binding(body: Any) -> JSONDict:
    """The Binding, or the 400 a real server answers a body it cannot read as one."""
    binding, _ = subresource_body(
        body,
        kind="Binding",
        versions=("v1",),
        internal="core.Binding",
        objects=(("metadata", "v1.ObjectMeta"), ("target", "v1.ObjectReference")),
    )
    return {
        **binding,
        "metadata": binding.get("metadata") or {},
        "target": binding.get("target") or {},
    }
