"""Built-in kinds' defaults, as kube-apiserver v1.30 fills them in.

A real server decodes every object it is sent into its Go type and runs the
scheme's defaulting functions on it, so a Deployment created without
``replicas`` is stored, returned and watched with ``replicas: 1``, a Pod's
containers get ``imagePullPolicy`` and ``terminationMessagePath``, a Service
gets ``type: ClusterIP`` and ``sessionAffinity: None``. Clients and
controllers read those fields back; a test apiserver that left them out made
``.spec.replicas`` None in a test that works on a cluster. Then, on create,
each kind's registry strategy prepares the object: a Pod's status starts
``Pending`` with its QoS class, a Job gets its generated selector and
labels, and a kind with a status subresource starts from its empty status,
which the Go types print with their non-optional counters at 0.

Two steps, as on the server:

* :func:`apply_defaults` -- the decoding defaults, on every create and update
  (and on the result of a patch or an apply), before admission and the field
  manager see the object: so the writer of an Update owns the defaulted
  fields, as on a real server; an applier, whose fields are its applied
  configuration, does not. Idempotent: a field already set is never touched.
  Also the one conversion that changes an object's content: a Secret's
  ``stringData`` merged into ``data``;
* :func:`prepare_for_create` -- the strategies' create-time preparation, once
  the object has its uid.

Facts: kube-apiserver v1.30's defaulting and strategies, checked where they
were already present against a real v1.20.2 server's answers
(``tests/data/real-apiserver-1.20/defaults.json``); where 1.30 differs from
1.20 the rule says so. Not here: what admission plugins add on a real
cluster (a Pod's ServiceAccount and its token volume, ``priority``,
the not-ready/unreachable tolerations, PVC protection finalizers), and
quantities are kept as written (the server rewrites ``1000m`` as ``1``).
"""

from __future__ import annotations

import base64
import copy
import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any, Final

from ownergc.protocols import JSONDict

from ._patch import copy_json
from ._selectors import label_selector_matches, label_selector_requirements
from ._validation import FieldError

__all__ = [
    "STATUS_KEPT_ON_CREATE",
    "apply_defaults",
    "defaulted",
    "has_defaults",
    "prepare_for_create",
    "prepare_for_update",
    "qos_class",
]

Defaulter = Callable[[JSONDict, str], None]
#: A strategy's create preparation: the object, its version and uid -> errors.
Preparer = Callable[[JSONDict, str, str], list[FieldError]]


def _obj(parent: JSONDict, key: str) -> JSONDict | None:
    """``parent[key]`` when it is an object; None otherwise (a wrong type is
    validation's business, not defaulting's)."""
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def _ensure_obj(parent: JSONDict, key: str) -> JSONDict | None:
    """``parent[key]``, made an empty object when absent or null (a Go struct value
    the server always prints); None when it holds something else."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def _objects(parent: JSONDict, key: str) -> list[JSONDict]:
    """The objects of the list ``parent[key]`` (other entries skipped)."""
    value = parent.get(key)
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, dict)]


def _unset(parent: JSONDict, key: str, value: Any) -> None:
    """``parent[key] = value`` when it is left out or null (a Go pointer field: an
    empty string or a zero is a value there)."""
    if parent.get(key) is None:
        parent[key] = value


def _default(parent: JSONDict, key: str, value: Any) -> None:
    """``parent[key] = value`` unless it holds something other than null/empty string."""
    if parent.get(key) in (None, ""):
        parent[key] = value


def _of_spec(default_spec: Callable[[JSONDict, JSONDict, str], None]) -> Defaulter:
    """A kind's defaulter that works on its ``spec`` (nothing to do without one)."""

    def default(obj: JSONDict, version: str) -> None:
        spec = _obj(obj, "spec")
        if spec is not None:
            default_spec(obj, spec, version)

    return default


# -- pods and pod templates ----------------------------------------------------

TERMINATION_MESSAGE_PATH: Final = "/dev/termination-log"


def image_pull_policy(image: Any) -> str:
    """``Always`` for an image whose tag is ``latest``, spelled or implied (no tag and
    no digest); ``IfNotPresent`` otherwise."""
    if not isinstance(image, str):
        return "IfNotPresent"
    name, at, _digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]  # a registry's host:port is before the last "/"
    if ":" not in last:
        return "IfNotPresent" if at else "Always"  # (a digest implies no tag)
    return "Always" if last.rsplit(":", 1)[1] == "latest" else "IfNotPresent"


def _probe(probe: JSONDict) -> None:
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if probe.get(key) in (None, 0):
            probe[key] = value
    _handler(probe)
    grpc = _obj(probe, "grpc")
    if grpc is not None and grpc.get("service") is None:
        grpc["service"] = ""  # (1.24+: an explicit default of the API)


def _handler(handler: JSONDict) -> None:
    """An exec/httpGet/tcpSocket action: an HTTP GET's path and scheme."""
    http_get = _obj(handler, "httpGet")
    if http_get is not None:
        _default(http_get, "path", "/")
        _default(http_get, "scheme", "HTTP")


def _field_ref(holder: JSONDict) -> None:
    field_ref = _obj(holder, "fieldRef")
    if field_ref is not None:
        _default(field_ref, "apiVersion", "v1")


def _container(container: JSONDict, host_network_ports: bool) -> None:
    if container.get("imagePullPolicy") in (None, ""):
        container["imagePullPolicy"] = image_pull_policy(container.get("image"))
    _default(container, "terminationMessagePath", TERMINATION_MESSAGE_PATH)
    _default(container, "terminationMessagePolicy", "File")
    resources = _ensure_obj(container, "resources")
    if resources:
        _resource_list(resources, "requests")
        _resource_list(resources, "limits")
    for port in _objects(container, "ports"):
        _default(port, "protocol", "TCP")
        if host_network_ports and port.get("hostPort") in (None, 0):
            container_port = port.get("containerPort")
            if container_port is not None:
                port["hostPort"] = container_port
    for env in _objects(container, "env"):
        value_from = _obj(env, "valueFrom")
        if value_from is not None:
            _field_ref(value_from)
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = _obj(container, key)
        if probe is not None:
            _probe(probe)
    lifecycle = _obj(container, "lifecycle")
    if lifecycle is not None:
        for key in ("postStart", "preStop"):
            handler = _obj(lifecycle, key)
            if handler is not None:
                _handler(handler)


