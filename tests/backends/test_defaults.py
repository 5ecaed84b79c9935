"""Built-in kinds' defaults on every write (ownergc_backends/memory/_defaults.py).

What a real server's answers show is checked in tests/facade/test_defaults_real.py;
here, the rules' conditions and the writes other than a create: updates, patches,
server-side apply and who owns a defaulted field, idempotency.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ownergc.errors import Invalid
from ownergc.protocols import APIResource, PatchType
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._defaults import (
    DAEMON_SET_TEMPLATE_GENERATION,
    JOB_UID_LABEL,
    apply_defaults,
    canonical_quantity,
    image_pull_policy,
    qos_class,
    quantity_value,
)
from ownergc_backends.memory.http import run_in_thread
from tests.facade.test_field_validation_cases import send

pytestmark = pytest.mark.anyio

RECORDED: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "data/real-apiserver-1.20/defaults.json").read_text()
)
TEMPLATE = {
    "metadata": {"labels": {"app": "a"}},
    "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
}
SELECTOR = {"matchLabels": {"app": "a"}}


def res(store: InMemoryStore, api_version: str, kind: str) -> APIResource:
    return store.resource_for(api_version, kind)


def _group_resource(path: str) -> tuple[str, str, str]:
    parts = path.split("?")[0].strip("/").split("/")
    if parts[0] == "api":
        return "", parts[1], parts[-1]
    return parts[1], parts[2], parts[-1]


@pytest.mark.parametrize("record", RECORDED, ids=[r["body"]["metadata"]["name"] for r in RECORDED])
def test_defaulting_twice_changes_nothing_more(record: dict[str, Any]) -> None:
    """Handlers default a write, then the store does (for its direct callers): the
    second pass must find nothing to add."""
    group, version, resource = _group_resource(record["path"])
    once = copy.deepcopy(record["body"])
    apply_defaults(group, version, resource, once)
    twice = copy.deepcopy(once)
    apply_defaults(group, version, resource, twice)
    assert twice == once


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("busybox", "Always"),
        ("busybox:latest", "Always"),
        ("registry.example.com:5000/team/app", "Always"),
        ("registry.example.com:5000/team/app:v2", "IfNotPresent"),
        ("nginx:1.25", "IfNotPresent"),
        ("nginx@sha256:" + "a" * 64, "IfNotPresent"),
        ("nginx:latest@sha256:" + "a" * 64, "Always"),
    ],
)
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_quantities_compare_by_value() -> None:
    assert quantity_value("1") == quantity_value("1000m") == 1
    assert quantity_value("1Gi") == 2**30
    assert quantity_value("1.5k") == 1500
    assert quantity_value("2e3") == 2000
    assert quantity_value("1E") == 10**18  # exa, not an exponent
    assert quantity_value("lots") is None


def _spec(*containers: dict[str, Any]) -> dict[str, Any]:
    return {"containers": [{"name": str(i), **c} for i, c in enumerate(containers)]}


def test_qos_class() -> None:
    both = {"cpu": "1", "memory": "1Gi"}
    assert qos_class(_spec({})) == "BestEffort"
    assert qos_class(_spec({"resources": {"limits": both, "requests": both}})) == "Guaranteed"
    equal_values = {"cpu": "1000m", "memory": "1024Mi"}
    assert (
        qos_class(_spec({"resources": {"limits": both, "requests": equal_values}})) == "Guaranteed"
    )
    assert qos_class(_spec({"resources": {"requests": {"cpu": "1"}}})) == "Burstable"
    # one container without limits makes the pod Burstable
    assert qos_class(_spec({"resources": {"limits": both, "requests": both}}, {})) == "Burstable"
    # only cpu and memory count
    assert qos_class(_spec({"resources": {"limits": {"nvidia.com/gpu": "1"}}})) == "BestEffort"


async def test_a_pod_gets_requests_from_limits_and_a_template_does_not() -> None:
    store = InMemoryStore()
    limits = {"cpu": "1", "memory": "1Gi"}
    pod = await store.create(
        res(store, "v1", "Pod"),
        {
            "metadata": {"name": "p"},
            "spec": _spec({"image": "x:1", "resources": {"limits": limits}}),
        },
        namespace="default",
    )
    assert pod["spec"]["containers"][0]["resources"]["requests"] == limits
    assert pod["status"] == {"phase": "Pending", "qosClass": "Guaranteed"}
    rs = await store.create(
        res(store, "apps/v1", "ReplicaSet"),
        {
            "metadata": {"name": "rs"},
            "spec": {
                "selector": SELECTOR,
                "template": {
                    **TEMPLATE,
                    "spec": _spec({"image": "x:1", "resources": {"limits": limits}}),
                },
            },
        },
        namespace="default",
    )
    assert rs["spec"]["template"]["spec"]["containers"][0]["resources"] == {"limits": limits}


async def test_an_update_without_a_defaulted_field_gets_it_again_and_no_new_generation() -> None:
    store = InMemoryStore()
    deployments = res(store, "apps/v1", "Deployment")
    body = {"metadata": {"name": "d"}, "spec": {"selector": SELECTOR, "template": TEMPLATE}}
    created = await store.create(deployments, body, namespace="default")
    assert created["spec"]["replicas"] == 1
    assert created["spec"]["strategy"]["rollingUpdate"] == {
        "maxUnavailable": "25%",
        "maxSurge": "25%",
    }
    # a PUT of the object as first written: the defaults come back, nothing changed
    again = {
        **body,
        "metadata": {**body["metadata"], "resourceVersion": created["metadata"]["resourceVersion"]},
    }
    updated = await store.update(deployments, again, namespace="default")
    assert updated["spec"]["replicas"] == 1
    assert updated["metadata"]["generation"] == 1
    assert updated["spec"] == created["spec"]
    patched = await store.patch(
        deployments,
        "d",
        {"spec": {"replicas": None}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    assert patched["spec"]["replicas"] == 1  # removed by the patch, defaulted back


async def test_a_job_gets_its_generated_selector_and_labels() -> None:
    store = InMemoryStore()
    jobs = res(store, "batch/v1", "Job")
    template = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"restartPolicy": "Never", **_spec({"image": "x:1"})},
    }
    job = await store.create(
        jobs, {"metadata": {"name": "j"}, "spec": {"template": template}}, namespace="default"
    )
    uid = job["metadata"]["uid"]
    generated = {
        JOB_UID_LABEL: uid,
        "batch.kubernetes.io/job-name": "j",
        "controller-uid": uid,
        "job-name": "j",
    }
    assert job["spec"]["selector"] == {"matchLabels": {JOB_UID_LABEL: uid}}
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "a", **generated}
    # a Job without labels of its own has its template's, generated ones included
    assert job["metadata"]["labels"] == {"app": "a", **generated}
    assert (
        job["spec"]["completions"],
        job["spec"]["parallelism"],
        job["spec"]["backoffLimit"],
    ) == (1, 1, 6)
    own = await store.create(
        jobs,
        {"metadata": {"name": "own", "labels": {"team": "t"}}, "spec": {"template": template}},
        namespace="default",
    )
    assert own["metadata"]["labels"] == {"team": "t"}
    manual = await store.create(
        jobs,
        {
            "metadata": {"name": "m"},
            "spec": {
                "manualSelector": True,
                "selector": SELECTOR,
                "parallelism": 2,
                "template": template,
            },
        },
        namespace="default",
    )
    assert manual["spec"]["selector"] == SELECTOR
    assert manual["spec"]["template"]["metadata"]["labels"] == {"app": "a"}
    assert "completions" not in manual["spec"]  # only parallelism was unset-or-not


async def test_a_secret_s_string_data_is_merged_into_data() -> None:
    store = InMemoryStore()
    secret = await store.create(
        res(store, "v1", "Secret"),
        {
            "metadata": {"name": "s"},
            "data": {
                "a": base64.b64encode(b"old").decode(),
                "b": base64.b64encode(b"kept").decode(),
            },
            "stringData": {"a": "new"},
        },
        namespace="default",
    )
    assert "stringData" not in secret
    assert secret["type"] == "Opaque"
    assert {k: base64.b64decode(v) for k, v in secret["data"].items()} == {
        "a": b"new",
        "b": b"kept",
    }


async def test_a_daemon_set_s_template_generation_follows_template_changes() -> None:
    store = InMemoryStore()
    daemonsets = res(store, "apps/v1", "DaemonSet")
    ds = await store.create(
        daemonsets,
        {"metadata": {"name": "ds"}, "spec": {"selector": SELECTOR, "template": TEMPLATE}},
        namespace="default",
    )
    assert ds["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION] == "1"
    labelled = await store.patch(
        daemonsets,
        "ds",
        {"metadata": {"labels": {"x": "y"}}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    assert labelled["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION] == "1"
    image = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.26"}]}}}}
    changed = await store.patch(
        daemonsets, "ds", image, patch_type=PatchType.STRATEGIC_MERGE, namespace="default"
    )
    assert changed["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION] == "2"
    # a client cannot set it
    forged = await store.patch(
        daemonsets,
        "ds",
        {"metadata": {"annotations": {DAEMON_SET_TEMPLATE_GENERATION: "9"}}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    assert forged["metadata"]["annotations"][DAEMON_SET_TEMPLATE_GENERATION] == "2"


def _owned(obj: dict[str, Any], manager: str) -> str:
    entries = [e for e in obj["metadata"]["managedFields"] if e["manager"] == manager]
    assert len(entries) == 1, obj["metadata"]["managedFields"]
    return json.dumps(entries[0]["fieldsV1"])


def test_an_updater_owns_what_was_defaulted_and_an_applier_does_not() -> None:
    """As on a real server: the create's Update entry lists the defaulted fields (the
    field manager sees the decoded object); an apply's entry lists what was applied."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": SELECTOR, "template": TEMPLATE},
    }
    with run_in_thread(InMemoryStore()) as server:
        status, _, created = send(
            server,
            "POST",
            "/apis/apps/v1/namespaces/default/deployments?fieldManager=creator",
            json.dumps(deployment),
        )
        assert status == 201
        assert '"f:replicas"' in _owned(created, "creator")
        assert '"f:imagePullPolicy"' in _owned(created, "creator")
        applied = {**deployment, "metadata": {"name": "applied"}}
        status, _, answer = send(
            server,
            "PATCH",
            "/apis/apps/v1/namespaces/default/deployments/applied?fieldManager=applier",
            json.dumps(applied),
            "application/apply-patch+yaml",
        )
        assert status == 201, answer
        assert answer["spec"]["replicas"] == 1
        assert (
            answer["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
        )
        owned = _owned(answer, "applier")
        assert '"f:replicas"' not in owned and '"f:imagePullPolicy"' not in owned
        assert '"f:image"' in owned


async def test_a_job_s_own_selector_needs_manual_selector() -> None:
    """As kube-apiserver: the generated key joins a selector sent without
    manualSelector, which is then refused as not auto-generated."""
    store = InMemoryStore()
    template = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"restartPolicy": "Never", **_spec({"image": "x:1"})},
    }
    with pytest.raises(Invalid) as refused:
        await store.create(
            res(store, "batch/v1", "Job"),
            {"metadata": {"name": "j"}, "spec": {"selector": SELECTOR, "template": template}},
            namespace="default",
        )
    (cause,) = refused.value.details["causes"]
    assert cause["field"] == "spec.selector"
    assert "`selector` not auto-generated" in cause["message"]


