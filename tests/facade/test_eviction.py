"""``pods/eviction`` where kube-apiserver 1.30 goes beyond the recorded 1.20 answers
(tests/facade/test_eviction_real.py replays those): the ``DisruptionTarget`` condition
an evicted Pod is deleted with, ``unhealthyPodEvictionPolicy: AlwaysAllow``, policy/v1
selectors (empty selects all, missing selects none), the subresource in discovery, and
``kubectl drain`` evicting through it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from ownergc.protocols import PatchType
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
PDBS = f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets"


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture
def server(store: InMemoryStore) -> Iterator[KubeAPIServer]:
    with run_in_thread(store) as running:
        yield running


def call(server: KubeAPIServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    status, _, answer = send(server, method, path, "" if body is None else json.dumps(body))
    return status, answer


def running_pod(
    server: KubeAPIServer, name: str, labels: dict[str, str], *, ready: bool = True
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]},
    }
    status, pod = call(server, "POST", PODS, body)
    assert status == 201, pod
    pod["status"] = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
    }
    status, pod = call(server, "PUT", f"{PODS}/{name}/status", pod)
    assert status == 200, pod


def budget(server: KubeAPIServer, name: str, spec: dict[str, Any], **status: Any) -> None:
    body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name}}
    code, made = call(server, "POST", PDBS, {**body, "spec": {"minAvailable": 1, **spec}})
    assert code == 201, made
    made["status"] = {"observedGeneration": 1, "currentHealthy": 1, "desiredHealthy": 1, **status}
    code, made = call(server, "PUT", f"{PDBS}/{name}/status", made)
    assert code == 200, made


def evict(server: KubeAPIServer, name: str, query: str = "", **fields: Any) -> tuple[int, Any]:
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}, **fields}
    return call(server, "POST", f"{PODS}/{name}/eviction{query}", body)


def exists(server: KubeAPIServer, name: str) -> bool:
    return call(server, "GET", f"{PODS}/{name}")[0] == 200


def test_an_evicted_pod_is_deleted_as_a_disruption_target(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    running_pod(server, "web", {"app": "web"})
    pods = store.resource_for("v1", "Pod")
    events: list[Any] = []

    async def watch_until_deleted(rv: str) -> None:
        async for event in store.watch(
            pods, resource_version=rv, namespace=NS, metadata_only=False
        ):
            events.append(event)
            if event.type == "DELETED":
                return

    rv = store.get_object("v1", "Pod", "web", NS)["metadata"]["resourceVersion"]  # type: ignore[index]
    status, answer = evict(server, "web")
    assert (status, answer["status"]) == (201, "Success")
    anyio.run(watch_until_deleted, rv)
    assert [e.type for e in events] == ["MODIFIED", "DELETED"]
    [target] = [
        c for c in events[0].object["status"]["conditions"] if c["type"] == "DisruptionTarget"
    ]
    assert {k: target[k] for k in ("status", "reason", "message")} == {
        "status": "True",
        "reason": "EvictionByEvictionAPI",
        "message": "Eviction API: evicting",
    }


def test_a_dry_run_eviction_changes_nothing(server: KubeAPIServer) -> None:
    running_pod(server, "web", {"app": "web"})
    budget(server, "pdb", {"selector": {"matchLabels": {"app": "web"}}}, disruptionsAllowed=1)
    status, answer = evict(server, "web", "?dryRun=All")
    assert (status, answer["status"]) == (201, "Success")
    assert exists(server, "web")
    _, pdb = call(server, "GET", f"{PDBS}/pdb")
    assert pdb["status"]["disruptionsAllowed"] == 1 and "disruptedPods" not in pdb["status"]
    status, answer = evict(
        server, "web", "?dryRun=All", deleteOptions={"dryRun": []}
    )  # an empty list in the body: the request's
    assert status == 201 and exists(server, "web")


def test_always_allow_lets_an_unready_pod_go_without_a_disruption(server: KubeAPIServer) -> None:
    running_pod(server, "sick", {"app": "web"}, ready=False)
    running_pod(server, "well", {"app": "web"})
    spec = {
        "selector": {"matchLabels": {"app": "web"}},
        "unhealthyPodEvictionPolicy": "AlwaysAllow",
    }
    budget(server, "pdb", spec, disruptionsAllowed=0, currentHealthy=0, desiredHealthy=1)
    assert evict(server, "sick")[0] == 201
    assert not exists(server, "sick")
    status, answer = evict(server, "well")  # ready: the budget allows nothing
    assert status == 429
    assert answer["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget pdb needs 1 healthy pods and has 0 currently",
        }
    ]


def test_an_empty_selector_selects_every_pod_and_a_missing_one_none(
    server: KubeAPIServer,
) -> None:
    running_pod(server, "a", {"app": "a"})
    budget(server, "all", {"selector": {}}, disruptionsAllowed=0)
    assert evict(server, "a")[0] == 429
    call(server, "DELETE", f"{PDBS}/all")
    budget(server, "none", {}, disruptionsAllowed=0)
    assert evict(server, "a")[0] == 201
    assert not exists(server, "a")


def test_non_matching_dry_runs_are_refused(server: KubeAPIServer) -> None:
    running_pod(server, "web", {"app": "web"})
    status, answer = evict(server, "web", "?dryRun=All", deleteOptions={"dryRun": ["Other"]})
    assert status == 500
    assert answer["message"] == (
        "Non-matching dry-run options in request and content: [All] and [Other]"
    )
    assert exists(server, "web")


def test_discovery_lists_the_subresource(server: KubeAPIServer) -> None:
    _, resources = call(server, "GET", "/api/v1")
    [entry] = [r for r in resources["resources"] if r["name"] == "pods/eviction"]
    assert entry == {
        "name": "pods/eviction",
        "singularName": "",
        "namespaced": True,
        "group": "policy",
        "version": "v1",
        "kind": "Eviction",
        "verbs": ["create"],
    }


def kubectl_137() -> str | None:
    found = shutil.which("kubectl")
    if found is None:
        return None
    version = subprocess.run([found, "version", "--client", "-o", "json"], capture_output=True)
    try:
        minor = int(json.loads(version.stdout)["clientVersion"]["minor"].rstrip("+"))
    except (ValueError, KeyError):
        return None
    return found if minor >= 27 else None


@pytest.mark.skipif(kubectl_137() is None, reason="no kubectl 1.27+ on PATH")
def test_kubectl_drain_evicts_and_respects_the_budget(
    server: KubeAPIServer, tmp_path: Path
) -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}}
    assert call(server, "POST", "/api/v1/nodes", node)[0] == 201
    for name in ("web-1", "web-2", "job-1"):
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": name.split("-")[0]}},
            "spec": {"nodeName": "node1", "containers": [{"name": "c", "image": "nginx:1.25"}]},
        }
        status, pod = call(server, "POST", PODS, body)
        assert status == 201, pod
        pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        assert call(server, "PUT", f"{PODS}/{name}/status", pod)[0] == 200
    # the web Pods' budget allows one disruption: drain evicts one and retries the other
    budget(server, "web", {"selector": {"matchLabels": {"app": "web"}}}, disruptionsAllowed=1,
           currentHealthy=2)  # fmt: skip
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps(server.kubeconfig()))
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)}
    done = subprocess.run(
        [kubectl_137() or "kubectl", "drain", "node1", "--force", "--timeout=4s"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode != 0, done.stdout  # one web Pod is left: the budget says no
    assert "evicting pod default/job-1" in done.stdout + done.stderr
    assert "Cannot evict pod as it would violate the pod's disruption budget." in done.stderr
    left = sorted(p for p in ("web-1", "web-2", "job-1") if exists(server, p))
    assert len(left) == 1 and left[0].startswith("web-"), left
    _, node_now = call(server, "GET", "/api/v1/nodes/node1")
    assert node_now["spec"]["unschedulable"] is True


@pytest.mark.parametrize(
    ("query", "fields", "status", "message"),
    [
        (
            "?dryRun=Foo",
            {},
            422,
            'CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
            '[]string{"Foo"}: supported values: "All"',
        ),
        (
            "",
            {"deleteOptions": {"dryRun": ["Foo"]}},
            422,
            'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: '
            '[]string{"Foo"}: supported values: "All"',
        ),
        (
            "",
            {"deleteOptions": {"dryRun": "All"}},
            400,
            'Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal '
            "string into Go struct field DeleteOptions.deleteOptions.dryRun of type []string",
        ),
        (
            "",
            {"metadata": {"name": "web", "namespace": "other"}},
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
        ),
        (
            "",
            {"metadata": "web"},
            400,
            'Eviction in version "v1" cannot be handled as a Eviction: json: cannot unmarshal '
            "string into Go struct field Eviction.metadata of type v1.ObjectMeta",
        ),
    ],
)
def test_a_refused_eviction_leaves_the_pod(
    server: KubeAPIServer, query: str, fields: dict[str, Any], status: int, message: str
) -> None:
    running_pod(server, "web", {"app": "web"})
    code, answer = evict(server, "web", query, **fields)
    assert (code, answer["message"]) == (status, message)
    assert exists(server, "web")


def test_a_body_without_type_information_is_read_as_an_eviction(server: KubeAPIServer) -> None:
    running_pod(server, "web", {"app": "web"})
    code, answer = call(server, "POST", f"{PODS}/web/eviction", {"metadata": {"name": "web"}})
    assert (code, answer["status"]) == (201, "Success")
    assert not exists(server, "web")


def test_a_pod_written_meanwhile_is_still_evicted(
    server: KubeAPIServer, store: InMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Pod is marked as it is when marked, not as it was read: a write in between (here
    while the budgets are read) is no conflict, and the budget is spent once."""
    running_pod(server, "web", {"app": "web"})
    budget(server, "pdb", {"selector": {"matchLabels": {"app": "web"}}}, disruptionsAllowed=1)
    pods = store.resource_for("v1", "Pod")
    listing = store.list

    async def list_and_write(resource: Any, **kwargs: Any) -> Any:
        if resource.resource == "poddisruptionbudgets":
            touched = {"metadata": {"labels": {"app": "web", "touched": "yes"}}}
            await store.patch(pods, "web", touched, patch_type=PatchType.MERGE, namespace=NS)
        return await listing(resource, **kwargs)

    monkeypatch.setattr(store, "list", list_and_write)
    code, answer = evict(server, "web")
    assert (code, answer["status"]) == (201, "Success")
    assert not exists(server, "web")
    _, pdb = call(server, "GET", f"{PDBS}/pdb")
    assert pdb["status"]["disruptionsAllowed"] == 0 and list(pdb["status"]["disruptedPods"]) == [
        "web"
    ]


