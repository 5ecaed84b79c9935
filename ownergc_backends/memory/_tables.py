"""Server-side printing: the columns kube-apiserver's Table has for each kind.

``kubectl get`` asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and
prints the columns the server sends. The column names, types and cell
formats below are kube-apiserver v1.30's printers' (facts of the API; the real
server's answers for namespaces, services, apiservices and componentstatuses
are in tests/data/real-apiserver-1.24/tables.json; the column lists of the
other kinds are in ``_table_columns``). A custom resource gets its CRD's
``additionalPrinterColumns`` (the default being an Age column), and any kind
without a printer here gets the real server's default: Name and "Created At".

Every cell is computed from the object alone, except ages and durations up to
now: those go through the ``age`` function the facade passes in (its clock).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from ownergc.protocols import APIResource, JSONDict

from . import _table_columns as cols
from ._selectors import selector_string
from ._table_columns import _AGE, _NAME, _column

__all__ = ["Printer", "human_duration", "parse_time", "printer_for"]

Cell = str | int | float | bool | None
Age = Callable[[JSONDict], str]


_UNIT_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "y": 365 * 86400}
#: (below this many seconds: the unit shown, and the smaller one shown beside it)
_DURATION_LADDER: Final = (
    (120, "s", None),
    (10 * 60, "m", "s"),
    (180 * 60, "m", None),
    (8 * 3600, "h", "m"),
    (48 * 3600, "h", None),
    (8 * 86400, "d", "h"),
    (2 * 365 * 86400, "d", None),
    (8 * 365 * 86400, "y", "d"),
)


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: ``45s``, ``3m20s``, ``5h``, ``2d3h``, …"""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    unit, smaller = next(
        ((unit, smaller) for limit, unit, smaller in _DURATION_LADDER if s < limit), ("y", None)
    )
    big = s // _UNIT_SECONDS[unit]
    if smaller is None:
        return f"{big}{unit}"
    rest = (s // _UNIT_SECONDS[smaller]) % (_UNIT_SECONDS[unit] // _UNIT_SECONDS[smaller])
    return f"{big}{unit}{rest}{smaller}" if rest else f"{big}{unit}"


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (a ``Time`` or ``MicroTime`` field) as an aware datetime."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=timezone.utc)


def _since(age: Age, timestamp: Any) -> str:
    """How long ago ``timestamp`` was, on the clock ``age`` reads (``<unknown>`` if unset)."""
    return age({"creationTimestamp": timestamp})


def _between(start: Any, end: Any) -> str:
    first, last = parse_time(start), parse_time(end)
    if first is None or last is None:
        return "<unknown>"
    return human_duration((last - first).total_seconds())


@dataclass(frozen=True)
class Printer:
    """A kind's columns and how one object fills them (``age`` formats metadata's age)."""

    columns: Sequence[JSONDict]
    cells: Callable[[JSONDict, Age], list[Cell]]


def _meta(obj: JSONDict) -> JSONDict:
    meta: JSONDict = obj.get("metadata") or {}
    return meta


def _spec(obj: JSONDict) -> JSONDict:
    spec: JSONDict = obj.get("spec") or {}
    return spec


def _status(obj: JSONDict) -> JSONDict:
    status: JSONDict = obj.get("status") or {}
    return status


def _name(obj: JSONDict) -> str:
    return str(_meta(obj).get("name", ""))


def _none(text: str) -> str:
    return text or "<none>"


def _namespace_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), _status(obj).get("phase", ""), age(_meta(obj))]


def _configmap_cells(obj: JSONDict, age: Age) -> list[Cell]:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_name(obj), count, age(_meta(obj))]


def _secret_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), obj.get("type", ""), len(obj.get("data") or {}), age(_meta(obj))]


def _service_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec = _spec(obj)
    kind = spec.get("type") or "ClusterIP"
    external = list(spec.get("externalIPs") or [])
    external += [
        i.get("ip") or i.get("hostname") or ""
        for i in (_status(obj).get("loadBalancer") or {}).get("ingress") or []
    ]
    if kind == "ExternalName":
        external = [spec.get("externalName", "")]
    ports = []
    for p in spec.get("ports") or []:
        port = f"{p.get('port')}:{p['nodePort']}" if p.get("nodePort") else f"{p.get('port')}"
        ports.append(f"{port}/{p.get('protocol', 'TCP')}")
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items()))
    return [
        _name(obj),
        kind,
        _none(spec.get("clusterIP", "")),
        ",".join(external) or ("<pending>" if kind == "LoadBalancer" else "<none>"),
        _none(",".join(ports)),
        age(_meta(obj)),
        _none(selector),
    ]


def _pod_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec, status = _spec(obj), _status(obj)
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    reason = status.get("reason") or status.get("phase") or "Pending"
    if _meta(obj).get("deletionTimestamp"):
        reason = "Terminating"
    gates = spec.get("readinessGates") or []
    return [
        _name(obj),
        f"{ready}/{len(spec.get('containers') or [])}",
        reason,
        restarts,
        age(_meta(obj)),
        _none(status.get("podIP", "")),
        _none(spec.get("nodeName", "")),
        _none(status.get("nominatedNodeName", "")),
        f"0/{len(gates)}" if gates else "<none>",
    ]


