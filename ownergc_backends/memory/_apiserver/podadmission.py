"""Three of kube-apiserver's default mutating admission plugins, for Pods.

A Pod created on a real cluster comes back with fields no defaulting sets:
the ``ServiceAccount`` plugin names the ``default`` service account, the
``Priority`` plugin resolves the priority class into ``priority`` and
``preemptionPolicy``, and ``DefaultTolerationSeconds`` lets it stay five
minutes on a node that is not ready or unreachable. They run on create, in
that order, before the admission webhooks (which see their result), dry runs
included.

Not here: the ServiceAccount plugin's token volume and mounts, and its
refusal of a Pod whose service account does not exist (nothing in serve
creates the ``default`` service accounts a real cluster's controller does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ownergc.errors import Forbidden
from ownergc.protocols import JSONDict

from ..store import InMemoryStore
from .admission import AdmissionAttributes

__all__ = ["SYSTEM_PRIORITY_CLASSES", "PodAdmission"]

#: The priority classes kube-apiserver creates at start (name -> value).
SYSTEM_PRIORITY_CLASSES: Final = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
DEFAULT_PREEMPTION: Final = "PreemptLowerPriority"
#: DefaultTolerationSeconds' tolerations: the taint keys and the seconds.
NOT_READY: Final = "node.kubernetes.io/not-ready"
UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TOLERATION_SECONDS: Final = 300


class PodAdmission:
    """The ServiceAccount (its name only), Priority and DefaultTolerationSeconds plugins."""

    #: It reads no stored Pod, only PriorityClasses.
    wants_old_object = False

    def __init__(self, store: InMemoryStore) -> None:
        self.store = store

    async def admit(self, attrs: AdmissionAttributes) -> JSONDict | None:
        resource = attrs.resource
        pod = attrs.obj
        if (
            attrs.operation != "CREATE"
            or resource.group
            or resource.resource != "pods"
            or attrs.subresource is not None
            or not isinstance(pod, dict)
            or not isinstance(pod.get("spec"), dict)
        ):
            return attrs.obj
        pod = {**pod, "spec": dict(pod["spec"])}
        spec = pod["spec"]
        name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        spec["serviceAccountName"] = spec["serviceAccount"] = name
        await self._priority(spec, attrs.name or _name(pod))
        spec["tolerations"] = _with_default_tolerations(spec.get("tolerations"))
        return pod

    async def _priority(self, spec: JSONDict, pod_name: str) -> None:
        class_name = spec.get("priorityClassName")
        found = await self._priority_class(class_name) if class_name else await self._default()
        if found is None and class_name:
            raise Forbidden(
                f'pods "{pod_name}" is forbidden: no PriorityClass with name {class_name} '
                "was found",
                reason="Forbidden",
                details={"name": pod_name, "kind": "pods"},
            )
        found = found or _PriorityClass("", 0, DEFAULT_PREEMPTION)
        if found.name and not class_name:
            spec["priorityClassName"] = found.name
        given = spec.get("priority")
        if given is not None and given != found.value:
            raise Forbidden(
                f'pods "{pod_name}" is forbidden: the integer value of priority ({given}) must '
                "not be provided in pod spec; priority admission controller computed "
                f"{found.value} from the given PriorityClass name",
                reason="Forbidden",
                details={"name": pod_name, "kind": "pods"},
            )
        spec["priority"] = found.value
        if spec.get("preemptionPolicy") in (None, ""):
            spec["preemptionPolicy"] = found.preemption_policy

    async def _priority_class(self, name: str) -> _PriorityClass | None:
        # (read without a request of its own: admission's reads are not client requests)
        stored = self.store.get_object("scheduling.k8s.io/v1", "PriorityClass", name)
        if stored is None:
            value = SYSTEM_PRIORITY_CLASSES.get(name)
            return None if value is None else _PriorityClass(name, value, DEFAULT_PREEMPTION)
        return _PriorityClass.of(stored)

    async def _default(self) -> _PriorityClass | None:
        """The PriorityClass marked ``globalDefault`` (the lowest value if several)."""
        resource = self.store.resource_for("scheduling.k8s.io/v1", "PriorityClass")
        defaults = [
            _PriorityClass.of(c)
            for c in self.store.objects_of(resource)
            if c.get("globalDefault") is True
        ]
        return min(defaults, key=lambda found: found.value, default=None)


@dataclass(frozen=True, slots=True)
class _PriorityClass:
    """What the Priority plugin reads of a PriorityClass."""

    name: str
    value: int
    preemption_policy: str

    @classmethod
    def of(cls, stored: JSONDict) -> _PriorityClass:
        value = stored.get("value")
        policy = stored.get("preemptionPolicy") or DEFAULT_PREEMPTION
        name = stored["metadata"]["name"]
        return cls(str(name), value if isinstance(value, int) else 0, str(policy))


def _name(pod: JSONDict) -> str:
    meta = pod.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def _with_default_tolerations(tolerations: object) -> list[object]:
    """The Pod's tolerations, plus a 300 s NoExecute toleration of each of the two
    node-condition taints it does not tolerate yet (with that effect or any)."""
    given = list(tolerations) if isinstance(tolerations, list) else []
    for key in (NOT_READY, UNREACHABLE):
        tolerated = any(
            isinstance(t, dict)
            and (
                t.get("key") == key
                or (t.get("operator") == "Exists" and t.get("key") in (None, ""))
            )
            and t.get("effect") in (None, "", "NoExecute")
            for t in given
        )
        if not tolerated:
            given.append(
                {
                    "key": key,
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": TOLERATION_SECONDS,
                }
            )
    return given