def test_a_budget_with_a_malformed_status_or_selector_is_no_crash(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    running_pod(server, "web", {"app": "web"})
    body = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "odd"}}
    code, made = call(
        server, "POST", PDBS, {**body, "spec": {"selector": {"matchLabels": {"app": "web"}}}}
    )
    assert code == 201, made
    made["status"] = {"observedGeneration": "1", "disruptionsAllowed": "5"}
    assert call(server, "PUT", f"{PDBS}/odd/status", made)[0] == 200
    code, answer = evict(server, "web")  # (not a number: never processed)
    assert code == 429 and "still being processed" in answer["details"]["causes"][0]["message"]
    call(server, "DELETE", f"{PDBS}/odd")
    # a selector kube-apiserver cannot parse is refused on a write; one an object loaded
    # from elsewhere holds selects nothing: it protects no Pod
    unparsable = {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": []}]}
    refused = {**body, "metadata": {"name": "bad"}, "spec": {"selector": unparsable}}
    assert call(server, "POST", PDBS, refused)[0] == 422
    status = {"observedGeneration": 1, "currentHealthy": 1, "desiredHealthy": 1}
    store.load_objects(
        [{**refused, "metadata": {"name": "bad", "namespace": NS},
          "status": {**status, "disruptionsAllowed": 0}}]
    )  # fmt: skip
    assert evict(server, "web")[0] == 201


def test_the_disruption_target_replaces_its_old_condition_where_it_stands() -> None:
    from ownergc_backends.memory._apiserver.eviction import _with_disruption_target

    old = [
        {"type": "DisruptionTarget", "status": "False", "lastTransitionTime": "t0"},
        {"type": "Ready", "status": "True"},
    ]
    new = _with_disruption_target(old, "t1")
    assert [(c["type"], c["status"], c["lastTransitionTime"]) for c in new[:1]] == [
        ("DisruptionTarget", "True", "t1")
    ]
    assert new[1] == {"type": "Ready", "status": "True"}
    again = _with_disruption_target(new, "t2")
    assert again[0]["lastTransitionTime"] == "t1"  # already true: its time is kept


def test_an_unready_pod_is_pinned_at_the_version_read_even_over_the_clients(
    server: KubeAPIServer,
) -> None:
    """An unready Pod deleted past its healthy budget is deleted at the version the
    eviction read: 1.30 sets that version over any the client gave (a stale one here;
    pkg/registry/core/pod/storage/eviction.go, ``updateDeletionOptions``)."""
    running_pod(server, "sick", {"app": "web"}, ready=False)
    budget(server, "pdb", {"selector": {"matchLabels": {"app": "web"}}}, disruptionsAllowed=0)
    status, answer = evict(
        server, "sick", deleteOptions={"preconditions": {"resourceVersion": "1"}}
    )
    assert (status, answer["status"]) == (201, "Success")
    assert not exists(server, "sick")