def _containers(obj: JSONDict) -> tuple[str, str]:
    return _template_containers(_spec(obj).get("template"))


def _selector(obj: JSONDict) -> str:
    return _none(selector_string(_spec(obj).get("selector")))


def _deployment_cells(obj: JSONDict, age: Age) -> list[Cell]:
    status = _status(obj)
    wanted = _spec(obj).get("replicas", 1)
    names, images = _containers(obj)
    return [
        _name(obj),
        f"{status.get('readyReplicas', 0)}/{wanted}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        age(_meta(obj)),
        names,
        images,
        _selector(obj),
    ]


def _replicaset_cells(obj: JSONDict, age: Age) -> list[Cell]:
    status = _status(obj)
    names, images = _containers(obj)
    return [
        _name(obj),
        _spec(obj).get("replicas", 1),
        status.get("replicas", 0),
        status.get("readyReplicas", 0),
        age(_meta(obj)),
        names,
        images,
        _selector(obj),
    ]


def _api_service_cells(obj: JSONDict, age: Age) -> list[Cell]:
    service = _spec(obj).get("service")
    where = f"{service.get('namespace')}/{service.get('name')}" if service else "Local"
    available = "Unknown"
    for c in _status(obj).get("conditions") or []:
        if c.get("type") == "Available":
            available = c.get("status", "Unknown")
            if available != "True" and c.get("reason"):
                available = f"{available} ({c['reason']})"
    return [_name(obj), where, available, age(_meta(obj))]


def _component_status_cells(obj: JSONDict, age: Age) -> list[Cell]:
    status, message, error = "Unknown", "", ""
    for c in obj.get("conditions") or []:
        if c.get("type") == "Healthy":
            status = "Healthy" if c.get("status") == "True" else "Unhealthy"
            message, error = c.get("message", ""), c.get("error", "")
    return [_name(obj), status, message, error]


# --- helpers shared by the printers below ---


def _labels(mapping: Any) -> str:
    """A label map as ``k=v,k=v`` sorted by key, or ``<none>``."""
    if not isinstance(mapping, dict) or not mapping:
        return "<none>"
    return ",".join(f"{k}={v}" for k, v in sorted(mapping.items()))


def _label_selector(selector: Any) -> str:
    """A LabelSelector field as its selector string, or ``<none>`` when it selects nothing
    in particular."""
    if isinstance(selector, dict) and not ({"matchLabels", "matchExpressions"} & selector.keys()):
        return "<none>"
    return _none(selector_string(selector))


def _template_containers(template: Any) -> tuple[str, str]:
    """A pod template's container names and images, each comma-joined."""
    spec = (template.get("spec") or {}) if isinstance(template, dict) else {}
    containers = spec.get("containers") or []
    return (
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
    )


def _condition_true(conditions: Any, kind: str) -> bool:
    """Whether the first condition of type ``kind`` has status True."""
    for c in conditions or []:
        if c.get("type") == kind:
            return bool(c.get("status") == "True")
    return False


def _capped(items: list[str], count: int, most: int = 3, *, empty: str = "<unset>") -> str:
    """The first ``most`` items, then ``+ N more...`` for the rest of ``count``."""
    text = ",".join(items[:most])
    if count > most:
        return f"{text} + {count - most} more..."
    return text or empty


def _int_or_string(value: Any, missing: str) -> str:
    return missing if value is None else str(value)


# --- batch ---


def _job_status(obj: JSONDict) -> str:
    """Finished first (a finished Job being deleted still says Complete or Failed), then
    being deleted, suspended, doomed, running."""
    conditions = _status(obj).get("conditions")
    if _condition_true(conditions, "Complete"):
        return "Complete"
    if _condition_true(conditions, "Failed"):
        return "Failed"
    if _meta(obj).get("deletionTimestamp"):
        return "Terminating"
    if _condition_true(conditions, "Suspended"):
        return "Suspended"
    if _condition_true(conditions, "FailureTarget"):
        return "FailureTarget"
    return "Running"


def _job_completions(spec: JSONDict, status: JSONDict) -> str:
    succeeded = status.get("succeeded") or 0
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism") or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec, status = _spec(obj), _status(obj)
    started, completed = status.get("startTime"), status.get("completionTime")
    if not started:
        took = ""
    elif not completed:
        took = _since(age, started)
    else:
        took = _between(started, completed)
    names, images = _template_containers(spec.get("template"))
    return [
        _name(obj),
        _job_status(obj),
        _job_completions(spec, status),
        took,
        age(_meta(obj)),
        names,
        images,
        _label_selector(spec.get("selector")),
    ]


def _bool_or_unset(value: Any) -> str:
    return "<unset>" if value is None else ("True" if value else "False")