_VOLUME_SOURCES: Final = frozenset((
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder",
    "cephfs", "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO",
    "storageos", "csi", "ephemeral", "image",
))  # fmt: skip


def _host_path(source: JSONDict) -> None:
    _unset(source, "type", "")


def _iscsi(source: JSONDict) -> None:
    _default(source, "iscsiInterface", "default")


def _rbd(source: JSONDict) -> None:
    _default(source, "pool", "rbd")
    _default(source, "user", "admin")
    _default(source, "keyring", "/etc/ceph/keyring")


def _azure_disk(source: JSONDict) -> None:
    for key, value in (
        ("cachingMode", "ReadWrite"),
        ("kind", "Shared"),
        ("fsType", "ext4"),
        ("readOnly", False),
    ):
        if source.get(key) is None:
            source[key] = value


def _scale_io(source: JSONDict) -> None:
    _default(source, "storageMode", "ThinProvisioned")
    _default(source, "fsType", "xfs")


def _default_mode(source: JSONDict) -> None:
    _unset(source, "defaultMode", 420)  # 0644


def _downward_api(source: JSONDict) -> None:
    _default_mode(source)
    for item in _objects(source, "items"):
        _field_ref(item)


def _projected(source: JSONDict) -> None:
    _default_mode(source)
    for projection in _objects(source, "sources"):
        token = _obj(projection, "serviceAccountToken")
        if token is not None and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = 3600
        downward = _obj(projection, "downwardAPI")
        if downward is not None:
            for item in _objects(downward, "items"):
                _field_ref(item)


def _ephemeral(source: JSONDict) -> None:
    template = _obj(source, "volumeClaimTemplate")
    spec = _obj(template, "spec") if template is not None else None
    if spec is not None:
        _claim_spec(spec)


def _empty_dir(source: JSONDict) -> None:
    if source.get("sizeLimit") is not None:
        source["sizeLimit"] = canonical_quantity(source["sizeLimit"], milli=False)


#: The volume sources a persistent volume shares with a pod, and their defaults.
_SHARED_SOURCES: Final[dict[str, Callable[[JSONDict], None]]] = {
    "hostPath": _host_path,
    "iscsi": _iscsi,
    "rbd": _rbd,
    "azureDisk": _azure_disk,
    "scaleIO": _scale_io,
}
#: A pod volume's sources with defaults.
_POD_SOURCES: Final[dict[str, Callable[[JSONDict], None]]] = {
    **_SHARED_SOURCES,
    "secret": _default_mode,
    "configMap": _default_mode,
    "downwardAPI": _downward_api,
    "projected": _projected,
    "ephemeral": _ephemeral,
    "emptyDir": _empty_dir,
}


def _sources(holder: JSONDict, defaulters: dict[str, Callable[[JSONDict], None]]) -> None:
    """The defaults of the volume sources ``holder`` has (found by key, in C)."""
    for key in holder.keys() & defaulters.keys():
        source = holder[key]
        if isinstance(source, dict):
            defaulters[key](source)


def _pod_volume(volume: JSONDict) -> None:
    if volume.keys().isdisjoint(_VOLUME_SOURCES):
        volume["emptyDir"] = {}
        return
    _sources(volume, _POD_SOURCES)


def _pod_spec(spec: JSONDict, *, is_pod: bool) -> None:
    """A PodSpec's defaults. ``is_pod``: of a Pod itself rather than a template (since
    1.28 only a Pod's host-network containers get ``hostPort`` defaulted)."""
    _default(spec, "dnsPolicy", "ClusterFirst")
    _default(spec, "restartPolicy", "Always")
    _ensure_obj(spec, "securityContext")
    _unset(spec, "terminationGracePeriodSeconds", 30)
    _default(spec, "schedulerName", "default-scheduler")
    # (the v1 conversion: the deprecated serviceAccount mirrors serviceAccountName,
    # which it stands in for when only it is given)
    account = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if isinstance(account, str) and account:
        spec["serviceAccountName"] = spec["serviceAccount"] = account
    host_network_ports = is_pod and spec.get("hostNetwork") is True
    for key in ("containers", "initContainers"):
        for container in _objects(spec, key):
            _container(container, host_network_ports)
    for container in _objects(spec, "ephemeralContainers"):
        _container(container, False)
    for volume in _objects(spec, "volumes"):
        _pod_volume(volume)
    _resource_list(spec, "overhead")


def _embedded_meta(embedded: JSONDict) -> None:
    """An embedded object's metadata (a template's): it prints
    ``creationTimestamp: null``, as every Go ObjectMeta does."""
    meta = _ensure_obj(embedded, "metadata")
    if meta is not None and "creationTimestamp" not in meta:
        meta["creationTimestamp"] = None


def _pod_template(holder: JSONDict, key: str = "template") -> None:
    """A pod template under ``holder[key]``: its metadata and its PodSpec."""
    template = _obj(holder, key)
    if template is None:
        return
    _embedded_meta(template)
    spec = _obj(template, "spec")
    if spec is not None:
        _pod_spec(spec, is_pod=False)


