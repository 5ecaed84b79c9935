"""Server-side printing: the columns kube-apiserver's Table has for each kind.

``kubectl get`` asks for ``application/json;as=Table;v=v1;g=meta.k8s.io`` and
prints the columns the server sends. The column names, types and cell
formats below are kube-apiserver's printers' (facts of the API; the real
server's answers for namespaces, services, apiservices and componentstatuses
are in tests/data/real-apiserver-1.24/tables.json). A custom resource gets
its CRD's ``additionalPrinterColumns`` (the default being an Age column), and
any kind without a printer here gets Name and Age.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ownergc.protocols import APIResource, JSONDict

from ._selectors import selector_string

__all__ = ["Printer", "printer_for"]

Cell = str | int | float | bool | None
Age = Callable[[JSONDict], str]


def _column(
    name: str, description: str, *, type_: str = "string", fmt: str = "", priority: int = 0
) -> JSONDict:
    return {
        "name": name,
        "type": type_,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


_NAME = _column(
    "Name",
    "Name must be unique within a namespace. Is required when creating resources, although "
    "some resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "http://kubernetes.io/docs/user-guide/identifiers#names",
    fmt="name",
)
_AGE = _column(
    "Age",
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
)


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
    template = _spec(obj).get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    return (
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
    )


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


def _generic_cells(obj: JSONDict, age: Age) -> list[Cell]:
    return [_name(obj), age(_meta(obj))]


def _wide(name: str, description: str) -> JSONDict:
    return _column(name, description, priority=1)


_REPLICA_WIDE = [
    _wide("Containers", "Names of each container in the template."),
    _wide("Images", "Images referenced by each container in the template."),
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
}
_GENERIC = Printer([_NAME, _AGE], _generic_cells)


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