def _cronjob_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec, status = _spec(obj), _status(obj)
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    last = status.get("lastScheduleTime")
    names, images = _template_containers(job_spec.get("template"))
    return [
        _name(obj),
        spec.get("schedule", ""),
        spec.get("timeZone") or "<none>",
        _bool_or_unset(spec.get("suspend")),
        len(status.get("active") or []),
        _since(age, last) if last else "<none>",
        age(_meta(obj)),
        names,
        images,
        _label_selector(job_spec.get("selector")),
    ]


# --- apps ---


def _statefulset_cells(obj: JSONDict, age: Age) -> list[Cell]:
    names, images = _containers(obj)
    ready = _status(obj).get("readyReplicas") or 0
    return [
        _name(obj),
        f"{ready}/{_spec(obj).get('replicas', 1)}",
        age(_meta(obj)),
        names,
        images,
    ]


def _daemonset_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec, status = _spec(obj), _status(obj)
    names, images = _containers(obj)
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector")
    return [
        _name(obj),
        status.get("desiredNumberScheduled") or 0,
        status.get("currentNumberScheduled") or 0,
        status.get("numberReady") or 0,
        status.get("updatedNumberScheduled") or 0,
        status.get("numberAvailable") or 0,
        _labels(node_selector),
        age(_meta(obj)),
        names,
        images,
        _label_selector(spec.get("selector")),
    ]


def _controller_of(obj: JSONDict) -> str:
    """``kind.group/name`` (lower-case kind and group) of the controller owner, or ``<none>``."""
    for ref in _meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            api_version = str(ref.get("apiVersion", ""))
            group = api_version.rpartition("/")[0]
            kind = str(ref.get("kind", ""))
            if not kind and not group:
                return str(ref.get("name", ""))
            qualified = f"{kind}.{group}" if group else kind
            return f"{qualified.lower()}/{ref.get('name', '')}"
    return "<none>"


def _controller_revision_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), _controller_of(obj), obj.get("revision", 0), age(_meta(obj))]


# --- core ---


def _replication_controller_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec, status = _spec(obj), _status(obj)
    names, images = _template_containers(spec.get("template"))
    return [
        _name(obj),
        spec.get("replicas", 1),
        status.get("replicas") or 0,
        status.get("readyReplicas") or 0,
        age(_meta(obj)),
        names,
        images,
        _labels(spec.get("selector")),
    ]


def _service_account_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), len(obj.get("secrets") or []), age(_meta(obj))]


def _resource_quota_cells(obj: JSONDict, age: Age) -> list[Cell]:
    status = _status(obj)
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        column = limits if resource.split(".")[0] == "limits" and "." in resource else requests
        column.append(f"{resource}: {used.get(resource, '0')}/{hard[resource]}")
    return [_name(obj), age(_meta(obj)), ", ".join(requests), ", ".join(limits)]


