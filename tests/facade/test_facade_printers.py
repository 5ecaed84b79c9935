"""Server-side printing of the built-in kinds beyond the first few: kube-apiserver v1.30's
columns and cells, for an object of each kind created through the facade.

Timestamps in the objects are whole hours or days in the past, so the durations printed
since them (``3h``, ``10d``) are the same whatever second the test runs at; each Age
column holds the few seconds since the object was created.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from ownergc.protocols import APIResource
from ownergc_backends.memory._tables import human_duration, printer_for
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import Kubectl, request

TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
AGE = re.compile(r"^\d+s$")
CREATED_AT = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
#: Stands for the Age cell (a few seconds; checked against AGE).
NEW = object()


def ago(**delta: float) -> str:
    when = datetime.now(timezone.utc) - timedelta(**delta)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def ago_micro(**delta: float) -> str:
    when = datetime.now(timezone.utc) - timedelta(**delta)
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def pod_template(name: str, image: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels or {"app": name}},
        "spec": {"containers": [{"name": name, "image": image}]},
    }


def job_template(name: str, image: str, **labels: str) -> dict[str, Any]:
    """A Job's pod template: its restart policy one a Job allows."""
    template = pod_template(name, image, **labels)
    template["spec"]["restartPolicy"] = "Never"
    return template