def _defaulted(group: str, version: str, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    apply_defaults(group, version, resource, out)
    return out


def test_the_deprecated_service_account_field_mirrors_the_name_in_templates_too() -> None:
    template = {"spec": {"serviceAccount": "builder", "containers": [{"name": "c", "image": "x"}]}}
    rs = _defaulted("apps", "v1", "replicasets", {"spec": {"template": template}})
    spec = rs["spec"]["template"]["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("builder", "builder")


def test_the_smaller_defaults_the_review_found() -> None:
    svc = _defaulted(
        "", "v1", "services", {"spec": {"externalIPs": ["1.2.3.4"], "ports": [{"port": 80}]}}
    )
    assert svc["spec"]["externalTrafficPolicy"] == "Cluster"
    job = _defaulted(
        "batch",
        "v1",
        "jobs",
        {
            "spec": {
                "podFailurePolicy": {
                    "rules": [
                        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
                    ]
                }
            }
        },
    )
    assert job["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"
    assert job["spec"]["podReplacementPolicy"] == "Failed"
    snapshot = {"kind": "VolumeSnapshot", "name": "s", "apiGroup": "snapshot.storage.k8s.io"}
    claim = _defaulted("", "v1", "persistentvolumeclaims", {"spec": {"dataSource": snapshot}})
    assert claim["spec"]["dataSourceRef"] == claim["spec"]["dataSource"]
    ephemeral = {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
    pod = _defaulted("", "v1", "pods", {"spec": {"containers": [], "volumes": [ephemeral]}})
    assert (
        pod["spec"]["volumes"][0]["ephemeral"]["volumeClaimTemplate"]["spec"]["volumeMode"]
        == "Filesystem"
    )
    ic = _defaulted(
        "networking.k8s.io", "v1", "ingressclasses",
        {"spec": {"controller": "x", "parameters": {"kind": "K", "name": "n"}}},
    )  # fmt: skip
    assert ic["spec"]["parameters"]["scope"] == "Cluster"
    lr = _defaulted(
        "", "v1", "limitranges", {"spec": {"limits": [{"type": "Container", "min": {"cpu": "1"}}]}}
    )
    assert lr["spec"]["limits"][0] == {
        "type": "Container",
        "min": {"cpu": "1"},
        "defaultRequest": {"cpu": "1"},
    }


def test_qos_counts_the_pod_s_containers_together() -> None:
    # each container requests what it limits of one resource only: Burstable
    half = {"cpu": "1"}
    assert qos_class(_spec({"resources": {"limits": half, "requests": half}})) == "Burstable"
    # init containers count too
    both = {"cpu": "1", "memory": "1Gi"}
    spec = {
        **_spec({"resources": {"limits": both, "requests": both}}),
        "initContainers": [{"name": "i"}],
    }
    assert qos_class(spec) == "Burstable"


async def test_a_job_label_the_client_set_differently_is_refused_and_a_matching_selector_kept() -> (
    None
):
    store = InMemoryStore()
    jobs = res(store, "batch/v1", "Job")
    labelled = {
        "metadata": {"labels": {"job-name": "other"}},
        "spec": {"restartPolicy": "Never", **_spec({"image": "x:1"})},
    }
    with pytest.raises(Invalid) as refused:
        await store.create(
            jobs, {"metadata": {"name": "j"}, "spec": {"template": labelled}}, namespace="default"
        )
    assert "must be 'job-name=j'" in refused.value.message
    template = {"spec": {"restartPolicy": "Never", **_spec({"image": "x:1"})}}
    selector = {"matchLabels": {"batch.kubernetes.io/job-name": "k"}}
    job = await store.create(
        jobs,
        {"metadata": {"name": "k"}, "spec": {"selector": selector, "template": template}},
        namespace="default",
    )
    assert job["spec"]["selector"]["matchLabels"] == {
        "batch.kubernetes.io/job-name": "k",
        JOB_UID_LABEL: job["metadata"]["uid"],
    }


async def test_a_node_keeps_the_status_it_is_registered_with() -> None:
    store = InMemoryStore()
    status = {"nodeInfo": {"kubeletVersion": "v1.30.0"}, "capacity": {"cpu": "4"}}
    node = await store.create(
        res(store, "v1", "Node"), {"metadata": {"name": "n"}, "status": status}
    )
    assert node["status"] == {**status, "allocatable": {"cpu": "4"}}


def test_a_node_s_allocatable_defaults_to_its_capacity_and_a_balancer_s_ip_mode() -> None:
    node = _defaulted("", "v1", "nodes", {"status": {"capacity": {"cpu": "4", "pods": "110"}}})
    assert node["status"]["allocatable"] == {"cpu": "4", "pods": "110"}
    svc = _defaulted(
        "",
        "v1",
        "services",
        {
            "spec": {"type": "LoadBalancer"},
            "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb"}]}},
        },
    )
    assert svc["status"]["loadBalancer"]["ingress"] == [
        {"ip": "1.2.3.4", "ipMode": "VIP"},
        {"hostname": "lb"},
    ]