def _node_cells(obj: JSONDict, age: Age) -> list[Cell]:
    meta, spec, status = _meta(obj), _spec(obj), _status(obj)
    ready = {c.get("type"): c for c in status.get("conditions") or []}.get("Ready")
    if ready is None:
        states = ["Unknown"]
    else:
        states = ["Ready" if ready.get("status") == "True" else "NotReady"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for key, value in (meta.get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key[len("node-role.kubernetes.io/") :]:
            roles.add(key[len("node-role.kubernetes.io/") :])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = status.get("nodeInfo") or {}

    def address(kind: str) -> str:
        return next(
            (a.get("address", "") for a in status.get("addresses") or [] if a.get("type") == kind),
            "<none>",
        )

    return [
        _name(obj),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        age(meta),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_ACCESS_MODES: Final = (
    ("ReadWriteOnce", "RWO"),
    ("ReadOnlyMany", "ROX"),
    ("ReadWriteMany", "RWX"),
    ("ReadWriteOncePod", "RWOP"),
)
_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"


def _access_modes(modes: Any) -> str:
    present = set(modes or [])
    return ",".join(short for mode, short in _ACCESS_MODES if mode in present)


def _storage_class(obj: JSONDict) -> str:
    annotations = _meta(obj).get("annotations") or {}
    if _CLASS_ANNOTATION in annotations:
        return str(annotations[_CLASS_ANNOTATION])
    return str(_spec(obj).get("storageClassName") or "")


def _phase(obj: JSONDict) -> str:
    if _meta(obj).get("deletionTimestamp"):
        return "Terminating"
    return str(_status(obj).get("phase", ""))


def _persistent_volume_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec, status = _spec(obj), _status(obj)
    claim = spec.get("claimRef")
    return [
        _name(obj),
        (spec.get("capacity") or {}).get("storage", "0"),
        _access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy", ""),
        _phase(obj),
        f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim else "",
        _storage_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason", ""),
        age(_meta(obj)),
        spec.get("volumeMode") or "<unset>",
    ]


def _persistent_volume_claim_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec, status = _spec(obj), _status(obj)
    bound = spec.get("volumeName") or ""
    return [
        _name(obj),
        _phase(obj),
        bound,
        (status.get("capacity") or {}).get("storage", "0") if bound else "",
        _access_modes(status.get("accessModes")) if bound else "",
        _storage_class(obj),
        spec.get("volumeAttributesClassName") or "<unset>",
        age(_meta(obj)),
        spec.get("volumeMode") or "<unset>",
    ]


def _host_port(ip: str, port: Any) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def _endpoints_cells(obj: JSONDict, age: Age) -> list[Cell]:
    subsets = obj.get("subsets") or []
    if not subsets:
        return [_name(obj), "<none>", age(_meta(obj))]
    shown: list[str] = []
    count = 0
    for subset in subsets:
        ips = [a.get("ip", "") for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        if not ports:
            count += len(ips)
            shown += ips
        for port in ports:
            count += len(ips)
            shown += [_host_port(ip, port.get("port")) for ip in ips]
    text = ",".join(shown[:3])
    return [
        _name(obj),
        f"{text} + {count - 3} more..." if count > 3 else text,
        age(_meta(obj)),
    ]


def _event_cells(obj: JSONDict, age: Age) -> list[Cell]:
    """A core/v1 Event, or an events.k8s.io/v1 one (the same columns, from its field names)."""
    modern = "regarding" in obj or "note" in obj or "deprecatedSource" in obj
    regarding = obj.get("regarding" if modern else "involvedObject") or {}
    source = obj.get("deprecatedSource" if modern else "source") or {}
    first_at = obj.get("deprecatedFirstTimestamp" if modern else "firstTimestamp")
    last_at = obj.get("deprecatedLastTimestamp" if modern else "lastTimestamp")
    count = obj.get("deprecatedCount" if modern else "count") or 0
    message = obj.get("note" if modern else "message") or ""
    first = _since(age, first_at) if first_at else _since(age, obj.get("eventTime"))
    last = _since(age, last_at) if last_at else first
    series = obj.get("series")
    if series:
        last = _since(age, series.get("lastObservedTime"))
        count = series.get("count") or 0
    elif not count:
        count = 1
    kind = str(regarding.get("kind", "")).lower()
    target = f"{kind}/{regarding['name']}" if regarding.get("name") else kind
    component = source.get("component") or obj.get("reportingController") or ""
    host = source.get("host") or obj.get("reportingInstance") or ""
    return [
        last,
        obj.get("type", ""),
        obj.get("reason", ""),
        target,
        regarding.get("fieldPath", ""),
        f"{component}, {host}" if host else component,
        message.strip(),
        first,
        count,
        _name(obj),
    ]


def _pod_template_cells(obj: JSONDict, age: Age) -> list[Cell]:
    template = obj.get("template") or {}
    names, images = _template_containers(template)
    return [_name(obj), names, images, _labels((template.get("metadata") or {}).get("labels"))]


# --- policy, networking, discovery, coordination ---


def _pdb_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec = _spec(obj)
    return [
        _name(obj),
        _int_or_string(spec.get("minAvailable"), "N/A"),
        _int_or_string(spec.get("maxUnavailable"), "N/A"),
        _status(obj).get("disruptionsAllowed") or 0,
        age(_meta(obj)),
    ]


def _load_balancer(status: JSONDict) -> str:
    found = {
        i.get("ip") or i.get("hostname")
        for i in (status.get("loadBalancer") or {}).get("ingress") or []
        if i.get("ip") or i.get("hostname")
    }
    return ",".join(sorted(found))


def _ingress_hosts(rules: list[JSONDict]) -> str:
    """The first three rules' hosts (``*`` when none is named), then how many rules remain."""
    hosts: list[str] = []
    for rule in rules:
        if len(hosts) == 3:
            return f"{','.join(hosts)} + {len(rules) - 3} more..."
        if rule.get("host"):
            hosts.append(rule["host"])
    return ",".join(hosts) or "*"


def _ingress_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec = _spec(obj)
    return [
        _name(obj),
        spec.get("ingressClassName") or "<none>",
        _ingress_hosts(spec.get("rules") or []),
        _load_balancer(_status(obj)),
        "80, 443" if spec.get("tls") else "80",
        age(_meta(obj)),
    ]


def _ingress_class_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec = _spec(obj)
    parameters = spec.get("parameters")
    shown = "<none>"
    if parameters:
        kind = str(parameters.get("kind", ""))
        if parameters.get("apiGroup") is not None:
            kind = f"{kind}.{parameters['apiGroup']}"
        shown = f"{kind}/{parameters.get('name', '')}"
    return [_name(obj), spec.get("controller", ""), shown, age(_meta(obj))]


def _network_policy_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), _label_selector(_spec(obj).get("podSelector") or {}), age(_meta(obj))]


def _endpoint_slice_cells(obj: JSONDict, age: Age) -> list[Cell]:
    ports = [
        str(p["port"]) if p.get("port") is not None else (p.get("name") or "*")
        for p in obj.get("ports") or []
    ]
    addresses = [a for e in obj.get("endpoints") or [] for a in e.get("addresses") or []]
    return [
        _name(obj),
        obj.get("addressType", ""),
        _capped(ports, len(ports)),
        _capped(addresses, len(addresses)),
        age(_meta(obj)),
    ]


def _lease_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), _spec(obj).get("holderIdentity") or "", age(_meta(obj))]


