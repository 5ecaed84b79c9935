"""Three of kube-apiserver's default mutating admission plugins, for Pods.

A Pod created on a real cluster comes back with fields no defaulting sets:
the ``ServiceAccount`` plugin names the ``default`` service account, the
``Priority`` plugin resolves the priority class into ``priority`` and
``preemptionPolicy``, and ``DefaultTolerationSeconds`` lets it stay five
minutes on a node that is not ready or unreachable. They run on create, in
that order, before the admission webhooks (which see their result), dry runs
included.

By default the ServiceAccount plugin only names the service account (the
library's store has no ``default`` ServiceAccounts to look up). With
``service_accounts=True`` (what ``ownergc serve`` turns on, next to the
controller that creates those ServiceAccounts) it does what the plugin of a
Kubernetes 1.21+ server does: it refuses a Pod whose service account does
not exist (403; ``default`` is looked up again for up to about two seconds,
as the controller may not have created it yet), copies the service
account's ``imagePullSecrets`` into a Pod that has none, and, unless
``automountServiceAccountToken`` is false on the Pod (or, unset there, on
the ServiceAccount), mounts the bound token volume ``kube-api-access-xxxxx``
at ``/var/run/secrets/kubernetes.io/serviceaccount`` in every container and
init container that has nothing mounted there. Mirror Pods (annotated
``kubernetes.io/config.mirror``, the kubelet's copies of its static Pods) are
left as they are, in both modes; with ``service_accounts=True`` one that names
a service account, references a secret (an image pull secret, an
environment variable or ``envFrom`` of any container, a volume) or projects a
service account token is refused (403), as the plugin refuses it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

import anyio

from ownergc.errors import Forbidden
from ownergc.protocols import JSONDict

from .._priority_classes import SYSTEM_PRIORITY_CLASSES, other_default
from ..store import InMemoryStore
from .admission import AdmissionAttributes

__all__ = ["SYSTEM_PRIORITY_CLASSES", "PodAdmission"]

DEFAULT_PREEMPTION: Final = "PreemptLowerPriority"
#: DefaultTolerationSeconds' tolerations: the taint keys and the seconds.
NOT_READY: Final = "node.kubernetes.io/not-ready"
UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TOLERATION_SECONDS: Final = 300

#: The ServiceAccount plugin's bound token volume: name prefix, mount path, and
#: the token's lifetime (one hour and seven seconds, as kube-apiserver asks).
TOKEN_VOLUME_PREFIX: Final = "kube-api-access-"
TOKEN_MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION_SECONDS: Final = 3607
MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
#: The characters of the apiserver's generated name suffixes (no vowels, no 0/1/3).
_NAME_SUFFIX_CHARS: Final = "bcdfghjklmnpqrstvwxz2456789"
#: How often, and how far apart, a missing ``default`` ServiceAccount is looked up
#: again before the Pod is refused (the controller may be about to create it).
DEFAULT_SA_ATTEMPTS: Final = 10
DEFAULT_SA_RETRY: Final = (0.1, 0.2)


class PodAdmission:
    """The ServiceAccount, Priority and DefaultTolerationSeconds plugins.

    ``service_accounts=False`` (the default): the ServiceAccount plugin only sets
    the name; True: all of it (see the module's docstring). ``retry`` is the
    range of seconds between lookups of a missing ``default`` ServiceAccount.
    """

    #: It reads no stored Pod, only PriorityClasses and ServiceAccounts.
    wants_old_object = False

    def __init__(
        self,
        store: InMemoryStore,
        *,
        service_accounts: bool = False,
        retry: tuple[float, float] = DEFAULT_SA_RETRY,
    ) -> None:
        self.store = store
        self.service_accounts = service_accounts
        self.retry = retry

    async def admit(self, attrs: AdmissionAttributes) -> JSONDict | None:
        resource = attrs.resource
        pod = attrs.obj
        if (resource.group, resource.resource) == ("scheduling.k8s.io", "priorityclasses"):
            self._one_default(attrs)
            return attrs.obj
        if (
            attrs.operation not in ("CREATE", "UPDATE")
            or resource.group
            or resource.resource != "pods"
            or attrs.subresource is not None
            or not isinstance(pod, dict)
            or not isinstance(pod.get("spec"), dict)
        ):
            return attrs.obj
        pod = {**pod, "spec": dict(pod["spec"])}
        spec = pod["spec"]
        pod_name = attrs.name or _name(pod)
        if attrs.operation == "UPDATE":
            # Priority keeps what the stored Pod was given; DefaultTolerationSeconds, which
            # looks at no operation, adds its tolerations again when they were dropped.
            self._keep_priority(spec, attrs.namespace or _namespace(pod), pod_name)
            spec["tolerations"] = _with_default_tolerations(spec.get("tolerations"))
            return pod
        if _is_mirror(pod):
            refusal = _mirror_pod_refusal(spec) if self.service_accounts else None
            if refusal is not None:
                raise Forbidden(
                    f'pods "{pod_name}" is forbidden: {refusal}',
                    reason="Forbidden",
                    details={"name": pod_name, "kind": "pods"},
                )
        elif self.service_accounts:
            namespace = attrs.namespace or _namespace(pod)
            if self._namespace_active(namespace):
                await self._service_account(pod, namespace, pod_name)
        else:
            name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
            spec["serviceAccountName"] = spec["serviceAccount"] = name
        await self._priority(spec, pod_name)
        spec["tolerations"] = _with_default_tolerations(spec.get("tolerations"))
        return pod

    def _one_default(self, attrs: AdmissionAttributes) -> None:
        """The Priority plugin's other half: no second ``globalDefault`` class."""
        if attrs.operation not in ("CREATE", "UPDATE") or not isinstance(attrs.obj, dict):
            return
        stored = self.store.objects_of(
            self.store.resource_for("scheduling.k8s.io/v1", "PriorityClass")
        )
        default = other_default(attrs.obj, attrs.operation, stored)
        if default is not None:
            name = attrs.name or _name(attrs.obj)
            raise Forbidden(
                f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: PriorityClass '
                f"{default} is already marked as default. Only one default can exist",
                reason="Forbidden",
                details={"name": name, "group": "scheduling.k8s.io", "kind": "priorityclasses"},
            )

    def _keep_priority(self, spec: JSONDict, namespace: str, pod_name: str) -> None:
        if spec.get("priority") is not None and spec.get("preemptionPolicy") is not None:
            return
        stored = self.store.get_object("v1", "Pod", pod_name, namespace)
        old = stored.get("spec") if stored is not None else None
        if isinstance(old, dict):
            for key in ("priority", "preemptionPolicy"):
                if spec.get(key) is None and old.get(key) is not None:
                    spec[key] = old[key]

    def _namespace_active(self, namespace: str) -> bool:
        """NamespaceLifecycle runs first on a real server: a Pod for a namespace that
        is missing or terminating is refused by it (here, by the store), not for its
        service account."""
        ns = self.store.get_object("v1", "Namespace", namespace)
        return ns is not None and "deletionTimestamp" not in (ns.get("metadata") or {})

    async def _service_account(self, pod: JSONDict, namespace: str, pod_name: str) -> None:
        """Name the service account, refuse the Pod if it does not exist, copy its
        image pull secrets and mount its token (``pod["spec"]`` is a copy)."""
        spec = pod["spec"]
        name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        spec["serviceAccountName"] = spec["serviceAccount"] = name
        account = await self._lookup_service_account(namespace, name)
        if account is None:
            raise Forbidden(
                f'pods "{pod_name}" is forbidden: error looking up service account '
                f'{namespace}/{name}: serviceaccount "{name}" not found',
                reason="Forbidden",
                details={"name": pod_name, "kind": "pods"},
            )
        if _automount(spec, account):
            _mount_token(spec)
        pull_secrets = account.get("imagePullSecrets")
        if not spec.get("imagePullSecrets") and isinstance(pull_secrets, list) and pull_secrets:
            spec["imagePullSecrets"] = [
                {"name": s.get("name")} for s in pull_secrets if isinstance(s, dict)
            ]

    async def _lookup_service_account(self, namespace: str, name: str) -> JSONDict | None:
        """The ServiceAccount; ``default`` is looked for again a few times, as
        kube-apiserver does, because its controller may not have made it yet."""
        attempts = DEFAULT_SA_ATTEMPTS if name == "default" else 1
        pause = random.uniform(*self.retry)
        for attempt in range(attempts):
            if attempt:
                await anyio.sleep(pause)
            found = self.store.get_object("v1", "ServiceAccount", name, namespace)
            if found is not None:
                return found
        return None

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
        policy = spec.get("preemptionPolicy")
        if policy not in (None, "") and policy != found.preemption_policy:
            raise Forbidden(
                f'pods "{pod_name}" is forbidden: the string value of PreemptionPolicy '
                f"({policy}) must not be provided in pod spec; priority admission controller "
                f"computed {found.preemption_policy} from the given PriorityClass name",
                reason="Forbidden",
                details={"name": pod_name, "kind": "pods"},
            )
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
    """The name a refusal gives: the Pod's, else its generateName, else "Unknown"."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    for key in ("name", "generateName"):
        name = meta.get(key)
        if isinstance(name, str) and name:
            return name
    return "Unknown"


def _namespace(pod: JSONDict) -> str:
    meta = pod.get("metadata")
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    return namespace if isinstance(namespace, str) else ""


def _is_mirror(pod: JSONDict) -> bool:
    meta = pod.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return isinstance(annotations, dict) and MIRROR_POD_ANNOTATION in annotations


#: The volume sources that name a secret: the source, and where its name is.
_SECRET_VOLUME_SOURCES: Final = (
    "secret",
    "azureFile",
    "cephfs",
    "cinder",
    "flexVolume",
    "iscsi",
    "rbd",
    "scaleIO",
    "storageos",
)


def _mirror_pod_refusal(spec: JSONDict) -> str | None:
    """Why the ServiceAccount plugin refuses this mirror Pod, if it does: the kubelet's
    copy of a static Pod may not name a service account, reference a secret, or
    project a service account token."""
    if spec.get("serviceAccountName"):
        return "a mirror pod may not reference service accounts"
    volumes = _items(spec.get("volumes"))
    if _items(spec.get("imagePullSecrets")) or any(
        _references_secret(container)
        for key in ("containers", "initContainers", "ephemeralContainers")
        for container in _items(spec.get(key))
    ):
        return "a mirror pod may not reference secrets"
    for volume in volumes:
        csi = volume.get("csi")
        sources = _projected_sources(volume)
        if (
            any(
                isinstance(volume.get(kind), dict) and _names_secret(kind, volume[kind])
                for kind in _SECRET_VOLUME_SOURCES
            )
            or (isinstance(csi, dict) and isinstance(csi.get("nodePublishSecretRef"), dict))
            or any(isinstance(source.get("secret"), dict) for source in sources)
        ):
            return "a mirror pod may not reference secrets"
    for volume in volumes:
        if any(
            isinstance(source.get("serviceAccountToken"), dict)
            for source in _projected_sources(volume)
        ):
            return "a mirror pod may not use ServiceAccountToken volume projections"
    return None


def _items(value: object) -> list[JSONDict]:
    """The objects of a list field (nothing when it is not a list)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _projected_sources(volume: JSONDict) -> list[JSONDict]:
    projected = volume.get("projected")
    return _items(projected.get("sources")) if isinstance(projected, dict) else []


def _names_secret(kind: str, source: JSONDict) -> bool:
    """Does this volume source reference a secret? ``secret`` always does; Azure File
    by a ``secretName`` that is not empty; the others by a ``secretRef``."""
    if kind == "secret":
        return True
    if kind == "azureFile":
        return bool(source.get("secretName"))
    return isinstance(source.get("secretRef"), dict)


def _references_secret(container: JSONDict) -> bool:
    """Does this container take an environment variable (or all of them) from a secret?"""
    return any(
        isinstance(source.get("secretRef"), dict) for source in _items(container.get("envFrom"))
    ) or any(
        isinstance((variable.get("valueFrom") or {}).get("secretKeyRef"), dict)
        for variable in _items(container.get("env"))
        if isinstance(variable.get("valueFrom") or {}, dict)
    )


def _automount(spec: JSONDict, account: JSONDict) -> bool:
    """The Pod's ``automountServiceAccountToken`` if set, else the ServiceAccount's,
    else true."""
    for choice in (
        spec.get("automountServiceAccountToken"),
        account.get("automountServiceAccountToken"),
    ):
        if isinstance(choice, bool):
            return choice
    return True


def token_volume(name: str) -> JSONDict:
    """The projected volume the ServiceAccount plugin adds: the bound token, the
    cluster's CA bundle and the Pod's namespace."""
    return {
        "name": name,
        "projected": {
            "sources": [
                {
                    "serviceAccountToken": {
                        "expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                        "path": "token",
                    }
                },
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                            }
                        ]
                    }
                },
            ],
            "defaultMode": 420,
        },
    }