@pytest.mark.parametrize(
    ("written", "canonical"),
    [
        # the two examples of the Quantity type's own documentation
        ("1.5", "1500m"),
        ("1.5Gi", "1536Mi"),
        ("1000m", "1"),
        ("1024Mi", "1Gi"),
        ("1000", "1k"),
        ("0.5Gi", "512Mi"),
        ("1.5Ki", "1536"),  # binary, but not a whole number of KiB
        ("0.1Ki", "102400m"),  # a binary value with a fraction is written in decimal
        ("100Mi", "100Mi"),
        ("0.0001", "1m"),  # a resource list rounds up to a thousandth
        ("1e3", "1e3"),  # an exponent form is kept as sent
        (2, "2"),
        ("lots", "lots"),  # not a quantity: validation's business
    ],
)
def test_quantities_are_written_back_in_canonical_form(written: Any, canonical: str) -> None:
    assert canonical_quantity(written) == canonical


async def test_an_equal_quantity_written_differently_changes_nothing() -> None:
    store = InMemoryStore()
    deployments = res(store, "apps/v1", "Deployment")
    resources = {"limits": {"cpu": "1000m", "memory": "1024Mi"}}
    container = {"name": "c", "image": "nginx:1.25", "resources": resources}
    template = {**TEMPLATE, "spec": {"containers": [container]}}
    body = {"metadata": {"name": "d"}, "spec": {"selector": SELECTOR, "template": template}}
    created = await store.create(deployments, body, namespace="default")
    stored = created["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert stored == {"limits": {"cpu": "1", "memory": "1Gi"}}
    patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1000m"}}}]}
            }
        }
    }
    same = await store.patch(
        deployments, "d", patch, patch_type=PatchType.STRATEGIC_MERGE, namespace="default"
    )
    assert same["metadata"]["generation"] == 1
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