# --- rbac, scheduling ---


def _binding_cells(obj: JSONDict, age: Age) -> list[Cell]:
    ref = obj.get("roleRef") or {}
    users, groups, accounts = [], [], []
    for subject in obj.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name", "")
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace', '')}/{name}")
    return [
        _name(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        age(_meta(obj)),
        ", ".join(users),
        ", ".join(groups),
        ", ".join(accounts),
    ]


def _priority_class_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [
        _name(obj),
        obj.get("value", 0),
        bool(obj.get("globalDefault")),
        age(_meta(obj)),
        obj.get("preemptionPolicy") or "",
    ]


# --- storage ---


_DEFAULT_CLASS_ANNOTATIONS: Final = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _storage_class_cells(obj: JSONDict, age: Age) -> list[Cell]:
    annotations = _meta(obj).get("annotations") or {}
    default = any(annotations.get(a) == "true" for a in _DEFAULT_CLASS_ANNOTATIONS)
    return [
        _name(obj) + (" (default)" if default else ""),
        obj.get("provisioner", ""),
        obj.get("reclaimPolicy") or "Delete",
        obj.get("volumeBindingMode") or "Immediate",
        bool(obj.get("allowVolumeExpansion")),
        age(_meta(obj)),
    ]


def _runtime_class_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), obj.get("handler", ""), age(_meta(obj))]


def _volume_attachment_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec = _spec(obj)
    return [
        _name(obj),
        spec.get("attacher", ""),
        (spec.get("source") or {}).get("persistentVolumeName") or "",
        spec.get("nodeName", ""),
        bool(_status(obj).get("attached")),
        age(_meta(obj)),
    ]


def _csi_node_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), len(_spec(obj).get("drivers") or []), age(_meta(obj))]


def _csi_driver_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec = _spec(obj)
    requests = spec.get("tokenRequests")
    attach = spec.get("attachRequired")
    return [
        _name(obj),
        True if attach is None else bool(attach),
        bool(spec.get("podInfoOnMount")),
        bool(spec.get("storageCapacity")),
        "<unset>" if requests is None else ",".join(t.get("audience", "") for t in requests),
        bool(spec.get("requiresRepublish")),
        ",".join(spec.get("volumeLifecycleModes") or []) or "<none>",
        age(_meta(obj)),
    ]


# --- autoscaling, admission, certificates ---


def _hpa_metric(spec: JSONDict, status: JSONDict | None) -> str:
    kind = spec.get("type")
    field = {
        "Resource": "resource",
        "ContainerResource": "containerResource",
        "Pods": "pods",
        "Object": "object",
        "External": "external",
    }.get(str(kind))
    if field is None:
        return "<unknown type>"
    source: JSONDict = spec.get(field) or {}
    target: JSONDict = source.get("target") or {}
    current: JSONDict = ((status or {}).get(field) or {}).get("current") or {}
    if field in ("resource", "containerResource"):
        name = source.get("name", "")
        if target.get("averageValue") is not None:
            return f"{name}: {current.get('averageValue', '<unknown>')}/{target['averageValue']}"
        now = current.get("averageUtilization")
        wanted = target.get("averageUtilization")
        shown = "<unknown>" if now is None else f"{now}%"
        return f"{name}: {shown}/{'<auto>' if wanted is None else f'{wanted}%'}"
    if field == "pods":
        return f"{current.get('averageValue', '<unknown>')}/{target.get('averageValue', '')}"
    if target.get("averageValue") is not None:
        return f"{current.get('averageValue', '<unknown>')}/{target['averageValue']} (avg)"
    return f"{current.get('value', '<unknown>')}/{target.get('value', '')}"


def _hpa_targets(spec: JSONDict, status: JSONDict) -> str:
    metrics = spec.get("metrics") or []
    if not metrics and spec.get("targetCPUUtilizationPercentage") is not None:
        # autoscaling/v1's single CPU target
        now = status.get("currentCPUUtilizationPercentage")
        cpu = "<unknown>" if now is None else f"{now}%"
        return f"cpu: {cpu}/{spec['targetCPUUtilizationPercentage']}%"
    if not metrics:
        return "<none>"
    current = status.get("currentMetrics") or []
    shown = [
        _hpa_metric(metric, current[i] if i < len(current) else None)
        for i, metric in enumerate(metrics)
    ]
    text = ", ".join(shown[:2])
    return f"{text} + {len(shown) - 2} more..." if len(shown) > 2 else text


def _hpa_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec, status = _spec(obj), _status(obj)
    ref = spec.get("scaleTargetRef") or {}
    low = spec.get("minReplicas")
    return [
        _name(obj),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        _hpa_targets(spec, status),
        "<unset>" if low is None else str(low),
        spec.get("maxReplicas", 0),
        status.get("currentReplicas") or 0,
        age(_meta(obj)),
    ]


def _webhook_configuration_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), len(obj.get("webhooks") or []), age(_meta(obj))]