def _mount_token(spec: JSONDict) -> None:
    """Mount the token volume in each container and init container (not ephemeral
    ones) with nothing at the token path; add the volume when one was mounted,
    unless the Pod has a ``kube-api-access-`` volume already (which is then used)."""
    given = spec.get("volumes")
    volumes: list[object] = list(given) if isinstance(given, list) else []
    existing = next(
        (
            v["name"]
            for v in volumes
            if isinstance(v, dict)
            and isinstance(v.get("name"), str)
            and v["name"].startswith(TOKEN_VOLUME_PREFIX)
        ),
        None,
    )
    volume_name = existing or TOKEN_VOLUME_PREFIX + "".join(random.choices(_NAME_SUFFIX_CHARS, k=5))
    mount = {"name": volume_name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
    mounted = False
    for field in ("initContainers", "containers"):
        containers = spec.get(field)
        if not isinstance(containers, list):
            continue
        copied: list[object] = []
        for container in containers:
            if isinstance(container, dict):
                mounts = container.get("volumeMounts")
                mounts = list(mounts) if isinstance(mounts, list) else []
                if not any(
                    isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts
                ):
                    container = {**container, "volumeMounts": [*mounts, dict(mount)]}
                    mounted = True
            copied.append(container)
        spec[field] = copied
    if mounted and existing is None:
        spec["volumes"] = [*volumes, token_volume(volume_name)]


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
