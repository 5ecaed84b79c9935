"""Services get cluster IPs and node ports as the Service registry allocates them
(ownergc_backends/memory/_service_ips.py)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ownergc.errors import Invalid, ServerError
from ownergc.protocols import APIResource, PatchType
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._service_ips import NODE_PORTS, _held, allocate

pytestmark = pytest.mark.anyio


def services(store: InMemoryStore) -> APIResource:
    return store.resource_for("v1", "Service")


async def create(store: InMemoryStore, name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    body = {"metadata": {"name": name}, "spec": spec}
    return await store.create(services(store), body, namespace="default")


def cause(refused: pytest.ExceptionInfo[Invalid]) -> tuple[str, str]:
    (only,) = refused.value.details["causes"]
    return only["field"], only["message"]


async def test_cluster_ips_are_allocated_once_each_and_freed_on_delete() -> None:
    store = InMemoryStore()
    first = await create(store, "a")
    second = await create(store, "b")
    assert first["spec"]["clusterIP"] == "10.96.0.2"
    assert first["spec"]["clusterIPs"] == ["10.96.0.2"]
    assert second["spec"]["clusterIP"] == "10.96.0.3"
    await store.delete(services(store), "a", namespace="default")
    third = await create(store, "c")
    assert third["spec"]["clusterIP"] == "10.96.0.2"


async def test_a_dry_run_shows_the_address_and_reserves_nothing() -> None:
    store = InMemoryStore()
    body = {"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}]}}
    dry = await store.create(services(store), body, namespace="default", dry_run=True)
    real = await create(store, "b")
    assert dry["spec"]["clusterIP"] == real["spec"]["clusterIP"] == "10.96.0.2"


async def test_a_requested_cluster_ip_must_be_free_and_in_range() -> None:
    store = InMemoryStore()
    chosen = await create(store, "dns", clusterIP="10.96.0.10")
    assert chosen["spec"]["clusterIPs"] == ["10.96.0.10"]
    with pytest.raises(Invalid) as taken:
        await create(store, "again", clusterIP="10.96.0.10")
    assert cause(taken) == (
        "spec.clusterIPs",
        'Invalid value: ["10.96.0.10"]: failed to allocate IP 10.96.0.10: provided IP is '
        "already allocated",
    )
    with pytest.raises(Invalid) as outside:
        await create(store, "outside", clusterIP="192.168.1.1")
    assert "is not in the valid range. The range of valid IPs is 10.96.0.0/12" in cause(outside)[1]


async def test_headless_and_external_name_services_get_no_address() -> None:
    store = InMemoryStore()
    headless = await create(store, "h", clusterIP="None", selector={"app": "a"})
    assert headless["spec"]["clusterIPs"] == ["None"]
    assert headless["spec"]["ipFamilyPolicy"] == "SingleStack"
    open_headless = await create(store, "o", clusterIP="None")
    assert open_headless["spec"]["ipFamilyPolicy"] == "RequireDualStack"
    assert open_headless["spec"]["ipFamilies"] == ["IPv4"]
    external = await create(store, "e", type="ExternalName", externalName="example.com", ports=[])
    assert "clusterIP" not in external["spec"] and "ipFamilies" not in external["spec"]
    assert (await create(store, "next"))["spec"]["clusterIP"] == "10.96.0.2"


async def test_node_ports_for_node_port_and_load_balancer_services() -> None:
    store = InMemoryStore()
    node_port = await create(
        store, "np", type="NodePort", ports=[{"port": 80, "name": "h"}, {"port": 443, "name": "s"}]
    )
    assert [p["nodePort"] for p in node_port["spec"]["ports"]] == [30000, 30001]
    balanced = await create(store, "lb", type="LoadBalancer", externalTrafficPolicy="Local")
    assert balanced["spec"]["ports"][0]["nodePort"] == 30002
    assert balanced["spec"]["healthCheckNodePort"] == 30003
    without = await create(store, "lb2", type="LoadBalancer", allocateLoadBalancerNodePorts=False)
    assert "nodePort" not in without["spec"]["ports"][0]
    with pytest.raises(Invalid) as taken:
        await create(store, "clash", type="NodePort", ports=[{"port": 80, "nodePort": 30001}])
    assert cause(taken) == (
        "spec.ports[0].nodePort",
        "Invalid value: 30001: provided port is already allocated",
    )
    with pytest.raises(Invalid) as outside:
        await create(store, "low", type="NodePort", ports=[{"port": 80, "nodePort": 80}])
    assert cause(outside)[1].endswith("The range of valid ports is 30000-32767")
    with pytest.raises(Invalid) as forbidden:
        await create(store, "cip", ports=[{"port": 80, "nodePort": 30100}])
    assert cause(forbidden) == (
        "spec.ports[0].nodePort",
        "Forbidden: may not be used when `type` is 'ClusterIP'",
    )


async def test_an_update_keeps_what_was_allocated_and_refuses_a_new_cluster_ip() -> None:
    store = InMemoryStore()
    created = await create(store, "np", type="NodePort")
    ip, port = created["spec"]["clusterIP"], created["spec"]["ports"][0]["nodePort"]
    # a PUT of the manifest as written (kubectl replace): the allocation stays
    again = {
        "metadata": {"name": "np", "resourceVersion": created["metadata"]["resourceVersion"]},
        "spec": {"type": "NodePort", "ports": [{"port": 80}], "selector": {"app": "b"}},
    }
    updated = await store.update(services(store), again, namespace="default")
    assert updated["spec"]["clusterIP"] == ip
    assert updated["spec"]["ports"][0]["nodePort"] == port
    with pytest.raises(Invalid) as changed:
        await store.patch(
            services(store),
            "np",
            {"spec": {"clusterIP": "10.96.0.99", "clusterIPs": ["10.96.0.99"]}},
            patch_type=PatchType.MERGE,
            namespace="default",
        )
    assert cause(changed) == (
        "spec.clusterIPs[0]",
        'Invalid value: ["10.96.0.99"]: may not change once set',
    )
    # a ClusterIP Service made a NodePort one gets its port then
    plain = await create(store, "plain")
    widened = await store.patch(
        services(store), "plain", {"spec": {"type": "NodePort"}}, patch_type=PatchType.MERGE,
        namespace="default",
    )  # fmt: skip
    assert widened["spec"]["clusterIP"] == plain["spec"]["clusterIP"]
    assert widened["spec"]["ports"][0]["nodePort"] == 30001


async def replace(store: InMemoryStore, name: str, **spec: Any) -> dict[str, Any]:
    """A PUT of ``spec`` over the stored Service (kubectl replace of a manifest)."""
    stored = await store.get(services(store), name, namespace="default")
    body = {
        "metadata": {"name": name, "resourceVersion": stored["metadata"]["resourceVersion"]},
        "spec": spec,
    }
    return await store.update(services(store), body, namespace="default")


async def test_an_update_keeps_node_ports_by_port_name() -> None:
    # As kube-apiserver 1.23+ patches allocated values: a port left without a node port
    # keeps the one the stored port of the same name had, whatever its number now.
    store = InMemoryStore()
    await create(store, "other", type="NodePort")  # holds 30000
    created = await create(
        store, "np", type="NodePort", ports=[{"port": 80, "name": "h"}, {"port": 443, "name": "s"}]
    )
    h, s = (p["nodePort"] for p in created["spec"]["ports"])
    renumbered = await replace(
        store,
        "np",
        type="NodePort",
        ports=[{"port": 8080, "name": "h"}, {"port": 443, "name": "s"}],
    )
    assert [p["nodePort"] for p in renumbered["spec"]["ports"]] == [h, s]
    # a renamed port is a new port: a new node port, not one the Service still holds
    renamed = await replace(
        store,
        "np",
        type="NodePort",
        ports=[{"port": 8080, "name": "web"}, {"port": 443, "name": "s"}],
    )
    web, kept = (p["nodePort"] for p in renamed["spec"]["ports"])
    assert kept == s
    assert web not in (30000, h, s)
    # a node port the update gives to another port is not also kept for its old one
    moved = await replace(
        store,
        "np",
        type="NodePort",
        ports=[{"port": 8080, "name": "web"}, {"port": 443, "name": "s", "nodePort": web}],
    )
    assert moved["spec"]["ports"][1]["nodePort"] == web
    assert moved["spec"]["ports"][0]["nodePort"] not in (30000, web, s)


async def test_a_load_balancer_no_longer_allocating_keeps_its_node_ports() -> None:
    store = InMemoryStore()
    created = await create(store, "lb", type="LoadBalancer")
    port = created["spec"]["ports"][0]["nodePort"]
    kept = await replace(
        store, "lb", type="LoadBalancer", allocateLoadBalancerNodePorts=False, ports=[{"port": 80}]
    )
    assert kept["spec"]["ports"][0]["nodePort"] == port
    fresh = await create(store, "lb2", type="LoadBalancer", allocateLoadBalancerNodePorts=False)
    assert "nodePort" not in fresh["spec"]["ports"][0]


async def test_ports_of_one_number_share_their_node_port() -> None:
    store = InMemoryStore()
    dns = await create(
        store,
        "dns",
        type="NodePort",
        ports=[
            {"port": 53, "protocol": "UDP", "name": "u"},
            {"port": 53, "protocol": "TCP", "name": "t"},
        ],
    )
    assert [p["nodePort"] for p in dns["spec"]["ports"]] == [30000, 30000]


def test_a_full_range_is_the_server_s_error() -> None:
    with pytest.raises(ServerError) as full:
        allocate({"type": "NodePort", "ports": [{"port": 80}]}, set(), set(NODE_PORTS))
    assert full.value.status == 500
    assert str(full.value.message) == (
        "Internal error occurred: failed to allocate a nodePort: range is full"
    )


def held_by_stored_services(store: InMemoryStore) -> tuple[dict[str, int], dict[int, int]]:
    """What the stored Services hold, counted from the Services themselves."""
    ips: dict[str, int] = {}
    ports: dict[int, int] = {}
    for service in store._storage.buckets[("", "services")].iter_sorted(None):
        held_ips, held_ports = _held(service)
        for ip in held_ips:
            ips[ip] = ips.get(ip, 0) + 1
        for port in held_ports:
            ports[port] = ports.get(port, 0) + 1
    return ips, ports


async def test_the_allocation_index_follows_every_write() -> None:
    # The store keeps what Services hold as they are written (no walk of every
    # Service per write): after creates, updates that change type and ports,
    # patches, deletes and a namespace's deletion, it agrees with a recount.
    rng = random.Random(7)
    store = InMemoryStore()
    namespaces = store.resource_for("v1", "Namespace")
    for ns in ("a", "b"):
        await store.create(namespaces, {"metadata": {"name": ns}})
    names: list[tuple[str, str]] = []
    for step in range(300):
        op = rng.random()
        if op < 0.45 or not names:
            ns, name = rng.choice(("a", "b", "default")), f"s{step}"
            kind = rng.choice(("ClusterIP", "NodePort", "LoadBalancer", "ExternalName"))
            spec: dict[str, Any] = {"type": kind, "ports": [{"port": 80, "name": "h"}]}
            if kind == "ExternalName":
                spec = {"type": kind, "externalName": "example.com"}
            elif kind == "LoadBalancer":
                spec["externalTrafficPolicy"] = rng.choice(("Local", "Cluster"))
            body = {"metadata": {"name": name}, "spec": spec}
            await store.create(services(store), body, namespace=ns)
            names.append((ns, name))
        elif op < 0.75:
            ns, name = rng.choice(names)
            kind = rng.choice(("ClusterIP", "NodePort"))
            ports = [{"port": rng.choice((80, 81)), "name": rng.choice(("h", "g"))}]
            stored = await store.get(services(store), name, namespace=ns, metadata_only=False)
            if stored["spec"].get("type") == "ExternalName":
                continue
            body = {
                "metadata": {
                    "name": name,
                    "resourceVersion": stored["metadata"]["resourceVersion"],
                },
                "spec": {"type": kind, "ports": ports, "clusterIP": stored["spec"]["clusterIP"]},
            }
            await store.update(services(store), body, namespace=ns)
        else:
            ns, name = names.pop(rng.randrange(len(names)))
            await store.delete(services(store), name, namespace=ns)
        allocations = store._storage.service_allocations
        assert (allocations._ips, allocations._ports) == held_by_stored_services(store)
    await store.delete(namespaces, "a")
    assert (allocations._ips, allocations._ports) == held_by_stored_services(store)


async def test_a_freed_address_below_the_others_is_given_out_first() -> None:
    store = InMemoryStore()
    for name in "abcd":
        await create(store, name)
    await store.delete(services(store), "b", namespace="default")
    await store.delete(services(store), "a", namespace="default")
    assert (await create(store, "e"))["spec"]["clusterIP"] == "10.96.0.2"
    assert (await create(store, "f"))["spec"]["clusterIP"] == "10.96.0.3"
    assert (await create(store, "g"))["spec"]["clusterIP"] == "10.96.0.6"
    # an address asked for by a Service is skipped by the next ones
    await create(store, "h", clusterIP="10.96.0.7")
    assert (await create(store, "i"))["spec"]["clusterIP"] == "10.96.0.8"