def _admission_policy_cells(obj: JSONDict, age: Age) -> list[Cell]:
    kind = _spec(obj).get("paramKind")
    shown = "<unset>"
    if isinstance(kind, dict):
        shown = f"{kind.get('apiVersion') or ''}/{kind.get('kind') or ''}"
    return [_name(obj), len(_spec(obj).get("validations") or []), shown, age(_meta(obj))]


def _go_label_selector(selector: JSONDict) -> str:
    """A LabelSelector as its generated Go ``String()`` prints it."""
    labels = selector.get("matchLabels") or {}
    pairs = (
        "".join(f"{k}: {labels[k]}," for k in sorted(labels)) if isinstance(labels, dict) else ""
    )
    requirements = ""
    for item in selector.get("matchExpressions") or []:
        if isinstance(item, dict):
            values = " ".join(str(v) for v in item.get("values") or [])
            requirements += (
                f"LabelSelectorRequirement{{Key:{item.get('key') or ''},"
                f"Operator:{item.get('operator') or ''},Values:[{values}],}},"
            )
    return (
        f"&LabelSelector{{MatchLabels:map[string]string{{{pairs}}},"
        f"MatchExpressions:[]LabelSelectorRequirement{{{requirements}}},}}"
    )


def _admission_policy_binding_cells(obj: JSONDict, age: Age) -> list[Cell]:
    ref = _spec(obj).get("paramRef")
    shown = "<unset>"
    if isinstance(ref, dict):
        if ref.get("name"):
            shown = f"{ref.get('namespace') or '*'}/{ref['name']}"
        elif isinstance(ref.get("selector"), dict):
            shown = _go_label_selector(ref["selector"])
    return [_name(obj), str(_spec(obj).get("policyName") or ""), shown, age(_meta(obj))]


def _csr_condition(status: JSONDict) -> str:
    kinds = {c.get("type") for c in status.get("conditions") or []}
    text = "Denied" if "Denied" in kinds else "Approved" if "Approved" in kinds else "Pending"
    if "Failed" in kinds:
        text += ",Failed"
    if status.get("certificate"):
        text += ",Issued"
    return text


def _csr_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec = _spec(obj)
    seconds = spec.get("expirationSeconds")
    return [
        _name(obj),
        age(_meta(obj)),
        spec.get("signerName") or "<none>",
        spec.get("username", ""),
        "<none>" if seconds is None else human_duration(seconds),
        _csr_condition(_status(obj)),
    ]


# --- flow control ---


def _flow_schema_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec = _spec(obj)
    method = spec.get("distinguisherMethod")
    dangling = next(
        (
            c.get("status", "")
            for c in _status(obj).get("conditions") or []
            if c.get("type") == "Dangling"
        ),
        "?",
    )
    return [
        _name(obj),
        (spec.get("priorityLevelConfiguration") or {}).get("name", ""),
        spec.get("matchingPrecedence", 1000),
        method.get("type", "") if method else "<none>",
        age(_meta(obj)),
        dangling,
    ]


def _priority_level_cells(obj: JSONDict, age: Age) -> list[Cell]:
    spec = _spec(obj)
    limited = spec.get("limited")
    shares: Cell = "<none>"
    queues: Cell = "<none>"
    hand: Cell = "<none>"
    length: Cell = "<none>"
    if limited is not None:
        # (v1 and v1beta3, the versions served, call it nominalConcurrencyShares)
        shares = limited.get("nominalConcurrencyShares", 0)
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if queuing is not None:
            queues = queuing.get("queues", 0)
            hand = queuing.get("handSize", 0)
            length = queuing.get("queueLengthLimit", 0)
    return [_name(obj), spec.get("type", ""), shares, queues, hand, length, age(_meta(obj))]


def _csi_storage_capacity_cells(obj: JSONDict, age: Age) -> list[Cell]:
    capacity = obj.get("capacity")
    return [
        _name(obj),
        obj.get("storageClassName", ""),
        "<unset>" if capacity is None else capacity,
    ]


# --- kinds the real server prints with its default table convertor ---


def _created_at(meta: JSONDict) -> str:
    when = parse_time(meta.get("creationTimestamp"))
    if when is None:
        return "0001-01-01T00:00:00Z"
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _default_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), _created_at(_meta(obj))]


def _wide(name: str, description: str) -> JSONDict:
    return _column(name, description, priority=1)


_REPLICA_WIDE = [
    cols._WIDE_CONTAINERS,
    cols._WIDE_IMAGES,
    _wide(
        "Selector",
        "Label selector for pods. Existing ReplicaSets whose pods are selected "
        "by this will be the ones affected by this deployment.",
    ),
]