def create(server: KubeAPIServer, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Create ``body``; its ``status``, which a create resets (as the kinds' strategies
    do), is then written as a controller would: through ``/status`` where the kind has
    one, else by an update."""
    reply = request(server, "POST", path, body)
    assert reply.status == 201, reply.text
    created: dict[str, Any] = reply.json()
    if "status" in body:
        name = created["metadata"]["name"]
        patch = {"status": body["status"]}
        merge = {"Content-Type": "application/merge-patch+json"}
        reply = request(server, "PATCH", f"{path}/{name}/status", patch, headers=merge)
        if reply.status == 404:
            reply = request(server, "PATCH", f"{path}/{name}", patch, headers=merge)
        assert reply.status == 200, reply.text
        created = reply.json()
    return created


def table(server: KubeAPIServer, path: str) -> dict[str, Any]:
    reply = request(server, "GET", path, headers=TABLE)
    assert reply.status == 200, reply.text
    answer: dict[str, Any] = reply.json()
    assert answer["kind"] == "Table"
    return answer


def check(
    server: KubeAPIServer,
    path: str,
    body: dict[str, Any],
    columns: list[str],
    cells: list[Any],
    *,
    wide: int = 0,
) -> None:
    """Create ``body`` at ``path``; its table has ``columns`` (the last ``wide`` of them of
    priority 1, the ``-o wide`` ones) and its row ``cells`` (NEW standing for an Age)."""
    create(server, path, body)
    answer = table(server, path)
    names = [c["name"] for c in answer["columnDefinitions"]]
    assert names == columns
    priorities = [c["priority"] for c in answer["columnDefinitions"]]
    assert priorities == [0] * (len(columns) - wide) + [1] * wide
    for column in answer["columnDefinitions"]:
        assert column["description"], column
        assert column["type"] in ("string", "integer", "boolean", "number", "date"), column
    name = body["metadata"]["name"]
    [row] = [r for r in answer["rows"] if r["object"]["metadata"]["name"] == name]
    got = row["cells"]
    assert len(got) == len(cells), got
    for value, wanted in zip(got, cells, strict=True):
        if wanted is NEW:
            assert AGE.match(value), got
        elif wanted is CREATED_AT:
            assert CREATED_AT.match(value), got
        else:
            assert value == wanted, got


# --- batch ---


def test_job_status_completions_and_duration(server: KubeAPIServer) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "pi"},
        "spec": {
            "completions": 1,
            "manualSelector": True,
            "selector": {"matchLabels": {"job-name": "pi"}},
            "template": job_template("pi", "perl:5.34", **{"job-name": "pi"}),
        },
        "status": {
            "succeeded": 1,
            "startTime": "2024-01-01T00:00:00Z",
            "completionTime": "2024-01-01T00:01:42Z",
            "conditions": [{"type": "Complete", "status": "True"}],
        },
    }
    check(
        server,
        "/apis/batch/v1/namespaces/default/jobs",
        job,
        ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"],
        ["pi", "Complete", "1/1", "102s", NEW, "pi", "perl:5.34", "job-name=pi"],
        wide=3,
    )


def test_a_running_job_lasts_until_now(server: KubeAPIServer) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "crunch"},
        "spec": {"parallelism": 3, "template": job_template("crunch", "busybox")},
        "status": {"active": 3, "succeeded": 0, "startTime": ago(hours=3)},
    }
    create(server, "/apis/batch/v1/namespaces/default/jobs", job)
    [row] = table(server, "/apis/batch/v1/namespaces/default/jobs")["rows"]
    assert row["cells"][:4] == ["crunch", "Running", "0/1 of 3", "3h"]


def test_cronjob_schedule_suspend_active_last_schedule(server: KubeAPIServer) -> None:
    # (No spec.timeZone here: the facade's API schema is 1.24's, which drops that field;
    # the Timezone cell is checked on the printer alone below.)
    cronjob = {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly"},
        "spec": {
            "schedule": "0 3 * * *",
            "suspend": False,
            "jobTemplate": {"spec": {"template": job_template("backup", "restic")}},
        },
        "status": {
            "active": [{"kind": "Job", "name": "nightly-1", "namespace": "default"}],
            "lastScheduleTime": ago(hours=3),
        },
    }
    check(
        server,
        "/apis/batch/v1/namespaces/default/cronjobs",
        cronjob,
        [
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
        [
            "nightly",
            "0 3 * * *",
            "<none>",
            "False",
            1,
            "3h",
            NEW,
            "backup",
            "restic",
            "<none>",
        ],
        wide=3,
    )


# --- apps ---


def test_statefulset_ready(server: KubeAPIServer) -> None:
    check(
        server,
        "/apis/apps/v1/namespaces/default/statefulsets",
        statefulset(),
        ["Name", "Ready", "Age", "Containers", "Images"],
        ["db", "2/3", NEW, "db", "postgres:16"],
        wide=2,
    )


def statefulset() -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": pod_template("db", "postgres:16"),
        },
        "status": {"replicas": 3, "readyReplicas": 2},
    }


def test_daemonset_counts_and_node_selector(server: KubeAPIServer) -> None:
    template = pod_template("agent", "fluentd")
    template["spec"]["nodeSelector"] = {"kubernetes.io/os": "linux"}
    daemonset = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template},
        "status": {
            "desiredNumberScheduled": 4,
            "currentNumberScheduled": 4,
            "numberReady": 3,
            "updatedNumberScheduled": 2,
            "numberAvailable": 3,
            "numberMisscheduled": 0,
        },
    }
    check(
        server,
        "/apis/apps/v1/namespaces/default/daemonsets",
        daemonset,
        [
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Up-to-date",
            "Available",
            "Node Selector",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
        ["agent", 4, 4, 3, 2, 3, "kubernetes.io/os=linux", NEW, "agent", "fluentd", "app=agent"],
        wide=3,
    )


def test_controllerrevision_controller_and_revision(server: KubeAPIServer) -> None:
    owner = create(server, "/apis/apps/v1/namespaces/default/statefulsets", statefulset())
    revision = {
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": {
            "name": "db-5d4f8c",
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": "db",
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "data": {"spec": {}},
        "revision": 2,
    }
    check(
        server,
        "/apis/apps/v1/namespaces/default/controllerrevisions",
        revision,
        ["Name", "Controller", "Revision", "Age"],
        ["db-5d4f8c", "statefulset.apps/db", 2, NEW],
    )


# --- core ---


def test_replicationcontroller(server: KubeAPIServer) -> None:
    rc = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"app": "web", "tier": "front"},
            "template": pod_template("web", "nginx", app="web", tier="front"),
        },
        "status": {"replicas": 2, "readyReplicas": 1},
    }
    check(
        server,
        "/api/v1/namespaces/default/replicationcontrollers",
        rc,
        ["Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"],
        ["web", 2, 2, 1, NEW, "web", "nginx", "app=web,tier=front"],
        wide=3,
    )


def test_resourcequota_requests_and_limits(server: KubeAPIServer) -> None:
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "team"},
        "spec": {"hard": {"pods": "10", "requests.cpu": "1", "limits.memory": "2Gi"}},
        "status": {
            "hard": {"pods": "10", "requests.cpu": "1", "limits.memory": "2Gi"},
            "used": {"pods": "3", "requests.cpu": "500m"},
        },
    }
    check(
        server,
        "/api/v1/namespaces/default/resourcequotas",
        quota,
        ["Name", "Age", "Request", "Limit"],
        ["team", NEW, "pods: 3/10, requests.cpu: 500m/1", "limits.memory: 0/2Gi"],
    )


def test_serviceaccount_secrets(server: KubeAPIServer) -> None:
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "bot"},
        "secrets": [{"name": "bot-token"}],
    }
    check(
        server,
        "/api/v1/namespaces/default/serviceaccounts",
        account,
        ["Name", "Secrets", "Age"],
        ["bot", 1, NEW],
    )


def test_node_status_roles_version_and_wide_columns(server: KubeAPIServer) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "node-1",
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "etcd"},
        },
        "spec": {"unschedulable": True},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True"},
            ],
            "addresses": [
                {"type": "Hostname", "address": "node-1"},
                {"type": "InternalIP", "address": "10.0.0.5"},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.30.2",
                "osImage": "Debian GNU/Linux 12 (bookworm)",
                "kernelVersion": "6.1.0-18-amd64",
                "containerRuntimeVersion": "containerd://1.7.13",
                "machineID": "",
                "systemUUID": "",
                "bootID": "",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }
    check(
        server,
        "/api/v1/nodes",
        node,
        [
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
            "Internal-IP",
            "External-IP",
            "OS-Image",
            "Kernel-Version",
            "Container-Runtime",
        ],
        [
            "node-1",
            "Ready,SchedulingDisabled",
            "control-plane,etcd",
            NEW,
            "v1.30.2",
            "10.0.0.5",
            "<none>",
            "Debian GNU/Linux 12 (bookworm)",
            "6.1.0-18-amd64",
            "containerd://1.7.13",
        ],
        wide=5,
    )


PV_COLUMNS = [
    "Name",
    "Capacity",
    "Access Modes",
    "Reclaim Policy",
    "Status",
    "Claim",
    "StorageClass",
    "VolumeAttributesClass",
    "Reason",
    "Age",
    "VolumeMode",
]


def test_persistentvolume(server: KubeAPIServer) -> None:
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv1"},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "standard",
            "volumeMode": "Filesystem",
            "claimRef": {"namespace": "default", "name": "data"},
            "hostPath": {"path": "/data"},
        },
        "status": {"phase": "Bound"},
    }
    check(
        server,
        "/api/v1/persistentvolumes",
        volume,
        PV_COLUMNS,
        [
            "pv1",
            "10Gi",
            "RWO,RWX",
            "Retain",
            "Bound",
            "default/data",
            "standard",
            "<unset>",
            "",
            NEW,
            "Filesystem",
        ],
        wide=1,
    )


PVC_COLUMNS = [
    "Name",
    "Status",
    "Volume",
    "Capacity",
    "Access Modes",
    "StorageClass",
    "VolumeAttributesClass",
    "Age",
    "VolumeMode",
]


def claim(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "standard",
            **spec,
        },
    }


def test_persistentvolumeclaim_bound_and_pending(server: KubeAPIServer) -> None:
    bound = claim("data", volumeName="pv1", volumeMode="Filesystem")
    bound["status"] = {
        "phase": "Bound",
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
    }
    path = "/api/v1/namespaces/default/persistentvolumeclaims"
    check(
        server,
        path,
        bound,
        PVC_COLUMNS,
        ["data", "Bound", "pv1", "10Gi", "RWO", "standard", "<unset>", NEW, "Filesystem"],
        wide=1,
    )
    pending = claim("later")
    pending["status"] = {"phase": "Pending"}
    check(
        server,
        path,
        pending,
        PVC_COLUMNS,
        # (no volumeMode given: the server defaults it)
        ["later", "Pending", "", "", "", "standard", "<unset>", NEW, "Filesystem"],
        wide=1,
    )


def test_endpoints_first_three_then_how_many_more(server: KubeAPIServer) -> None:
    endpoints = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": "web"},
        "subsets": [
            {
                "addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}],
            }
        ],
    }
    check(
        server,
        "/api/v1/namespaces/default/endpoints",
        endpoints,
        ["Name", "Endpoints", "Age"],
        ["web", "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...", NEW],
    )


EVENT_COLUMNS = [
    "Last Seen",
    "Type",
    "Reason",
    "Object",
    "Subobject",
    "Source",
    "Message",
    "First Seen",
    "Count",
    "Name",
]


def test_core_event(server: KubeAPIServer) -> None:
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "web-1.17a"},
        "involvedObject": {
            "kind": "Pod",
            "namespace": "default",
            "name": "web-1",
            "fieldPath": "spec.containers{web}",
        },
        "reason": "Pulled",
        "message": 'Successfully pulled image "nginx"\n',
        "source": {"component": "kubelet", "host": "node-1"},
        "firstTimestamp": ago(days=10),
        "lastTimestamp": ago(hours=3),
        "count": 4,
        "type": "Normal",
    }
    columns = EVENT_COLUMNS
    create(server, "/api/v1/namespaces/default/events", event)
    answer = table(server, "/api/v1/namespaces/default/events")
    assert [c["name"] for c in answer["columnDefinitions"]] == columns
    assert [c["priority"] for c in answer["columnDefinitions"]] == [0, 0, 0, 0, 1, 1, 0, 1, 1, 1]
    [row] = answer["rows"]
    assert row["cells"] == [
        "3h",
        "Normal",
        "Pulled",
        "pod/web-1",
        "spec.containers{web}",
        "kubelet, node-1",
        'Successfully pulled image "nginx"',
        "10d",
        4,
        "web-1.17a",
    ]


def test_events_k8s_io_event_prints_like_a_core_one(server: KubeAPIServer) -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "web.17b"},
        "eventTime": ago_micro(hours=5),
        "series": {"count": 5, "lastObservedTime": ago_micro(hours=3)},
        "reportingController": "deployment-controller",
        "reportingInstance": "control-plane-1",
        "action": "Scale",
        "reason": "ScalingReplicaSet",
        "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"},
        "note": "Scaled up replica set web-7d9 to 3",
        "type": "Normal",
    }
    create(server, "/apis/events.k8s.io/v1/namespaces/default/events", event)
    answer = table(server, "/apis/events.k8s.io/v1/namespaces/default/events")
    assert [c["name"] for c in answer["columnDefinitions"]] == EVENT_COLUMNS
    [row] = answer["rows"]
    assert row["cells"] == [
        "3h",
        "Normal",
        "ScalingReplicaSet",
        "deployment/web",
        "",
        "deployment-controller, control-plane-1",
        "Scaled up replica set web-7d9 to 3",
        "5h",
        5,
        "web.17b",
    ]


def test_podtemplate(server: KubeAPIServer) -> None:
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {"name": "worker"},
        "template": pod_template("worker", "busybox", app="worker", tier="batch"),
    }
    check(
        server,
        "/api/v1/namespaces/default/podtemplates",
        template,
        ["Name", "Containers", "Images", "Pod Labels"],
        ["worker", "worker", "busybox", "app=worker,tier=batch"],
    )


# --- policy, networking, discovery, coordination ---


def test_poddisruptionbudget(server: KubeAPIServer) -> None:
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}},
        "status": {
            "disruptionsAllowed": 1,
            "currentHealthy": 3,
            "desiredHealthy": 2,
            "expectedPods": 3,
        },
    }
    check(
        server,
        "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
        pdb,
        ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"],
        ["web", "50%", "N/A", 1, NEW],
    )


def test_ingress(server: KubeAPIServer) -> None:
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    ingress = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": "web"},
        "spec": {
            "ingressClassName": "nginx",
            "tls": [{"hosts": ["a.example.com"], "secretName": "tls"}],
            "rules": [
                {
                    "host": host,
                    "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]},
                }
                for host in ("a.example.com", "b.example.com")
            ],
        },
        "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}},
    }
    check(
        server,
        "/apis/networking.k8s.io/v1/namespaces/default/ingresses",
        ingress,
        ["Name", "Class", "Hosts", "Address", "Ports", "Age"],
        ["web", "nginx", "a.example.com,b.example.com", "203.0.113.7", "80, 443", NEW],
    )


def test_ingressclass(server: KubeAPIServer) -> None:
    ingress_class = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IngressClass",
        "metadata": {"name": "external-lb"},
        "spec": {
            "controller": "example.com/ingress-controller",
            "parameters": {
                "apiGroup": "k8s.example.com",
                "kind": "IngressParameters",
                "name": "external-lb",
            },
        },
    }
    check(
        server,
        "/apis/networking.k8s.io/v1/ingressclasses",
        ingress_class,
        ["Name", "Controller", "Parameters", "Age"],
        [
            "external-lb",
            "example.com/ingress-controller",
            "IngressParameters.k8s.example.com/external-lb",
            NEW,
        ],
    )


def test_networkpolicy_pod_selector(server: KubeAPIServer) -> None:
    path = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
    for name, selector, shown in [
        ("db", {"matchLabels": {"role": "db"}}, "role=db"),
        ("deny-all", {}, "<none>"),
    ]:
        policy = {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": name},
            "spec": {"podSelector": selector, "policyTypes": ["Ingress"]},
        }
        check(server, path, policy, ["Name", "Pod-Selector", "Age"], [name, shown, NEW])


def test_endpointslice(server: KubeAPIServer) -> None:
    endpoint_slice = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": "web-abc12"},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
        "endpoints": [{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}],
    }
    check(
        server,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        endpoint_slice,
        ["Name", "AddressType", "Ports", "Endpoints", "Age"],
        ["web-abc12", "IPv4", "80", "10.0.0.1,10.0.0.2", NEW],
    )


def test_lease_holder(server: KubeAPIServer) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "controller-lock"},
        "spec": {"holderIdentity": "manager-7f9_3c1", "leaseDurationSeconds": 15},
    }
    check(
        server,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        lease,
        ["Name", "Holder", "Age"],
        ["controller-lock", "manager-7f9_3c1", NEW],
    )


# --- rbac, scheduling ---


SUBJECTS = [
    {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
    {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"},
    {"kind": "ServiceAccount", "name": "bot", "namespace": "default"},
    {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"},
]
BINDING_COLUMNS = ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]


@pytest.mark.parametrize(
    ("path", "kind", "role_kind"),
    [
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            "RoleBinding",
            "Role",
        ),
        ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "ClusterRoleBinding", None),
    ],
)
def test_role_and_cluster_role_bindings(
    server: KubeAPIServer, path: str, kind: str, role_kind: str | None
) -> None:
    role_kind = role_kind or "ClusterRole"
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": "readers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": "reader"},
        "subjects": SUBJECTS,
    }
    check(
        server,
        path,
        binding,
        BINDING_COLUMNS,
        ["readers", f"{role_kind}/reader", NEW, "alice", "devs", "default/bot, tools/ci"],
        wide=3,
    )


def test_priorityclass(server: KubeAPIServer) -> None:
    priority_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "batch-low"},
        "value": 1000,
        "globalDefault": False,
        "preemptionPolicy": "Never",
        "description": "batch work",
    }
    check(
        server,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        priority_class,
        ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
        ["batch-low", 1000, False, NEW, "Never"],
    )


# --- kinds the real server prints with its default convertor ---


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": {"name": "reader"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
            },
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "printer-test-reader"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
            },
        ),
        (
            "/api/v1/namespaces/default/limitranges",
            {
                "apiVersion": "v1",
                "kind": "LimitRange",
                "metadata": {"name": "defaults"},
                "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]},
            },
        ),
        (
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {
                    "group": "example.com",
                    "scope": "Namespaced",
                    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": True,
                            "schema": {"openAPIV3Schema": {"type": "object"}},
                        }
                    ],
                },
            },
        ),
    ],
    ids=["roles", "clusterroles", "limitranges", "customresourcedefinitions"],
)
def test_default_convertor_kinds_print_name_and_created_at(
    server: KubeAPIServer, path: str, body: dict[str, Any]
) -> None:
    created = create(server, path, body)
    answer = table(server, path)
    assert [(c["name"], c["type"]) for c in answer["columnDefinitions"]] == [
        ("Name", "string"),
        ("Created At", "date"),
    ]
    [row] = [r for r in answer["rows"] if r["cells"][0] == body["metadata"]["name"]]
    assert row["cells"][1] == created["metadata"]["creationTimestamp"]
    assert CREATED_AT.match(row["cells"][1])


# --- storage, node ---


def test_storageclass_default_marker(server: KubeAPIServer) -> None:
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "local",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }
    check(
        server,
        "/apis/storage.k8s.io/v1/storageclasses",
        storage_class,
        [
            "Name",
            "Provisioner",
            "ReclaimPolicy",
            "VolumeBindingMode",
            "AllowVolumeExpansion",
            "Age",
        ],
        [
            "local (default)",
            "kubernetes.io/no-provisioner",
            "Delete",
            "WaitForFirstConsumer",
            True,
            NEW,
        ],
    )


def test_volumeattachment(server: KubeAPIServer) -> None:
    attachment = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": "csi-123"},
        "spec": {
            "attacher": "ebs.csi.aws.com",
            "nodeName": "node-1",
            "source": {"persistentVolumeName": "pv1"},
        },
        "status": {"attached": True},
    }
    check(
        server,
        "/apis/storage.k8s.io/v1/volumeattachments",
        attachment,
        ["Name", "Attacher", "PV", "Node", "Attached", "Age"],
        ["csi-123", "ebs.csi.aws.com", "pv1", "node-1", True, NEW],
    )


def test_csinode_and_csidriver(server: KubeAPIServer) -> None:
    csi_node = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": "node-1"},
        "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "topologyKeys": []}]},
    }
    check(
        server,
        "/apis/storage.k8s.io/v1/csinodes",
        csi_node,
        ["Name", "Drivers", "Age"],
        ["node-1", 1, NEW],
    )
    driver = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": "ebs.csi.aws.com"},
        "spec": {
            "attachRequired": True,
            "podInfoOnMount": False,
            "volumeLifecycleModes": ["Persistent"],
        },
    }
    check(
        server,
        "/apis/storage.k8s.io/v1/csidrivers",
        driver,
        [
            "Name",
            "AttachRequired",
            "PodInfoOnMount",
            "StorageCapacity",
            "TokenRequests",
            "RequiresRepublish",
            "Modes",
            "Age",
        ],
        ["ebs.csi.aws.com", True, False, False, "<unset>", False, "Persistent", NEW],
    )


def test_runtimeclass(server: KubeAPIServer) -> None:
    runtime_class = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": "gvisor"},
        "handler": "runsc",
    }
    create(server, "/apis/node.k8s.io/v1/runtimeclasses", runtime_class)
    answer = table(server, "/apis/node.k8s.io/v1/runtimeclasses")
    assert [c["name"] for c in answer["columnDefinitions"]] == ["Name", "Handler", "Age"]
    [row] = answer["rows"]
    assert row["cells"][:2] == ["gvisor", "runsc"]


# --- autoscaling, admission, certificates ---


def test_horizontalpodautoscaler_targets(server: KubeAPIServer) -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50},
                    },
                },
                {
                    "type": "Resource",
                    "resource": {
                        "name": "memory",
                        "target": {"type": "AverageValue", "averageValue": "500Mi"},
                    },
                },
            ],
        },
        "status": {
            "currentReplicas": 3,
            "desiredReplicas": 3,
            "currentMetrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": 30}},
                }
            ],
        },
    }
    check(
        server,
        "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers",
        hpa,
        ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"],
        [
            "web",
            "Deployment/web",
            "cpu: 30%/50%, memory: <unknown>/500Mi",
            "2",
            10,
            3,
            NEW,
        ],
    )


@pytest.mark.parametrize("kind", ["ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"])
def test_webhook_configurations_count_webhooks(server: KubeAPIServer, kind: str) -> None:
    webhook = {
        "name": "check.example.com",
        "clientConfig": {"url": "https://127.0.0.1:1/check"},
        "rules": [
            {
                "apiGroups": ["example.com"],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["gadgets"],
            }
        ],
        "failurePolicy": "Ignore",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    configuration = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": "checks"},
        "webhooks": [webhook, {**webhook, "name": "audit.example.com"}],
    }
    resource = kind.lower() + "s"
    check(
        server,
        f"/apis/admissionregistration.k8s.io/v1/{resource}",
        configuration,
        ["Name", "Webhooks", "Age"],
        ["checks", 2, NEW],
    )


def test_certificatesigningrequest(server: KubeAPIServer) -> None:
    csr = {
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": "alice"},
        "spec": {
            "request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K",
            "signerName": "kubernetes.io/kube-apiserver-client",
            "expirationSeconds": 86400,
            "usages": ["client auth"],
        },
    }
    created = create(server, "/apis/certificates.k8s.io/v1/certificatesigningrequests", csr)
    answer = table(server, "/apis/certificates.k8s.io/v1/certificatesigningrequests")
    assert [c["name"] for c in answer["columnDefinitions"]] == [
        "Name",
        "Age",
        "SignerName",
        "Requestor",
        "RequestedDuration",
        "Condition",
    ]
    [row] = answer["rows"]
    assert AGE.match(row["cells"][1])
    assert row["cells"][2:] == [
        "kubernetes.io/kube-apiserver-client",
        created["spec"].get("username", ""),
        "24h",
        "Pending",
    ]


# --- the pure cell functions, on a fixed clock ---


def fixed_age(meta: dict[str, Any]) -> str:
    """The facade's Age on a clock stopped at 2024-01-01T12:00:00Z."""
    when = datetime.fromisoformat(str(meta["creationTimestamp"]).replace("Z", "+00:00"))
    now = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
    return human_duration((now - when).total_seconds())


def cells(group: str, version: str, resource: str, kind: str, obj: dict[str, Any]) -> list[Any]:
    printer = printer_for(APIResource(group, version, resource, kind, namespaced=True))
    obj.setdefault("metadata", {}).setdefault("creationTimestamp", "2024-01-01T11:00:00Z")
    return printer.cells(obj, fixed_age)


@pytest.mark.parametrize(
    ("conditions", "deleting", "status"),
    [
        ([{"type": "Failed", "status": "True"}], False, "Failed"),
        ([{"type": "Suspended", "status": "True"}], False, "Suspended"),
        ([{"type": "Suspended", "status": "True"}], True, "Terminating"),
        ([{"type": "Complete", "status": "True"}], True, "Complete"),
        ([{"type": "Failed", "status": "True"}], True, "Failed"),
        ([], True, "Terminating"),
        ([{"type": "FailureTarget", "status": "True"}], False, "FailureTarget"),
        ([{"type": "Complete", "status": "False"}], False, "Running"),
    ],
)
def test_job_status_cell(conditions: list[Any], deleting: bool, status: str) -> None:
    meta: dict[str, Any] = {"name": "j"}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T11:59:00Z"
    job = {"metadata": meta, "spec": {}, "status": {"conditions": conditions}}
    row = cells("batch", "v1", "jobs", "Job", job)
    assert row[1:4] == [status, "0/1", ""]
    assert row[4] == "60m"


def test_running_job_and_cronjob_durations_read_the_facade_clock() -> None:
    job = {
        "spec": {"completions": 5},
        "status": {"succeeded": 2, "startTime": "2024-01-01T11:55:15Z"},
    }
    assert cells("batch", "v1", "jobs", "Job", job)[2:4] == ["2/5", "4m45s"]
    cronjob: dict[str, Any] = {"spec": {"schedule": "@daily"}, "status": {}}
    assert cells("batch", "v1", "cronjobs", "CronJob", cronjob)[1:6] == [
        "@daily",
        "<none>",
        "<unset>",
        0,
        "<none>",
    ]
    cronjob = {
        "spec": {"schedule": "0 3 * * *", "timeZone": "Europe/Paris", "suspend": True},
        "status": {"lastScheduleTime": "2024-01-01T03:00:00Z"},
    }
    assert cells("batch", "v1", "cronjobs", "CronJob", cronjob)[2:6] == [
        "Europe/Paris",
        "True",
        0,
        "9h",
    ]


def test_event_without_timestamps_and_count() -> None:
    event = {"involvedObject": {"kind": "Node"}, "eventTime": "2024-01-01T11:58:00.000000Z"}
    row = cells("", "v1", "events", "Event", event)
    assert row[:4] == ["2m", "", "", "node"]
    assert row[7:9] == ["2m", 1]


def test_ingress_hosts_beyond_three_and_without_a_host() -> None:
    rules = [{"host": "a"}, {}, {"host": "b"}, {"host": "c"}, {"host": "d"}]
    row = cells("networking.k8s.io", "v1", "ingresses", "Ingress", {"spec": {"rules": rules}})
    assert row[2] == "a,b,c + 2 more..."
    row = cells("networking.k8s.io", "v1", "ingresses", "Ingress", {"spec": {"rules": [{}]}})
    assert row[1:5] == ["<none>", "*", "", "80"]


def test_node_without_ready_condition_and_hpa_without_metrics() -> None:
    assert cells("", "v1", "nodes", "Node", {"status": {}})[1:3] == ["Unknown", "<none>"]
    hpa = {"spec": {"scaleTargetRef": {"kind": "StatefulSet", "name": "db"}, "maxReplicas": 3}}
    row = cells("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", hpa)
    assert row[1:6] == ["StatefulSet/db", "<none>", "<unset>", 3, 0]


def test_csr_conditions() -> None:
    csr = {
        "spec": {"signerName": "example.com/signer", "username": "alice"},
        "status": {"conditions": [{"type": "Approved"}], "certificate": "Y2VydA=="},
    }
    row = cells("certificates.k8s.io", "v1", "certificatesigningrequests", "CSR", csr)
    assert row[2:] == ["example.com/signer", "alice", "<none>", "Approved,Issued"]


# --- kubectl ---


JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  completions: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: pi, image: perl}]
"""
#: What the Job controller would write once the pod succeeded.
JOB_DONE = {
    "status": {
        "succeeded": 1,
        "startTime": "2024-01-01T00:00:00Z",
        "completionTime": "2024-01-01T00:00:42Z",
        "conditions": [{"type": "Complete", "status": "True"}],
    }
}


def test_kubectl_get_jobs_prints_the_real_columns(kubectl: Kubectl, server: KubeAPIServer) -> None:
    kubectl.run("apply", "-f", kubectl.manifest("job.yaml", JOB))
    # (kubectl 1.20 has no --subresource: the controller's status write, over HTTP)
    reply = request(
        server,
        "PATCH",
        "/apis/batch/v1/namespaces/default/jobs/pi/status",
        JOB_DONE,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert reply.status == 200, reply.text
    uid = kubectl.run("get", "job", "pi", "-o", "jsonpath={.metadata.uid}").stdout.strip()
    lines = kubectl.run("get", "jobs").stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert lines[1].split()[:4] == ["pi", "Complete", "1/1", "42s"]
    wide = kubectl.run("get", "jobs", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == [
        "NAME",
        "STATUS",
        "COMPLETIONS",
        "DURATION",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    # the selector the server generated
    assert wide[1].split()[5:] == ["pi", "perl", f"batch.kubernetes.io/controller-uid={uid}"]


# --- flow control, CSI storage capacity ---


def test_flowschema_and_prioritylevelconfiguration(server: KubeAPIServer) -> None:
    base = "/apis/flowcontrol.apiserver.k8s.io/v1"
    level = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "printer-test"},
        "spec": {
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": 20,
                "limitResponse": {
                    "type": "Queue",
                    "queuing": {"queues": 16, "handSize": 4, "queueLengthLimit": 50},
                },
            },
        },
    }
    check(
        server,
        f"{base}/prioritylevelconfigurations",
        level,
        [
            "Name",
            "Type",
            "NominalConcurrencyShares",
            "Queues",
            "HandSize",
            "QueueLengthLimit",
            "Age",
        ],
        ["printer-test", "Limited", 20, 16, 4, 50, NEW],
    )
    schema = {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta3",
        "kind": "FlowSchema",
        "metadata": {"name": "printer-test"},
        "spec": {
            "priorityLevelConfiguration": {"name": "printer-test"},
            "matchingPrecedence": 500,
            "distinguisherMethod": {"type": "ByUser"},
            "rules": [
                {
                    "subjects": [{"kind": "Group", "group": {"name": "system:authenticated"}}],
                    "resourceRules": [
                        {
                            "verbs": ["*"],
                            "apiGroups": ["*"],
                            "resources": ["*"],
                            "namespaces": ["*"],
                        }
                    ],
                }
            ],
        },
    }
    check(
        server,
        "/apis/flowcontrol.apiserver.k8s.io/v1beta3/flowschemas",
        schema,
        ["Name", "PriorityLevel", "MatchingPrecedence", "DistinguisherMethod", "Age", "MissingPL"],
        # MissingPL: the Dangling condition serve's APF controller set (its level exists).
        ["printer-test", "printer-test", 500, "ByUser", NEW, "False"],
    )


def test_csistoragecapacity(server: KubeAPIServer) -> None:
    capacity = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": "zone-a"},
        "storageClassName": "standard",
        "capacity": "100Gi",
    }
    check(
        server,
        "/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
        capacity,
        ["Name", "StorageClassName", "Capacity"],
        ["zone-a", "standard", "100Gi"],
    )