@_of_spec
def _pod(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _pod_spec(spec, is_pod=True)
    _unset(spec, "enableServiceLinks", True)
    # A Pod's (not a template's) requests default to its limits, per resource.
    for key in ("containers", "initContainers"):
        for container in _objects(spec, key):
            resources = _obj(container, "resources")
            limits = resources and _obj(resources, "limits")
            if resources is None or not limits:
                continue
            requests = _ensure_obj(resources, "requests")
            if requests is not None:
                for name, quantity in limits.items():
                    requests.setdefault(name, quantity)


def _pod_template_kind(obj: JSONDict, version: str) -> None:
    _pod_template(obj)


# -- workloads -------------------------------------------------------------------


def _replicas(spec: JSONDict) -> None:
    _unset(spec, "replicas", 1)


def _revision_history(spec: JSONDict) -> None:
    _unset(spec, "revisionHistoryLimit", 10)


@_of_spec
def _deployment(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _replicas(spec)
    strategy = _ensure_obj(spec, "strategy")
    if strategy is not None:
        _default(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _ensure_obj(strategy, "rollingUpdate")
            if rolling is not None:
                for key in ("maxUnavailable", "maxSurge"):
                    if rolling.get(key) is None:
                        rolling[key] = "25%"
    _revision_history(spec)
    _unset(spec, "progressDeadlineSeconds", 600)
    _pod_template(spec)


@_of_spec
def _replica_set(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _replicas(spec)
    _pod_template(spec)


@_of_spec
def _replication_controller(obj: JSONDict, spec: JSONDict, version: str) -> None:
    template = _obj(spec, "template")
    labels = template and _obj(template.get("metadata") or {}, "labels")
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = _obj(obj, "metadata")
        if meta is not None and not meta.get("labels"):
            meta["labels"] = dict(labels)
    _replicas(spec)
    _pod_template(spec)


def _persistent_volume_claim_template(claim: JSONDict) -> None:
    """A StatefulSet's volumeClaimTemplates entry: a whole embedded PVC as printed."""
    claim.setdefault("apiVersion", "v1")
    claim.setdefault("kind", "PersistentVolumeClaim")
    _embedded_meta(claim)
    _persistent_volume_claim(claim, "v1")


@_of_spec
def _stateful_set(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _default(spec, "podManagementPolicy", "OrderedReady")
    strategy = _ensure_obj(spec, "updateStrategy")
    if strategy is not None:
        if strategy.get("type") in (None, ""):
            strategy["type"] = "RollingUpdate"
            _ensure_obj(strategy, "rollingUpdate")
        rolling = _obj(strategy, "rollingUpdate")
        if (
            strategy["type"] == "RollingUpdate"
            and rolling is not None
            and rolling.get("partition") is None
        ):
            rolling["partition"] = 0
    _replicas(spec)
    _revision_history(spec)
    # 1.27+ (StatefulSetAutoDeletePVC, on by default): both cases keep the claims.
    retention = _ensure_obj(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        _default(retention, "whenDeleted", "Retain")
        _default(retention, "whenScaled", "Retain")
    _pod_template(spec)
    for claim in _objects(spec, "volumeClaimTemplates"):
        _persistent_volume_claim_template(claim)


@_of_spec
def _daemon_set(obj: JSONDict, spec: JSONDict, version: str) -> None:
    strategy = _ensure_obj(spec, "updateStrategy")
    if strategy is not None:
        _default(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _ensure_obj(strategy, "rollingUpdate")
            if rolling is not None:
                _unset(rolling, "maxUnavailable", 1)
                if rolling.get("maxSurge") is None:  # (1.22+)
                    rolling["maxSurge"] = 0
    _revision_history(spec)
    _pod_template(spec)


def _job_spec(spec: JSONDict) -> None:
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    _unset(spec, "parallelism", 1)
    if spec.get("backoffLimit") is None:
        # 1.28+: with a per-index limit the job-wide one is unlimited
        per_index = spec.get("backoffLimitPerIndex") is not None
        spec["backoffLimit"] = 2147483647 if per_index else 6
    if spec.get("manualSelector") is None:  # (1.29+)
        spec["manualSelector"] = False
    _default(spec, "completionMode", "NonIndexed")  # (1.22+)
    if spec.get("suspend") is None:  # (1.22+)
        spec["suspend"] = False
    for rule in _objects(_obj(spec, "podFailurePolicy") or {}, "rules"):
        for condition in _objects(rule, "onPodConditions"):
            _default(condition, "status", "True")
    if spec.get("podReplacementPolicy") in (None, ""):  # (1.29+, beta on by default)
        failure_policy = spec.get("podFailurePolicy") is not None
        spec["podReplacementPolicy"] = "Failed" if failure_policy else "TerminatingOrFailed"


@_of_spec
def _job(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _job_spec(spec)
    _pod_template(spec)
    # A Job without labels takes its template's (the very same map on the server, so
    # it also gets the labels prepare_for_create generates).
    template = _obj(spec, "template")
    labels = template and _obj(template.get("metadata") or {}, "labels")
    meta = _obj(obj, "metadata")
    if labels and meta is not None and not meta.get("labels"):
        meta["labels"] = dict(labels)


@_of_spec
def _cron_job(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _default(spec, "concurrencyPolicy", "Allow")
    _unset(spec, "suspend", False)
    _unset(spec, "successfulJobsHistoryLimit", 3)
    _unset(spec, "failedJobsHistoryLimit", 1)
    job_template = _obj(spec, "jobTemplate")
    if job_template is None:
        return
    _embedded_meta(job_template)
    job_spec = _obj(job_template, "spec")
    if job_spec is not None:  # (the Job's own defaults wait for the Job)
        _pod_template(job_spec)


# -- services, storage, the rest of core ------------------------------------------


def _service(obj: JSONDict, version: str) -> None:
    _service_status(obj)
    spec = _obj(obj, "spec")
    if spec is not None:
        _service_spec(spec)


def _service_spec(spec: JSONDict) -> None:
    _default(spec, "sessionAffinity", "None")
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        config = _ensure_obj(spec, "sessionAffinityConfig")
        client_ip = config is not None and _ensure_obj(config, "clientIP")
        if client_ip and client_ip.get("timeoutSeconds") is None:
            client_ip["timeoutSeconds"] = 10800
    _default(spec, "type", "ClusterIP")
    kind = spec["type"]
    for port in _objects(spec, "ports"):
        _default(port, "protocol", "TCP")
        if port.get("targetPort") in (None, 0, ""):
            number = port.get("port")
            if number is not None:
                port["targetPort"] = number
    if kind in ("NodePort", "LoadBalancer") or (kind == "ClusterIP" and spec.get("externalIPs")):
        _default(spec, "externalTrafficPolicy", "Cluster")  # (externalIPs: 1.28+)
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True
    if kind != "ExternalName":
        _default(spec, "internalTrafficPolicy", "Cluster")  # (1.22+)
        families = spec.get("ipFamilies")
        cluster_ips = spec.get("clusterIPs")
        # (A dual-stack server also adds the missing family to a RequireDualStack
        # Service's one; this server's service network is single-stack IPv4.)
        if spec.get("ipFamilyPolicy") is None and (
            (isinstance(families, list) and len(families) == 2)
            or (isinstance(cluster_ips, list) and len(cluster_ips) == 2)
        ):
            spec["ipFamilyPolicy"] = "RequireDualStack"
        # What the registry's allocation then settles on this server's single-stack
        # IPv4 service network: one address family; a headless Service without a
        # selector asks for every family the cluster has.
        cluster_ip = spec.get("clusterIP")
        if cluster_ip not in (None, "") and cluster_ips in (None, []):
            spec["clusterIPs"] = [cluster_ip]
        if spec.get("ipFamilyPolicy") is None:
            open_headless = cluster_ip == "None" and not spec.get("selector")
            spec["ipFamilyPolicy"] = "RequireDualStack" if open_headless else "SingleStack"
        if spec.get("ipFamilies") in (None, []):
            spec["ipFamilies"] = ["IPv4"]


def _service_status(obj: JSONDict) -> None:
    """A load balancer's ingress points: ``ipMode: VIP`` for an address (1.30, beta on)."""
    status = _obj(obj, "status")
    balancer = status and _obj(status, "loadBalancer")
    for point in _objects(balancer or {}, "ingress"):
        if point.get("ip") and point.get("ipMode") is None:
            point["ipMode"] = "VIP"


def _node(obj: JSONDict, version: str) -> None:
    status = _obj(obj, "status")
    capacity = status and _obj(status, "capacity")
    if status and capacity is not None and status.get("allocatable") is None:
        status["allocatable"] = dict(capacity)  # (allocatable defaults to the capacity)
    if status:
        _resource_list(status, "capacity")
        _resource_list(status, "allocatable")


def _secret(obj: JSONDict, version: str) -> None:
    _default(obj, "type", "Opaque")
    # v1's write-only stringData: merged into data (base64), taking precedence.
    string_data = obj.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = obj.get("data")
        data = dict(data) if isinstance(data, dict) else {}
        for key, value in string_data.items():
            if isinstance(value, str):
                data[key] = base64.b64encode(value.encode()).decode()
        obj["data"] = data


def _claim_spec(spec: JSONDict) -> None:
    """A PersistentVolumeClaimSpec (a claim's, a claim template's)."""
    _unset(spec, "volumeMode", "Filesystem")
    resources = _obj(spec, "resources")
    if resources:
        _resource_list(resources, "requests")
        _resource_list(resources, "limits")
    # (1.24+, AnyVolumeDataSource: the two data source fields mirror each other)
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if isinstance(source, dict) and ref is None:
        spec["dataSourceRef"] = dict(source)
    elif isinstance(ref, dict) and source is None and not ref.get("namespace"):
        spec["dataSource"] = {k: v for k, v in ref.items() if k != "namespace"}


def _persistent_volume_claim(obj: JSONDict, version: str) -> None:
    spec = _obj(obj, "spec")
    if spec is not None:
        _claim_spec(spec)
    status = _ensure_obj(obj, "status")
    if status is not None:
        _default(status, "phase", "Pending")


def _persistent_volume(obj: JSONDict, version: str) -> None:
    spec = _obj(obj, "spec")
    if spec is not None:
        _default(spec, "persistentVolumeReclaimPolicy", "Retain")
        _unset(spec, "volumeMode", "Filesystem")
        _sources(spec, _SHARED_SOURCES)
        _resource_list(spec, "capacity")
    status = _ensure_obj(obj, "status")
    if status is not None:
        _default(status, "phase", "Pending")


def _endpoints(obj: JSONDict, version: str) -> None:
    for subset in _objects(obj, "subsets"):
        for port in _objects(subset, "ports"):
            _default(port, "protocol", "TCP")


@_of_spec
def _limit_range(obj: JSONDict, spec: JSONDict, version: str) -> None:
    if spec.get("limits") == []:
        spec["limits"] = None  # (as kube-apiserver answers an empty list)
    for item in _objects(spec, "limits"):
        if item.get("type") != "Container":
            continue
        default = dict(_obj(item, "default") or {})
        for name, quantity in (_obj(item, "max") or {}).items():
            default.setdefault(name, quantity)
        request = dict(_obj(item, "defaultRequest") or {})
        for name, quantity in default.items():
            request.setdefault(name, quantity)
        for name, quantity in (_obj(item, "min") or {}).items():
            request.setdefault(name, quantity)
        # (empty maps are not printed)
        for key, value in (("default", default), ("defaultRequest", request)):
            if value:
                item[key] = value
        for key in ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio"):
            _resource_list(item, key)


@_of_spec
def _resource_quota(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _resource_list(spec, "hard")


# -- other groups ---------------------------------------------------------------


@_of_spec
def _hpa(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _unset(spec, "minReplicas", 1)
    if version == "v1":
        _unset(spec, "targetCPUUtilizationPercentage", 80)
        return
    if not spec.get("metrics"):
        target: JSONDict = {"target": {"type": "Utilization", "averageUtilization": 80}}
        spec["metrics"] = [{"type": "Resource", "resource": {"name": "cpu", **target}}]
    behavior = _obj(spec, "behavior")
    if behavior is None:
        return
    scale_up = _ensure_obj(behavior, "scaleUp")
    if scale_up is not None:
        _unset(scale_up, "stabilizationWindowSeconds", 0)
        _default(scale_up, "selectPolicy", "Max")
        if scale_up.get("policies") is None:
            scale_up["policies"] = [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ]
    scale_down = _ensure_obj(behavior, "scaleDown")
    if scale_down is not None:
        _default(scale_down, "selectPolicy", "Max")
        _unset(scale_down, "policies", [{"type": "Percent", "value": 100, "periodSeconds": 15}])


@_of_spec
def _network_policy(obj: JSONDict, spec: JSONDict, version: str) -> None:
    for direction in ("ingress", "egress"):
        for rule in _objects(spec, direction):
            for port in _objects(rule, "ports"):
                if port.get("protocol") is None:  # (a pointer: "" is kept, and refused)
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types


@_of_spec
def _ingress_class(obj: JSONDict, spec: JSONDict, version: str) -> None:
    parameters = _obj(spec, "parameters")
    if parameters is not None:
        _default(parameters, "scope", "Cluster")  # (1.22+)


def _binding(obj: JSONDict, version: str) -> None:
    role_ref = _ensure_obj(obj, "roleRef")  # (a struct value: defaulted when absent too)
    if role_ref is not None:
        _default(role_ref, "apiGroup", "rbac.authorization.k8s.io")
    for subject in _objects(obj, "subjects"):
        if subject.get("apiGroup") in (None, "") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = "rbac.authorization.k8s.io"


def _storage_class(obj: JSONDict, version: str) -> None:
    _default(obj, "reclaimPolicy", "Delete")
    _default(obj, "volumeBindingMode", "Immediate")


def _csi_driver(obj: JSONDict, version: str) -> None:
    spec = _ensure_obj(obj, "spec")
    if spec is None:
        return
    for key, value in (
        ("attachRequired", True),
        ("podInfoOnMount", False),
        ("storageCapacity", False),  # (1.24+)
        ("requiresRepublish", False),  # (1.21+)
        ("seLinuxMount", False),  # (1.27+, beta on by default)
    ):
        if spec.get(key) is None:
            spec[key] = value
    _default(spec, "fsGroupPolicy", "ReadWriteOnceWithFSType")
    if spec.get("volumeLifecycleModes") in (None, []):
        spec["volumeLifecycleModes"] = ["Persistent"]


def _priority_class(obj: JSONDict, version: str) -> None:
    _default(obj, "value", 0)  # (an int32 without omitempty: always written)
    _default(obj, "preemptionPolicy", "PreemptLowerPriority")


def _endpoint_slice(obj: JSONDict, version: str) -> None:
    for port in _objects(obj, "ports"):
        _default(port, "protocol", "TCP")
        _unset(port, "name", "")
    for endpoint in _objects(obj, "endpoints"):
        _ensure_obj(endpoint, "conditions")


def _webhooks(obj: JSONDict, version: str, *, mutating: bool) -> None:
    for webhook in _objects(obj, "webhooks"):
        _default(webhook, "failurePolicy", "Fail")
        _default(webhook, "matchPolicy", "Equivalent")
        _ensure_obj(webhook, "namespaceSelector")
        _ensure_obj(webhook, "objectSelector")
        _unset(webhook, "timeoutSeconds", 10)
        if mutating:
            _default(webhook, "reinvocationPolicy", "Never")
        for rule in _objects(webhook, "rules"):
            _default(rule, "scope", "*")
        client = _obj(webhook, "clientConfig")
        service = client and _obj(client, "service")
        if service and service.get("port") is None:
            service["port"] = 443


def _validating_webhooks(obj: JSONDict, version: str) -> None:
    _webhooks(obj, version, mutating=False)


def _mutating_webhooks(obj: JSONDict, version: str) -> None:
    _webhooks(obj, version, mutating=True)


def _match_resources(match: JSONDict | None) -> None:
    if match is None:
        return
    _default(match, "matchPolicy", "Equivalent")
    _ensure_obj(match, "namespaceSelector")
    _ensure_obj(match, "objectSelector")
    for key in ("resourceRules", "excludeResourceRules"):
        for rule in _objects(match, key):
            _default(rule, "scope", "*")


@_of_spec
def _admission_policy(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _default(spec, "failurePolicy", "Fail")
    _match_resources(_obj(spec, "matchConstraints"))


@_of_spec
def _admission_policy_binding(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _match_resources(_obj(spec, "matchResources"))


@_of_spec
def _crd(obj: JSONDict, spec: JSONDict, version: str) -> None:
    conversion = _ensure_obj(spec, "conversion")
    if conversion is not None:
        _default(conversion, "strategy", "None")
        webhook = _obj(conversion, "webhook")
        client = webhook and _obj(webhook, "clientConfig")
        service = client and _obj(client, "service")
        if service and service.get("port") is None:
            service["port"] = 443
    names = _obj(spec, "names")
    if names is not None:
        kind = names.get("kind")
        if isinstance(kind, str) and kind:
            _default(names, "singular", kind.lower())
            _default(names, "listKind", kind + "List")


# -- flowcontrol.apiserver.k8s.io -------------------------------------------------


def _zero(parent: JSONDict, key: str, value: Any) -> None:
    """``parent[key] = value`` when it is left out, null or 0 (a Go int32 field that is
    not a pointer: 0 is what it holds when it was not given)."""
    given = parent.get(key)
    if given is None or (given == 0 and not isinstance(given, bool)):
        parent[key] = value


#: A v1beta3 PriorityLevelConfiguration's annotation that keeps an explicit
#: ``nominalConcurrencyShares: 0`` (which v1beta3 otherwise reads as "not given");
#: see :mod:`._conversion` for how it is dropped on write and added on read.
PRESERVE_ZERO_SHARES: Final = "flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares"


@_of_spec
def _flow_schema(obj: JSONDict, spec: JSONDict, version: str) -> None:
    _zero(spec, "matchingPrecedence", 1000)


@_of_spec
def _priority_level(obj: JSONDict, spec: JSONDict, version: str) -> None:
    """A PriorityLevelConfiguration's defaults in the versions served, v1 and v1beta3.
    Both: a queuing limit response's ``handSize`` 8, ``queues`` 64,
    ``queueLengthLimit`` 50 when 0; the borrowing fields, a limited level's
    ``lendablePercent`` and an ``exempt`` level's ``nominalConcurrencyShares`` and
    ``lendablePercent``, 0 when left out. A limited level's ``nominalConcurrencyShares``:
    in v1 (a pointer there) 30 only when left out, an explicit 0 is kept; in v1beta3
    30 when 0, unless the object has the preserve-zero annotation. (Another version,
    registered to mirror an older cluster's discovery, is left as it is.)"""
    if version not in ("v1", "v1beta3"):
        return
    limited = _obj(spec, "limited")
    if limited is not None:
        if version == "v1":
            _unset(limited, "nominalConcurrencyShares", 30)
        else:
            meta = _obj(obj, "metadata") or {}
            if PRESERVE_ZERO_SHARES in (_obj(meta, "annotations") or {}):
                _unset(limited, "nominalConcurrencyShares", 0)  # (printed, not omitted)
            else:
                _zero(limited, "nominalConcurrencyShares", 30)
        _unset(limited, "lendablePercent", 0)
        response = _obj(limited, "limitResponse")
        queuing = _obj(response, "queuing") if response is not None else None
        if queuing is not None:
            _zero(queuing, "handSize", 8)
            _zero(queuing, "queues", 64)
            _zero(queuing, "queueLengthLimit", 50)
    exempt = _obj(spec, "exempt")
    if exempt is not None:
        _unset(exempt, "nominalConcurrencyShares", 0)
        _unset(exempt, "lendablePercent", 0)


#: (group, resource) -> its decoding defaults.
_DEFAULTERS: Final[dict[tuple[str, str], Defaulter]] = {
    ("", "pods"): _pod,
    ("", "podtemplates"): _pod_template_kind,
    ("", "replicationcontrollers"): _replication_controller,
    ("", "services"): _service,
    ("", "nodes"): _node,
    ("", "secrets"): _secret,
    ("", "persistentvolumeclaims"): _persistent_volume_claim,
    ("", "persistentvolumes"): _persistent_volume,
    ("", "endpoints"): _endpoints,
    ("", "limitranges"): _limit_range,
    ("", "resourcequotas"): _resource_quota,
    ("apps", "deployments"): _deployment,
    ("apps", "replicasets"): _replica_set,
    ("apps", "statefulsets"): _stateful_set,
    ("apps", "daemonsets"): _daemon_set,
    ("batch", "jobs"): _job,
    ("batch", "cronjobs"): _cron_job,
    ("autoscaling", "horizontalpodautoscalers"): _hpa,
    ("networking.k8s.io", "networkpolicies"): _network_policy,
    ("networking.k8s.io", "ingressclasses"): _ingress_class,
    ("rbac.authorization.k8s.io", "rolebindings"): _binding,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _binding,
    ("storage.k8s.io", "storageclasses"): _storage_class,
    ("storage.k8s.io", "csidrivers"): _csi_driver,
    ("scheduling.k8s.io", "priorityclasses"): _priority_class,
    ("discovery.k8s.io", "endpointslices"): _endpoint_slice,
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _validating_webhooks,
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _mutating_webhooks,
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): _admission_policy,
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): (
        _admission_policy_binding
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _crd,
    ("flowcontrol.apiserver.k8s.io", "flowschemas"): _flow_schema,
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): _priority_level,
}


def has_defaults(group: str, resource: str) -> bool:
    """Whether objects of this resource get defaults here (custom resources do not)."""
    return (group, resource) in _DEFAULTERS or (group, resource) in _PREPARERS


def apply_defaults(group: str, version: str, resource: str, obj: Any) -> None:
    """The decoding defaults, in place (``obj`` must be the caller's own copy)."""
    defaulter = _DEFAULTERS.get((group, resource))
    if defaulter is not None and isinstance(obj, dict):
        defaulter(obj, version)


def defaulted(group: str, version: str, resource: str, obj: Any) -> Any:
    """``obj`` with the decoding defaults: a defaulted copy when the kind has any
    (the caller's object may share parts with a stored one), else ``obj``."""
    if (group, resource) not in _DEFAULTERS or not isinstance(obj, dict):
        return obj
    copied = copy_json(obj)
    _DEFAULTERS[(group, resource)](copied, version)
    return copied


# -- create-time preparation (the registry strategies) --------------------------

#: A resource quantity: a number, an optional exponent, an optional suffix.
_QUANTITY: Final = re.compile(
    r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))(?:[eE]([+-]?[0-9]+))?([A-Za-z]*)"
)
#: Quantity suffixes and their factors (binary powers of 2, decimal powers of 10).
_SUFFIXES: Final = {
    "Ki": Fraction(2**10), "Mi": Fraction(2**20), "Gi": Fraction(2**30), "Ti": Fraction(2**40),
    "Pi": Fraction(2**50), "Ei": Fraction(2**60), "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1), "k": Fraction(10**3),
    "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12), "P": Fraction(10**15),
    "E": Fraction(10**18),
}  # fmt: skip


def quantity_value(quantity: Any) -> Fraction | None:
    """A resource quantity's exact value (``"1500m"`` -> 3/2), None when unreadable."""
    if isinstance(quantity, bool):
        return None
    if isinstance(quantity, int):
        return Fraction(quantity)
    if not isinstance(quantity, str):
        return None
    match = _QUANTITY.fullmatch(quantity.strip())
    if match is None:
        return None
    number, exponent, suffix = match.groups()
    if suffix not in _SUFFIXES or (exponent is not None and suffix):
        return None
    value = Fraction(number) * _SUFFIXES[suffix]
    return value * Fraction(10) ** int(exponent) if exponent is not None else value


_BINARY_STEPS: Final = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
#: Decimal suffixes by power of 1000.
_DECIMAL_STEPS: Final = {
    -3: "n",
    -2: "u",
    -1: "m",
    0: "",
    1: "k",
    2: "M",
    3: "G",
    4: "T",
    5: "P",
    6: "E",
}


def canonical_quantity(quantity: Any, *, milli: bool = True) -> Any:
    """A quantity as kube-apiserver writes it back: the same kind of suffix (binary,
    decimal; an exponent form is kept as sent), the largest one that leaves a whole
    number (``1.5`` -> ``1500m``, ``1024Mi`` -> ``1Gi``, ``1.5Gi`` -> ``1536Mi``, a binary
    value under 1024 or with a fraction written in decimal), and, in a resource list
    (``milli``), first rounded up to a thousandth (``0.0001`` -> ``1m``). Anything it
    cannot read is left for validation."""
    if isinstance(quantity, str):
        match = _QUANTITY.fullmatch(quantity.strip())
        if match is None or match.group(2) is not None:
            return quantity
        binary = match.group(3) in _BINARY_STEPS[1:]
    elif isinstance(quantity, int | float) and not isinstance(quantity, bool):
        binary = False
    else:
        return quantity
    value = quantity_value(quantity) if not isinstance(quantity, float) else Fraction(quantity)
    if value is None:
        return quantity
    if milli:  # (away from zero)
        thousandths = value * 1000
        value = Fraction(math.ceil(thousandths) if value >= 0 else math.floor(thousandths), 1000)
    if value == 0:
        return "0"
    if binary and value.denominator == 1 and abs(value) >= 1024:
        for step in range(len(_BINARY_STEPS) - 1, -1, -1):
            scaled = value / 1024**step
            if scaled.denominator == 1:
                return f"{scaled.numerator}{_BINARY_STEPS[step]}"
    for power in range(6, -4, -1):
        scaled = value / Fraction(1000) ** power
        if scaled.denominator == 1:
            return f"{scaled.numerator}{_DECIMAL_STEPS[power]}"
    return quantity  # (finer than a nano: not a quantity kube-apiserver keeps)


def _resource_list(holder: JSONDict, key: str) -> None:
    """A ResourceList's quantities in their canonical form, rounded up to milli."""
    resources = _obj(holder, key)
    if resources:
        for name, quantity in resources.items():
            resources[name] = canonical_quantity(quantity)


_QOS_RESOURCES: Final = ("cpu", "memory")


def qos_class(pod_spec: JSONDict) -> str:
    """A pod's QoS class from its containers' cpu and memory (after requests were
    defaulted from limits), counted over all its containers together: BestEffort when
    none requests or limits either; Guaranteed when every container limits both and the
    pod's total request of each equals its total limit; Burstable otherwise."""
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    every_container_limits_both = True
    for key in ("containers", "initContainers"):
        for container in _objects(pod_spec, key):
            resources = _obj(container, "resources") or {}
            limited = set()
            for kind, totals in (("requests", requests), ("limits", limits)):
                for name in _QOS_RESOURCES:
                    value = quantity_value((_obj(resources, kind) or {}).get(name))
                    if value is not None and value > 0:
                        totals[name] = totals.get(name, Fraction(0)) + value
                        if kind == "limits":
                            limited.add(name)
            if limited != set(_QOS_RESOURCES):
                every_container_limits_both = False
    if not requests and not limits:
        return "BestEffort"
    if every_container_limits_both and requests == limits:
        return "Guaranteed"
    return "Burstable"


def _prepare_pod(obj: JSONDict, version: str, uid: str) -> list[FieldError]:
    spec = _obj(obj, "spec") or {}
    status: JSONDict = {"phase": "Pending", "qosClass": qos_class(spec)}
    if spec.get("schedulingGates"):  # (1.27+)
        status["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
                "lastProbeTime": None,
                "lastTransitionTime": (obj.get("metadata") or {}).get("creationTimestamp"),
            }
        ]
    obj["status"] = status
    return []


def _prepare_persistent_volume(obj: JSONDict, version: str, uid: str) -> list[FieldError]:
    # (1.29+: the phase's transition time, the creation's)
    created = (obj.get("metadata") or {}).get("creationTimestamp")
    obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": created}
    return []


#: Job labels the registry generates (1.27+ both spellings; the selector uses the new one).
JOB_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"


def _prepare_job(obj: JSONDict, version: str, uid: str) -> list[FieldError]:
    obj["status"] = {}
    spec = _obj(obj, "spec")
    meta = _obj(obj, "metadata")
    if spec is None or meta is None or spec.get("manualSelector") is True:
        return []
    template = _obj(spec, "template")
    template_meta = _ensure_obj(template, "metadata") if template is not None else None
    if template_meta is None:  # (no template, or metadata of another type: a new one)
        template_meta = {}
        if template is not None:
            template["metadata"] = template_meta
    before = _obj(template_meta, "labels") or {}
    name = meta.get("name", "")
    expected = {JOB_UID_LABEL: uid, JOB_NAME_LABEL: name, "controller-uid": uid, "job-name": name}
    # The generated labels join the template's; one the client set is kept (and then
    # refused below when it differs).
    labels = {**expected, **before}
    template_meta["labels"] = labels
    # The Job's labels, when defaulting gave it its template's, are that same map.
    if not meta.get("labels") or meta.get("labels") == before:
        meta["labels"] = dict(labels)
    # The generated key joins whatever selector was sent; the selector must then
    # select the generated labels (a selector of one's own needs manualSelector: true).
    selector = spec.get("selector")
    selector = dict(selector) if isinstance(selector, dict) else {}
    match_labels = selector.get("matchLabels")
    match_labels = dict(match_labels) if isinstance(match_labels, dict) else {}
    match_labels.setdefault(JOB_UID_LABEL, uid)
    selector["matchLabels"] = match_labels
    spec["selector"] = selector
    errors = [
        FieldError(
            "spec.template.metadata.labels",
            "FieldValueInvalid",
            f"must be '{key}={value}'",
            labels,
        )
        for key, value in expected.items()
        if labels.get(key) != value
    ]
    # (a selector that does not parse is refused for that instead: see _spec_validation)
    if label_selector_requirements(selector) is not None and not selects(selector, expected):
        errors.append(
            FieldError(
                "spec.selector", "FieldValueInvalid", "`selector` not auto-generated", selector
            )
        )
    return errors


def selects(selector: JSONDict, labels: dict[str, str]) -> bool:
    """Whether a label selector (matchLabels and matchExpressions) selects ``labels``
    (one that does not parse selects nothing: see :func:`label_selector_matches`)."""
    return label_selector_matches(selector, labels)


def _prepare_status(status: JSONDict) -> Preparer:
    def prepare(obj: JSONDict, version: str, uid: str) -> list[FieldError]:
        obj["status"] = copy.deepcopy(status)
        return []

    return prepare


def _prepare_daemon_set(obj: JSONDict, version: str, uid: str) -> list[FieldError]:
    obj["status"] = {
        "currentNumberScheduled": 0,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 0,
        "numberReady": 0,
    }
    meta = _obj(obj, "metadata")
    if meta is not None:
        annotations = meta.get("annotations")
        annotations = dict(annotations) if isinstance(annotations, dict) else {}
        given = annotations.get(DAEMON_SET_TEMPLATE_GENERATION)
        kept = isinstance(given, str) and given.isdigit() and int(given) >= 1
        annotations[DAEMON_SET_TEMPLATE_GENERATION] = given if kept else "1"
        meta["annotations"] = annotations
    return []


def _prepare_hpa(obj: JSONDict, version: str, uid: str) -> list[FieldError]:
    # v2's currentReplicas is optional; v1's and the betas' are printed at 0
    obj["status"] = (
        {"desiredReplicas": 0} if version == "v2" else {"currentReplicas": 0, "desiredReplicas": 0}
    )
    return []


#: The annotation a DaemonSet's strategy keeps at its template's generation.
DAEMON_SET_TEMPLATE_GENERATION: Final = "deprecated.daemonset.template.generation"

_PREPARERS: Final[dict[tuple[str, str], Preparer]] = {
    ("", "pods"): _prepare_pod,
    ("", "persistentvolumes"): _prepare_persistent_volume,
    ("", "persistentvolumeclaims"): _prepare_status({"phase": "Pending"}),
    ("", "replicationcontrollers"): _prepare_status({"replicas": 0}),
    ("", "services"): _prepare_status({"loadBalancer": {}}),
    ("", "resourcequotas"): _prepare_status({}),
    ("apps", "deployments"): _prepare_status({}),
    ("apps", "replicasets"): _prepare_status({"replicas": 0}),
    ("apps", "statefulsets"): _prepare_status({"replicas": 0, "availableReplicas": 0}),
    ("apps", "daemonsets"): _prepare_daemon_set,
    ("batch", "jobs"): _prepare_job,
    ("batch", "cronjobs"): _prepare_status({}),
    ("autoscaling", "horizontalpodautoscalers"): _prepare_hpa,
    ("policy", "poddisruptionbudgets"): _prepare_status(
        {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}
    ),
    ("networking.k8s.io", "ingresses"): _prepare_status({"loadBalancer": {}}),
    ("storage.k8s.io", "volumeattachments"): _prepare_status({"attached": False}),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"): _prepare_status({}),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): _prepare_status({}),
}


#: Kinds with a status subresource whose create keeps the status sent (a kubelet
#: registers its Node with one).
STATUS_KEPT_ON_CREATE: Final = frozenset({("", "nodes")})


def prepare_for_create(group: str, version: str, resource: str, obj: JSONDict) -> list[FieldError]:
    """The create-time preparation of the kind's registry strategy, in place, once
    ``obj`` has its uid (and generation): its starting status, a Job's generated
    selector and labels, a DaemonSet's template-generation annotation. Returns what
    the strategy's validation then refuses (a Job's selector of its own)."""
    preparer = _PREPARERS.get((group, resource))
    if preparer is None:
        return []
    meta = obj.get("metadata")
    uid = meta.get("uid") if isinstance(meta, dict) else None
    return preparer(obj, version, uid if isinstance(uid, str) else "")


def _node_ports(spec: JSONDict) -> set[Any]:
    return {
        port.get("nodePort")
        for port in spec.get("ports") or []
        if isinstance(port, dict) and port.get("nodePort") not in (None, 0)
    }


def _drop_type_dependent_fields(old: JSONDict, new: JSONDict) -> None:
    """A Service's update to a type that has no use for a field it kept as it was
    (node ports, the health-check node port, the traffic policy, the cluster IPs of an
    ExternalName Service) drops it, as the Service strategy's update preparation does."""
    spec, old_spec = new.get("spec"), old.get("spec")
    if not isinstance(spec, dict) or not isinstance(old_spec, dict):
        return
    kind = spec.get("type")
    needs_node_ports = kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is not False
    )
    if not needs_node_ports and _node_ports(spec) == _node_ports(old_spec):
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.pop("nodePort", None)
    local_balancer = kind == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"
    if not local_balancer and spec.get("healthCheckNodePort") == old_spec.get(
        "healthCheckNodePort"
    ):
        spec.pop("healthCheckNodePort", None)
    if kind != "LoadBalancer":
        spec.pop("allocateLoadBalancerNodePorts", None)
    reachable = kind in ("NodePort", "LoadBalancer") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs"))
    )
    if not reachable and spec.get("externalTrafficPolicy") == old_spec.get("externalTrafficPolicy"):
        spec.pop("externalTrafficPolicy", None)
    if kind == "ExternalName":
        if (spec.get("clusterIP"), spec.get("clusterIPs")) == (
            old_spec.get("clusterIP"),
            old_spec.get("clusterIPs"),
        ):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        for key in ("ipFamilies", "ipFamilyPolicy"):
            if spec.get(key) == old_spec.get(key):
                spec.pop(key, None)


def prepare_for_update(group: str, resource: str, old: JSONDict, new: JSONDict) -> None:
    """What a strategy's update preparation adds here: a DaemonSet's template-generation
    annotation, which clients cannot set, goes up by one when its template changes; a
    Service changing type drops the fields kept that its new type has no use for."""
    if (group, resource) == ("", "services"):
        _drop_type_dependent_fields(old, new)
        return
    if (group, resource) != ("apps", "daemonsets"):
        return
    old_annotations = (old.get("metadata") or {}).get("annotations") or {}
    kept = old_annotations.get(DAEMON_SET_TEMPLATE_GENERATION)
    if kept is None:
        return
    old_template = (old.get("spec") or {}).get("template")
    new_spec = new.get("spec")
    new_template = new_spec.get("template") if isinstance(new_spec, dict) else None
    if old_template != new_template and isinstance(kept, str) and kept.isdigit():
        kept = str(int(kept) + 1)
    meta = new["metadata"]
    annotations = meta.get("annotations")
    meta["annotations"] = {
        **(annotations if isinstance(annotations, dict) else {}),
        DAEMON_SET_TEMPLATE_GENERATION: kept,
    }