_PRINTERS: dict[tuple[str, str], Printer] = {
    ("", "namespaces"): Printer(
        [_NAME, _column("Status", "The status of the namespace"), _AGE], _namespace_cells
    ),
    ("", "configmaps"): Printer(
        [_NAME, _column("Data", "Number of data in configmap", type_="integer"), _AGE],
        _configmap_cells,
    ),
    ("", "secrets"): Printer(
        [
            _NAME,
            _column("Type", "The type of the secret"),
            _column("Data", "Number of data in secret", type_="integer"),
            _AGE,
        ],
        _secret_cells,
    ),
    ("", "services"): Printer(
        [
            _NAME,
            _column("Type", "type determines how the Service is exposed."),
            _column("Cluster-IP", "clusterIP is the IP address of the service."),
            _column(
                "External-IP",
                "List of IP addresses for which nodes in the cluster will "
                "also accept traffic for this service.",
            ),
            _column("Port(s)", "The list of ports that are exposed by this service."),
            _AGE,
            _wide(
                "Selector",
                "Route service traffic to pods with label keys and values matching this selector.",
            ),
        ],
        _service_cells,
    ),
    ("", "pods"): Printer(
        [
            _NAME,
            _column("Ready", "The aggregate readiness state of this pod for accepting traffic."),
            _column("Status", "The aggregate status of the containers in this pod."),
            _column(
                "Restarts",
                "The number of times the containers in this pod have been restarted "
                "and when the last container in this pod has restarted.",
                type_="string",
            ),
            _AGE,
            _wide("IP", "IP address allocated to the pod. Routable at least within the cluster."),
            _wide("Node", "Name of the Node where the Pod is scheduled."),
            _wide("Nominated Node", "Name of the node the pod is nominated to be scheduled on."),
            _wide("Readiness Gates", "The readiness gates of the pod."),
        ],
        _pod_cells,
    ),
    ("apps", "deployments"): Printer(
        [
            _NAME,
            _column("Ready", "Number of the pod with ready state"),
            _column(
                "Up-to-date",
                "Total number of non-terminated pods targeted by this "
                "deployment that have the desired template spec.",
                type_="integer",
            ),
            _column(
                "Available",
                "Total number of available pods (ready for at least "
                "minReadySeconds) targeted by this deployment.",
                type_="integer",
            ),
            _AGE,
            *_REPLICA_WIDE,
        ],
        _deployment_cells,
    ),
    ("apps", "replicasets"): Printer(
        [
            _NAME,
            _column("Desired", "Replicas is the number of desired replicas.", type_="integer"),
            _column(
                "Current",
                "Replicas is the most recently observed number of replicas.",
                type_="integer",
            ),
            _column("Ready", "The number of ready replicas for this replica set.", type_="integer"),
            _AGE,
            *_REPLICA_WIDE,
        ],
        _replicaset_cells,
    ),
    ("apiregistration.k8s.io", "apiservices"): Printer(
        [
            _NAME,
            _column("Service", "The reference to the service that hosts this API endpoint."),
            _column("Available", "Whether this service is available."),
            _AGE,
        ],
        _api_service_cells,
    ),
    ("", "componentstatuses"): Printer(
        [
            _NAME,
            _column("Status", "Status of the component conditions"),
            _column("Message", "Message of the component conditions"),
            _column("Error", "Error of the component conditions"),
        ],
        _component_status_cells,
    ),
    ("batch", "jobs"): Printer(cols._JOB_COLUMNS, _job_cells),
    ("batch", "cronjobs"): Printer(cols._CRONJOB_COLUMNS, _cronjob_cells),
    ("apps", "statefulsets"): Printer(cols._STATEFULSET_COLUMNS, _statefulset_cells),
    ("apps", "daemonsets"): Printer(cols._DAEMONSET_COLUMNS, _daemonset_cells),
    ("apps", "controllerrevisions"): Printer(
        cols._CONTROLLER_REVISION_COLUMNS, _controller_revision_cells
    ),
    ("", "replicationcontrollers"): Printer(
        cols._REPLICATION_CONTROLLER_COLUMNS, _replication_controller_cells
    ),
    ("", "serviceaccounts"): Printer(cols._SERVICE_ACCOUNT_COLUMNS, _service_account_cells),
    ("", "resourcequotas"): Printer(cols._RESOURCE_QUOTA_COLUMNS, _resource_quota_cells),
    ("", "nodes"): Printer(cols._NODE_COLUMNS, _node_cells),
    ("", "persistentvolumes"): Printer(cols._PERSISTENT_VOLUME_COLUMNS, _persistent_volume_cells),
    ("", "persistentvolumeclaims"): Printer(
        cols._PERSISTENT_VOLUME_CLAIM_COLUMNS, _persistent_volume_claim_cells
    ),
    ("", "endpoints"): Printer(cols._ENDPOINTS_COLUMNS, _endpoints_cells),
    ("", "events"): Printer(cols._EVENT_COLUMNS, _event_cells),
    ("events.k8s.io", "events"): Printer(cols._EVENT_COLUMNS, _event_cells),
    ("", "podtemplates"): Printer(cols._POD_TEMPLATE_COLUMNS, _pod_template_cells),
    ("policy", "poddisruptionbudgets"): Printer(cols._PDB_COLUMNS, _pdb_cells),
    ("networking.k8s.io", "ingresses"): Printer(cols._INGRESS_COLUMNS, _ingress_cells),
    ("networking.k8s.io", "ingressclasses"): Printer(
        cols._INGRESS_CLASS_COLUMNS, _ingress_class_cells
    ),
    ("networking.k8s.io", "networkpolicies"): Printer(
        cols._NETWORK_POLICY_COLUMNS, _network_policy_cells
    ),
    ("discovery.k8s.io", "endpointslices"): Printer(
        cols._ENDPOINT_SLICE_COLUMNS, _endpoint_slice_cells
    ),
    ("coordination.k8s.io", "leases"): Printer(cols._LEASE_COLUMNS, _lease_cells),
    ("rbac.authorization.k8s.io", "rolebindings"): Printer(
        cols._ROLE_BINDING_COLUMNS, _binding_cells
    ),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): Printer(
        cols._CLUSTER_ROLE_BINDING_COLUMNS, _binding_cells
    ),
    ("scheduling.k8s.io", "priorityclasses"): Printer(
        cols._PRIORITY_CLASS_COLUMNS, _priority_class_cells
    ),
    ("storage.k8s.io", "storageclasses"): Printer(
        cols._STORAGE_CLASS_COLUMNS, _storage_class_cells
    ),
    ("storage.k8s.io", "volumeattachments"): Printer(
        cols._VOLUME_ATTACHMENT_COLUMNS, _volume_attachment_cells
    ),
    ("storage.k8s.io", "csinodes"): Printer(cols._CSI_NODE_COLUMNS, _csi_node_cells),
    ("storage.k8s.io", "csidrivers"): Printer(cols._CSI_DRIVER_COLUMNS, _csi_driver_cells),
    ("node.k8s.io", "runtimeclasses"): Printer(cols._RUNTIME_CLASS_COLUMNS, _runtime_class_cells),
    ("autoscaling", "horizontalpodautoscalers"): Printer(cols._HPA_COLUMNS, _hpa_cells),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): Printer(
        cols._WEBHOOK_CONFIGURATION_COLUMNS, _webhook_configuration_cells
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): Printer(
        cols._WEBHOOK_CONFIGURATION_COLUMNS, _webhook_configuration_cells
    ),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): Printer(
        cols._ADMISSION_POLICY_COLUMNS, _admission_policy_cells
    ),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): Printer(
        cols._ADMISSION_POLICY_BINDING_COLUMNS, _admission_policy_binding_cells
    ),
    ("certificates.k8s.io", "certificatesigningrequests"): Printer(cols._CSR_COLUMNS, _csr_cells),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"): Printer(
        cols._FLOW_SCHEMA_COLUMNS, _flow_schema_cells
    ),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"): Printer(
        cols._PRIORITY_LEVEL_COLUMNS, _priority_level_cells
    ),
    ("storage.k8s.io", "csistoragecapacities"): Printer(
        cols._CSI_STORAGE_CAPACITY_COLUMNS, _csi_storage_capacity_cells
    ),
}
#: What the real server answers for a kind without a printer of its own (roles,
#: clusterroles, limitranges, customresourcedefinitions, ...): its default table convertor's
#: Name and "Created At".
_GENERIC = Printer([_NAME, cols._CREATED_AT], _default_cells)


