"""InMemoryStore: discovery, mapping, create/get/list/update, validation, registration of
custom kinds, the request log and fault injection."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ownergc.errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    Forbidden,
    Invalid,
    InvalidObject,
    MethodNotAllowed,
    NotFound,
    RESTMappingError,
)
from ownergc.protocols import APIResource, ObjectStore, PatchType, PropagationPolicy
from ownergc_backends.memory import InMemoryStore
from tests import served_v130

pytestmark = pytest.mark.anyio


def cm(store: InMemoryStore) -> APIResource:
    return store.resource_for("v1", "ConfigMap")


async def make_cm(store: InMemoryStore, name: str = "c", ns: str = "default", **meta) -> dict:
    return await store.create(
        cm(store), {"metadata": {"name": name, "namespace": ns, **meta}, "data": {"a": "1"}}
    )


def test_is_an_object_store(store: InMemoryStore) -> None:
    assert isinstance(store, ObjectStore)


# ---------------------------------------------------------------------------
# Discovery and mapping

REAL = Path(__file__).parents[1] / "data" / "real-apiserver-1.24" / "discovery.json"


def real_resources() -> dict[tuple[str, str], tuple[str, bool, frozenset[str], list[str], str]]:
    """What a real kube-apiserver v1.30.0 serves: the recorded 1.24 server's resources
    (tests/data/real-apiserver-1.24) that store objects (create-only reviews and bindings
    aside), with the group versions 1.25-1.29 removed and added (tests/served_v130.py), by
    (group, resource): kind, namespaced, verbs, served versions, preferred version."""
    docs = json.loads(REAL.read_text())
    preferred = {g["name"]: g["preferredVersion"]["version"] for g in docs["/apis"]["groups"]}
    preferred.update(served_v130.PREFERRED)
    out: dict[tuple[str, str], tuple[str, bool, frozenset[str], list[str], str]] = {}
    for doc in docs.values():
        gv = doc.get("groupVersion")
        if not gv:
            continue
        group, _, version = gv.rpartition("/")
        for r in doc["resources"]:
            if "/" in r["name"] or "list" not in r["verbs"]:
                continue
            key = (group, r["name"])
            entry = out.setdefault(
                key,
                (r["kind"], r["namespaced"], frozenset(r["verbs"]), [], preferred.get(group, "v1")),
            )
            if (group, version, r["name"]) not in served_v130.REMOVED:
                entry[3].append(version)
    for (group, resource), (kind, namespaced, verbs) in served_v130.NEW_KINDS.items():
        out[(group, resource)] = (kind, namespaced, verbs, [], preferred.get(group, "v1"))
    for group, version, resource in served_v130.ADDED:
        out[(group, resource)][3].append(version)
    return {key: entry for key, entry in out.items() if entry[3]}


def test_the_recorded_discovery_has_what_the_table_of_1_30_changes_names() -> None:
    """The 1.24→1.30 table is about the recorded server: every removed resource version
    is in its discovery, and no added one is."""
    docs = json.loads(REAL.read_text())
    recorded = {
        (*doc["groupVersion"].rpartition("/")[::2], r["name"])
        for doc in docs.values()
        if doc.get("kind") == "APIResourceList"
        for r in doc["resources"]
    }
    assert set(served_v130.REMOVED) <= recorded
    assert not set(served_v130.ADDED) & recorded


async def test_discovery_serves_what_a_real_apiserver_serves(store: InMemoryStore) -> None:
    result = await store.discover()
    assert result.failed == {}
    served = {(r.group, r.resource, r.version): r for r in result.resources}
    real = real_resources()
    for (group, resource), (kind, namespaced, verbs, versions, pref) in real.items():
        assert {v for g, res, v in served if (g, res) == (group, resource)} == set(versions), (
            group,
            resource,
        )
        for version in versions:
            r = served[(group, resource, version)]
            assert (r.kind, r.namespaced) == (kind, namespaced), (group, resource)
            assert r.preferred == (version == pref), (group, resource, version)
            # deletecollection is advertised; the rest of the verbs are exact
            assert r.verbs == verbs, (group, resource)
    assert "deletecollection" not in served[("", "namespaces", "v1")].verbs
    extra = {(r.group, r.resource) for r in result.resources} - set(real)
    # Besides, the kinds a client creates and the server never stores (create only): the
    # 1.24 server's reviews (TokenReview among them) and core/v1 bindings, and
    # SelfSubjectReview, which newer servers add (kubectl auth whoami).
    reviews = {
        (group, r["name"]): (r["kind"], r["namespaced"], frozenset(r["verbs"]))
        for doc in json.loads(REAL.read_text()).values()
        for group in [doc.get("groupVersion", "").rpartition("/")[0]]
        for r in doc.get("resources", [])
        if (r["name"].endswith("reviews") or (group, r["name"]) == ("", "bindings"))
        and r["verbs"] == ["create"]
    }
    reviews[("authentication.k8s.io", "selfsubjectreviews")] = (
        "SelfSubjectReview",
        False,
        frozenset({"create"}),
    )
    assert extra == set(reviews)
    for key in reviews:
        (r,) = [r for r in result.resources if (r.group, r.resource) == key]
        assert (r.kind, r.namespaced, r.verbs) == reviews[key], key


async def test_discovery_failure_hides_a_group_version(store: InMemoryStore) -> None:
    store.set_discovery_failure("apps/v1", "the server is currently unable to handle the request")
    result = await store.discover()
    assert result.failed == {"apps/v1": "the server is currently unable to handle the request"}
    assert not any(r.group == "apps" for r in result.resources)
    assert any(r.group == "batch" for r in result.resources)
    store.set_discovery_failure("apps/v1", None)
    assert any(r.group == "apps" for r in (await store.discover()).resources)


def test_resource_for_and_by_name(store: InMemoryStore) -> None:
    deployments = store.resource_for("apps/v1", "Deployment")
    assert (deployments.group, deployments.resource, deployments.namespaced) == (
        "apps",
        "deployments",
        True,
    )
    assert store.resource_by_name("deployments.apps") == deployments
    assert store.resource_by_name("deployments.v1.apps") == deployments
    assert store.resource_by_name("pods") == store.resource_for("v1", "Pod")
    assert store.resource_by_name("clusterroles.rbac.authorization.k8s.io").kind == "ClusterRole"
    with pytest.raises(RESTMappingError) as info:
        store.resource_for("apps/v1beta1", "Deployment")
    assert (info.value.api_version, info.value.kind) == ("apps/v1beta1", "Deployment")
    with pytest.raises(RESTMappingError):
        store.resource_for("v1", "Deployment")
    with pytest.raises(RESTMappingError):
        store.resource_by_name("deployments.v2.apps")


async def test_unknown_resource_is_not_found(store: InMemoryStore) -> None:
    ghost = APIResource("example.com", "v1", "ghosts", "Ghost", True)
    with pytest.raises(NotFound):
        await store.list(ghost)
    with pytest.raises(NotFound):
        await store.get(ghost, "g", namespace="default")


# ---------------------------------------------------------------------------
# Create


async def test_create_fills_server_fields(store: InMemoryStore) -> None:
    before = int(store.resource_version)
    out = await make_cm(store, labels={"a": "b"})
    meta = out["metadata"]
    assert out["apiVersion"] == "v1" and out["kind"] == "ConfigMap"
    assert meta["uid"] == "uid-5"  # four namespaces took uid-1..uid-4
    assert meta["resourceVersion"] == str(before + 1)
    assert "generation" not in meta  # ConfigMaps have none (kube-apiserver v1.30)
    assert meta["creationTimestamp"] == "2026-01-02T03:04:05Z"
    assert meta["labels"] == {"a": "b"}
    assert out["data"] == {"a": "1"}
    assert "deletionTimestamp" not in meta


async def test_create_ignores_client_supplied_server_fields(store: InMemoryStore) -> None:
    out = await make_cm(
        store,
        uid="mine",
        creationTimestamp="2000-01-01T00:00:00Z",
        deletionTimestamp="2000-01-01T00:00:00Z",
        deletionGracePeriodSeconds=5,
        generation=7,
    )
    meta = out["metadata"]
    assert meta["uid"] != "mine"
    assert meta["creationTimestamp"] == "2026-01-02T03:04:05Z"
    # Kept: the create handler does not wipe generation and ConfigMap's strategy
    # does not set it (kinds that have one get 1, see test_generation.py).
    assert meta["generation"] == 7
    assert "deletionTimestamp" not in meta and "deletionGracePeriodSeconds" not in meta


async def test_uids_are_uuid4_by_default(clock) -> None:
    store = InMemoryStore(clock=clock)
    out = await make_cm(store)
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}",
        out["metadata"]["uid"],
    )


async def test_create_with_generate_name(store: InMemoryStore) -> None:
    a = await store.create(
        cm(store), {"metadata": {"generateName": "job-", "namespace": "default"}}
    )
    b = await store.create(
        cm(store), {"metadata": {"generateName": "job-", "namespace": "default"}}
    )
    assert re.fullmatch(r"job-[a-z0-9]{5}", a["metadata"]["name"])
    assert a["metadata"]["name"] != b["metadata"]["name"]
    assert a["metadata"]["generateName"] == "job-"


async def test_create_twice_is_already_exists(store: InMemoryStore) -> None:
    await make_cm(store)
    with pytest.raises(AlreadyExists) as info:
        await make_cm(store)
    assert isinstance(info.value, Conflict) and info.value.status == 409
    assert info.value.reason == "AlreadyExists"


async def test_same_name_in_two_namespaces(store: InMemoryStore) -> None:
    await make_cm(store, "c", "default")
    await make_cm(store, "c", "kube-system")
    listed = await store.list(cm(store))
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in listed.items] == [
        ("default", "c"),
        ("kube-system", "c"),
    ]


async def test_namespace_lifecycle_admission(store: InMemoryStore) -> None:
    with pytest.raises(NotFound) as info:
        await make_cm(store, ns="nowhere")
    assert info.value.message == 'namespaces "nowhere" not found'
    namespaces = store.resource_for("v1", "Namespace")
    ns = await store.create(namespaces, {"metadata": {"name": "doomed", "finalizers": ["x.io/y"]}})
    assert ns["spec"] == {"finalizers": ["kubernetes"]} and ns["status"] == {"phase": "Active"}
    await make_cm(store, "early", "doomed")
    held = await store.delete(namespaces, "doomed")
    assert held is not None and "deletionTimestamp" in held["metadata"]
    with pytest.raises(Forbidden):
        await make_cm(store, "late", "doomed")
    assert store.exists("v1", "ConfigMap", "early", "doomed")


async def test_initial_namespaces(store: InMemoryStore) -> None:
    listed = await store.list(store.resource_for("v1", "Namespace"))
    assert [i["metadata"]["name"] for i in listed.items] == [
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
    ]


async def test_namespace_resolution(store: InMemoryStore) -> None:
    from_arg = await store.create(cm(store), {"metadata": {"name": "a"}}, namespace="kube-system")
    assert from_arg["metadata"]["namespace"] == "kube-system"
    with pytest.raises(BadRequest):  # mismatch between request and body
        await store.create(
            cm(store), {"metadata": {"name": "b", "namespace": "default"}}, namespace="kube-system"
        )
    with pytest.raises(BadRequest):  # none at all
        await store.create(cm(store), {"metadata": {"name": "b"}})
    nodes = store.resource_for("v1", "Node")
    node = await store.create(nodes, {"metadata": {"name": "n1", "namespace": "ignored"}})
    assert "namespace" not in node["metadata"]
    with pytest.raises(BadRequest):
        await store.create(nodes, {"metadata": {"name": "n2"}}, namespace="default")
    with pytest.raises(BadRequest):
        await store.get(cm(store), "a")
    with pytest.raises(BadRequest):
        await store.get(nodes, "n1", namespace="default")
    assert (await store.get(nodes, "n1", namespace=""))["metadata"]["name"] == "n1"


@pytest.mark.parametrize(
    ("obj", "error"),
    [
        ({"metadata": {"namespace": "default"}}, Invalid),  # no name
        ({"metadata": {"name": "Upper", "namespace": "default"}}, Invalid),
        ({"metadata": {"name": "a/b", "namespace": "default"}}, Invalid),
        ({"metadata": {"name": "x" * 254, "namespace": "default"}}, Invalid),
        (
            {"metadata": {"name": "c", "namespace": "default", "finalizers": ["bad finalizer"]}},
            Invalid,
        ),
        ({"metadata": {"name": "c", "namespace": "default", "resourceVersion": "3"}}, BadRequest),
        ({"metadata": "c"}, BadRequest),
        ({"metadata": {"name": 5, "namespace": "default"}}, BadRequest),
        ({"metadata": {"name": "c", "namespace": "default", "labels": {"a": 1}}}, BadRequest),
        ({"metadata": {"name": "c", "namespace": "default", "finalizers": "orphan"}}, BadRequest),
        ({"metadata": {"name": "c", "namespace": "default", "generation": "1"}}, BadRequest),
        ({"kind": "Secret", "metadata": {"name": "c", "namespace": "default"}}, BadRequest),
        ({"apiVersion": "v2", "metadata": {"name": "c", "namespace": "default"}}, BadRequest),
        (
            {"metadata": {"name": "c", "namespace": "default"}, "data": {"x": float("nan")}},
            BadRequest,
        ),
        ({"metadata": {"name": "c", "namespace": "default"}, "data": {1: "x"}}, BadRequest),
        ({"metadata": {"name": "c", "namespace": "default"}, "data": {"x": {1, 2}}}, BadRequest),
        ("not an object", BadRequest),
    ],
)
async def test_create_validation(store: InMemoryStore, obj, error) -> None:
    rv = store.resource_version
    with pytest.raises(error):
        await store.create(cm(store), obj)
    assert store.resource_version == rv


async def test_name_rules_per_resource(store: InMemoryStore) -> None:
    roles = store.resource_for("rbac.authorization.k8s.io/v1", "ClusterRole")
    out = await store.create(roles, {"metadata": {"name": "system:controller:Foo"}})
    assert out["metadata"]["name"] == "system:controller:Foo"
    with pytest.raises(Invalid):
        await store.create(roles, {"metadata": {"name": ".."}})
    namespaces = store.resource_for("v1", "Namespace")
    with pytest.raises(Invalid):  # namespaces are DNS labels: no dots
        await store.create(namespaces, {"metadata": {"name": "a.b"}})


async def test_create_object_maps_apiversion_and_kind(store: InMemoryStore) -> None:
    out = await store.create_object(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "default"},
            "spec": {"replicas": 1},
        }
    )
    assert out["apiVersion"] == "apps/v1" and out["spec"]["replicas"] == 1
    assert store.exists("apps/v1", "Deployment", "d", "default")
    with pytest.raises(RESTMappingError):
        await store.create_object({"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {}})


async def test_create_does_not_alias_the_input(store: InMemoryStore) -> None:
    obj = {
        "metadata": {"name": "c", "namespace": "default", "labels": {"a": "b"}},
        "data": {"k": "v"},
    }
    await store.create(cm(store), obj)
    obj["metadata"]["labels"]["a"] = "changed"
    obj["data"]["k"] = "changed"
    live = await store.get(cm(store), "c", namespace="default", metadata_only=False)
    assert live["metadata"]["labels"] == {"a": "b"} and live["data"] == {"k": "v"}


# ---------------------------------------------------------------------------
# Get / list


async def test_get_shapes_and_copies(store: InMemoryStore) -> None:
    await make_cm(
        store, ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "1"}]
    )
    partial = await store.get(cm(store), "c", namespace="default")
    assert partial["apiVersion"] == "meta.k8s.io/v1"
    assert partial["kind"] == "PartialObjectMetadata"
    assert set(partial) == {"apiVersion", "kind", "metadata"}
    full = await store.get(cm(store), "c", namespace="default", metadata_only=False)
    assert full["data"] == {"a": "1"} and full["metadata"] == partial["metadata"]
    full["metadata"]["ownerReferences"][0]["uid"] = "mutated"
    full["data"]["a"] = "mutated"
    again = await store.get(cm(store), "c", namespace="default", metadata_only=False)
    assert again["metadata"]["ownerReferences"][0]["uid"] == "1"
    assert again["data"] == {"a": "1"}
    with pytest.raises(NotFound):
        await store.get(cm(store), "missing", namespace="default")


async def test_list_is_sorted_filtered_and_versioned(store: InMemoryStore) -> None:
    for name in ("b", "a", "c"):
        await make_cm(store, name)
    await make_cm(store, "z", "kube-system")
    listed = await store.list(cm(store), namespace="default", metadata_only=False)
    assert [i["metadata"]["name"] for i in listed.items] == ["a", "b", "c"]
    assert listed.resource_version == store.resource_version
    assert all(i["kind"] == "ConfigMap" for i in listed.items)
    everything = await store.list(cm(store))
    assert len(everything.items) == 4
    listed.items[0]["metadata"]["name"] = "mutated"
    assert (await store.list(cm(store), namespace="default")).items[0]["metadata"]["name"] == "a"


# ---------------------------------------------------------------------------
# Update (PUT)


async def test_update_with_optimistic_concurrency(store: InMemoryStore) -> None:
    created = await make_cm(store)
    created["data"] = {"a": "2"}
    updated = await store.update(cm(store), created)
    assert updated["data"] == {"a": "2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert "generation" not in updated["metadata"]  # ConfigMaps have none
    created["data"] = {"a": "3"}  # stale resourceVersion
    with pytest.raises(Conflict):
        await store.update(cm(store), created)
    unconditional = {"metadata": {"name": "c", "namespace": "default"}, "data": {"a": "4"}}
    assert (await store.update(cm(store), unconditional))["data"] == {"a": "4"}


async def test_update_of_missing_object_is_not_found(store: InMemoryStore) -> None:
    with pytest.raises(NotFound):
        await store.update(cm(store), {"metadata": {"name": "ghost", "namespace": "default"}})


async def test_metadata_only_update_keeps_generation(store: InMemoryStore) -> None:
    created = await make_cm(store)
    created["metadata"]["labels"] = {"x": "y"}
    updated = await store.update(cm(store), created)
    assert updated["metadata"].get("generation") == created["metadata"].get("generation")
    assert updated["metadata"]["labels"] == {"x": "y"}


# ---------------------------------------------------------------------------
# Custom kinds registered at run time


async def test_register_custom_resource(store: InMemoryStore) -> None:
    widgets = store.register_resource(
        group="example.com",
        versions=["v1", "v1beta1"],
        resource="widgets",
        kind="Widget",
    )
    assert (widgets.version, widgets.preferred, widgets.namespaced) == ("v1", True, True)
    found = [r for r in (await store.discover()).resources if r.group == "example.com"]
    assert {(r.version, r.preferred) for r in found} == {("v1", True), ("v1beta1", False)}
    old = store.resource_for("example.com/v1beta1", "Widget")
    created = await store.create(
        old,
        {
            "apiVersion": "example.com/v1beta1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
        },
    )
    assert created["apiVersion"] == "example.com/v1beta1"
    via_v1 = await store.get(widgets, "w", namespace="default", metadata_only=False)
    assert via_v1["apiVersion"] == "example.com/v1"  # one storage, shown in the asked version
    assert via_v1["metadata"]["uid"] == created["metadata"]["uid"]
    # custom resources need a resourceVersion on PUT
    with pytest.raises(Invalid):
        await store.update(widgets, {"metadata": {"name": "w", "namespace": "default"}})
    # stop serving v1beta1: objects stay, the version disappears
    store.register_resource(group="example.com", versions="v1", resource="widgets", kind="Widget")
    with pytest.raises(RESTMappingError):
        store.resource_for("example.com/v1beta1", "Widget")
    with pytest.raises(NotFound):
        await store.get(old, "w", namespace="default")
    assert store.exists("example.com/v1", "Widget", "w", "default")


async def test_registration_conflicts_and_bad_arguments(store: InMemoryStore) -> None:
    store.register_resource(group="example.com", versions="v1", resource="widgets", kind="Widget")
    with pytest.raises(InvalidObject):  # same group/resource, other kind
        store.register_resource(
            group="example.com", versions="v1", resource="widgets", kind="Gadget"
        )
    with pytest.raises(InvalidObject):  # same kind under another resource
        store.register_resource(
            group="example.com", versions="v1", resource="others", kind="Widget"
        )
    with pytest.raises(InvalidObject):
        store.register_resource(group="example.com", versions=[], resource="things", kind="Thing")
    with pytest.raises(InvalidObject):
        store.register_resource(
            group="example.com",
            versions="v1",
            resource="things",
            kind="Thing",
            preferred_version="v2",
        )
    with pytest.raises(InvalidObject):
        store.register_resource(
            group="example.com",
            versions="v1",
            resource="things",
            kind="Thing",
            default_gc_policy="Sometimes",
        )


async def test_unregister_resource(store: InMemoryStore) -> None:
    gadgets = store.register_resource(
        group="example.com", versions="v1", resource="gadgets", kind="Gadget", namespaced=False
    )
    await store.create(gadgets, {"metadata": {"name": "g", "finalizers": ["x.io/keep"]}})
    assert store.unregister_resource("example.com", "gadgets") is True
    assert store.unregister_resource("example.com", "gadgets") is False
    assert not any(r.group == "example.com" for r in (await store.discover()).resources)
    with pytest.raises(NotFound):
        await store.get(gadgets, "g")
    with pytest.raises(RESTMappingError):
        store.resource_for("example.com/v1", "Gadget")
    again = store.register_resource(
        group="example.com", versions="v1", resource="gadgets", kind="Gadget", namespaced=False
    )
    assert (await store.list(again)).items == []  # objects went with it


async def test_registered_kind_may_opt_into_strategic_merge(store: InMemoryStore) -> None:
    roles = store.register_resource(
        group="rbac.authorization.k8s.io",
        versions=["v1", "v1beta1"],
        resource="roles",
        kind="Role",
        strategic_merge_patch=True,
    )
    assert roles.version == "v1"
    beta = store.resource_for("rbac.authorization.k8s.io/v1beta1", "Role")
    await store.create(beta, {"metadata": {"name": "r", "namespace": "default"}})
    out = await store.patch(
        beta,
        "r",
        {"metadata": {"labels": {"a": "b"}}},
        patch_type=PatchType.STRATEGIC_MERGE,
        namespace="default",
    )
    assert out["apiVersion"] == "rbac.authorization.k8s.io/v1beta1"


async def test_verbs_are_enforced(store: InMemoryStore) -> None:
    readonly = store.register_resource(
        group="example.com",
        versions="v1",
        resource="readonlies",
        kind="ReadOnly",
        verbs={"get", "list", "watch"},
    )
    with pytest.raises(MethodNotAllowed) as info:
        await store.create(readonly, {"metadata": {"name": "r", "namespace": "default"}})
    assert info.value.status == 405
    assert (await store.list(readonly)).items == []


# ---------------------------------------------------------------------------
# Request log and fault injection


async def test_request_log_counts_calls(store: InMemoryStore) -> None:
    await make_cm(store)
    await store.get(cm(store), "c", namespace="default")
    await store.list(cm(store))
    await store.patch(
        cm(store), "c", {"data": {"a": "2"}}, patch_type=PatchType.MERGE, namespace="default"
    )
    with pytest.raises(NotFound):
        await store.delete(cm(store), "ghost", namespace="default")
    await store.delete(
        cm(store), "c", namespace="default", propagation_policy=PropagationPolicy.BACKGROUND
    )
    await store.discover()
    assert store.request_count() == 7
    assert store.request_count("delete") == 2
    assert store.request_count("delete", cm(store)) == 2
    assert store.request_count("delete", "configmaps") == 2
    assert store.request_count("get", "deployments.apps") == 0
    assert [r.verb for r in store.requests] == [
        "create",
        "get",
        "list",
        "patch",
        "delete",
        "delete",
        "discover",
    ]
    assert store.requests[1].name == "c" and store.requests[1].namespace == "default"
    store.clear_requests()
    assert store.request_count() == 0 and store.requests == ()


async def test_sync_helpers(store: InMemoryStore) -> None:
    await make_cm(store)
    assert store.exists("v1", "ConfigMap", "c", "default")
    assert not store.exists("v1", "ConfigMap", "c", "kube-system")
    obj = store.get_object("v1", "ConfigMap", "c", "default")
    assert obj is not None and obj["data"] == {"a": "1"}
    obj["data"]["a"] = "mutated"
    assert store.get_object("v1", "ConfigMap", "c", "default")["data"] == {"a": "1"}  # type: ignore[index]
    snap = store.snapshot()
    assert [(o["kind"], o["metadata"]["name"]) for o in snap if o["kind"] == "ConfigMap"] == [
        ("ConfigMap", "c")
    ]
    assert store.object_count() == 5  # 4 namespaces + 1 configmap
    assert store.object_count(cm(store)) == 1
    with pytest.raises(RESTMappingError):
        store.get_object("v9", "ConfigMap", "c")


async def test_clock_drives_creation_timestamps(store: InMemoryStore, clock) -> None:
    clock.advance(3600)
    out = await make_cm(store)
    assert out["metadata"]["creationTimestamp"] == "2026-01-02T04:04:05Z"


async def test_scale_smoke(clock) -> None:
    store = InMemoryStore(clock=clock, event_window=1000)
    pods = store.resource_for("v1", "Pod")
    for i in range(5000):
        await store.create(pods, {"metadata": {"name": f"p{i:05d}", "namespace": "default"}})
    listed = await store.list(pods)
    assert len(listed.items) == 5000
    assert listed.items[0]["metadata"]["name"] == "p00000"
    assert listed.items[-1]["metadata"]["name"] == "p04999"


async def test_list_shared_is_the_list_without_copies(store: InMemoryStore) -> None:
    """The facade's list path: the same items as ``list`` (full objects), and an
    item read before a write keeps what it had (writes store new objects)."""
    for name in ("b", "a", "c"):
        await make_cm(store, name, labels={"k": name})
    await make_cm(store, "z", ns="kube-system")
    shared = await store.list_shared(cm(store), namespace="default")
    copied = await store.list(cm(store), namespace="default", metadata_only=False)
    assert shared.items == copied.items
    assert [list(o)[:2] for o in shared.items] == [["apiVersion", "kind"]] * 3
    assert shared.resource_version == copied.resource_version
    everywhere = await store.list_shared(cm(store))
    assert [o["metadata"]["name"] for o in everywhere.items] == ["a", "b", "c", "z"]
    before = json.dumps(shared.items[0], sort_keys=True)
    await store.patch(
        cm(store),
        "a",
        {"metadata": {"labels": {"k": "changed"}}, "data": {"a": "2"}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    await store.delete(cm(store), "b", namespace="default")
    assert json.dumps(shared.items[0], sort_keys=True) == before
    after = await store.list_shared(cm(store), namespace="default")
    assert [o["metadata"]["labels"]["k"] for o in after.items] == ["changed", "c"]


async def test_get_shared_is_get_without_the_copy(store: InMemoryStore) -> None:
    """The facade's GET path: the object ``get`` returns (key order too), and one read
    before a write keeps what it had."""
    await make_cm(store, "a", labels={"k": "a"})
    shared = await store.get_shared(cm(store), "a", namespace="default")
    copied = await store.get(cm(store), "a", namespace="default", metadata_only=False)
    assert json.dumps(shared) == json.dumps(copied)
    before = json.dumps(shared)
    await store.patch(
        cm(store),
        "a",
        {"metadata": {"labels": {"k": "changed"}}},
        patch_type=PatchType.MERGE,
        namespace="default",
    )
    assert json.dumps(shared) == before
    with pytest.raises(NotFound):
        await store.get_shared(cm(store), "missing", namespace="default")


async def test_delete_and_report_shared_answers_as_the_copy(store: InMemoryStore) -> None:
    await make_cm(store, "a")
    await make_cm(store, "b")
    copied, removed = await store.delete_and_report(cm(store), "a", namespace="default")
    shared, removed_too = await store.delete_and_report(
        cm(store), "b", namespace="default", shared=True
    )
    assert removed and removed_too
    assert list(shared) == list(copied)
    assert shared["metadata"]["name"] == "b"
    assert int(shared["metadata"]["resourceVersion"]) > int(copied["metadata"]["resourceVersion"])


@pytest.mark.parametrize("metadata_only", [True, False])
async def test_watch_batches_are_the_watch_events(
    store: InMemoryStore, metadata_only: bool
) -> None:
    """``watch_batches`` hands over what ``watch`` yields, in order, in non-empty lists
    (the initial ADDED events of a watch from "0" too)."""
    await make_cm(store, "a")
    await make_cm(store, "z", ns="kube-system")
    watches = [
        store.watch(
            cm(store), resource_version="0", namespace="default", metadata_only=metadata_only
        ),
        store.watch_batches(
            cm(store), resource_version="0", namespace="default", metadata_only=metadata_only
        ),
    ]
    await make_cm(store, "b")
    await make_cm(store, "y", ns="kube-system")
    await store.delete(cm(store), "a", namespace="default")
    one_by_one = []
    async for event in watches[0]:
        one_by_one.append((event.type, event.object))
        if len(one_by_one) == 3:
            break
    batched = []
    async for batch in watches[1]:
        assert batch
        batched.extend((event.type, event.object) for event in batch)
        if len(batched) >= 3:
            break
    for watch in watches:
        await watch.aclose()
    assert [t for t, _ in one_by_one] == ["ADDED", "ADDED", "DELETED"]
    assert json.dumps(batched) == json.dumps(one_by_one)