def _jsonpath(obj: Any, path: str) -> Any:
    """The simple JSONPath of printer columns: ``.a.b``, ``.a[0].b``, ``.a['x.y']``."""
    current = obj
    i = 0
    while i < len(path) and current is not None:
        char = path[i]
        if char == ".":
            j = i + 1
            while j < len(path) and path[j] not in ".[":
                j += 1
            key = path[i + 1 : j]
            current = current.get(key) if isinstance(current, dict) and key else current
            i = j
        elif char == "[":
            j = path.index("]", i)
            token = path[i + 1 : j].strip("'\"")
            if token.isdigit():
                index = int(token)
                current = (
                    current[index] if isinstance(current, list) and index < len(current) else None
                )
            else:
                current = current.get(token) if isinstance(current, dict) else None
            i = j + 1
        else:
            return None
    return current


def _crd_printer(crd: JSONDict, version: str) -> Printer:
    served: JSONDict = next(
        (v for v in (crd.get("spec") or {}).get("versions") or [] if v.get("name") == version),
        {},
    )
    declared = served.get("additionalPrinterColumns")
    if declared is None:
        declared = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
    columns = [_NAME] + [
        _column(
            c.get("name", ""),
            c.get("description", ""),
            type_=c.get("type", "string"),
            fmt=c.get("format", ""),
            priority=int(c.get("priority", 0)),
        )
        for c in declared
    ]
    paths = [c.get("jsonPath", "") for c in declared]

    def cells(obj: JSONDict, age: Age) -> list[Cell]:
        out: list[Cell] = [_name(obj)]
        for path in paths:
            value = _jsonpath(obj, path)
            out.append(
                value if isinstance(value, (str, int, float, bool)) or value is None else str(value)
            )
        return out

    return Printer(columns, cells)


def printer_for(resource: APIResource, crd: JSONDict | None = None) -> Printer:
    """The printer of ``resource``; a custom resource's from its CRD."""
    if crd is not None:
        return _crd_printer(crd, resource.version)
    return _PRINTERS.get((resource.group, resource.resource), _GENERIC)
