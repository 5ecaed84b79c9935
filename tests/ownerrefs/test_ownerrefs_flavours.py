"""Each client's objects go through ownergc.ownerrefs and come back unchanged but for the refs."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc import errors
from ownergc.ownerrefs import get_controller_of, owner_references, set_controller_reference
from tests.cli.cli_helpers import Served, start_serve, stop_serve
from tests.ownerrefs.test_ownerrefs_rules import service

EXPECTED = {
    "apiVersion": "v1",
    "kind": "Service",
    "name": "kubernetes",
    "blockOwnerDeletion": True,
    "controller": True,
}


def expected(owner: dict[str, Any]) -> dict[str, Any]:
    return {**EXPECTED, "uid": owner["metadata"]["uid"]}


@pytest.mark.parametrize("package", ["kubernetes", "kubernetes_asyncio"])
def test_openapi_models(package: str) -> None:
    client = pytest.importorskip(f"{package}.client")
    owner_dict = service()
    owner = client.V1Service(
        metadata=client.V1ObjectMeta(
            name="kubernetes", namespace="default", uid=owner_dict["metadata"]["uid"]
        )
    )  # kind/apiVersion unset, as list items come: inferred from the class
    cm = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="c", namespace="default", labels={"a": "b"}),
        data={"k": "v"},
    )
    before = copy.deepcopy(cm)
    out = set_controller_reference(owner, cm)
    assert out is cm and type(out) is client.V1ConfigMap
    (ref,) = cm.metadata.owner_references
    assert type(ref) is client.V1OwnerReference
    assert ref.to_dict() == {
        "api_version": "v1",
        "kind": "Service",
        "name": "kubernetes",
        "uid": owner_dict["metadata"]["uid"],
        "block_owner_deletion": True,
        "controller": True,
    }
    cm.metadata.owner_references = None
    assert cm == before
    wrong = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="c", namespace="shop"))
    with pytest.raises(errors.CrossNamespaceOwner):
        set_controller_reference(owner, wrong)


def test_lightkube_resources() -> None:
    pytest.importorskip("lightkube")
    from lightkube.models.apps_v1 import StatefulSetSpec
    from lightkube.models.core_v1 import PodTemplateSpec
    from lightkube.models.meta_v1 import LabelSelector, ObjectMeta, OwnerReference
    from lightkube.resources.apps_v1 import StatefulSet
    from lightkube.resources.core_v1 import ConfigMap, Service

    uid = service()["metadata"]["uid"]
    owner = Service(metadata=ObjectMeta(name="kubernetes", namespace="default", uid=uid))
    cm = ConfigMap(metadata=ObjectMeta(name="c", namespace="default"), data={"k": "v"})
    before = copy.deepcopy(cm)
    assert set_controller_reference(owner, cm) is cm
    (ref,) = cm.metadata.ownerReferences
    assert ref == OwnerReference(
        apiVersion="v1",
        kind="Service",
        name="kubernetes",
        uid=uid,
        blockOwnerDeletion=True,
        controller=True,
    )
    assert owner_references(cm) == [expected(service())]
    cm.metadata.ownerReferences = None
    assert cm == before
    spec = StatefulSetSpec(selector=LabelSelector(), serviceName="db", template=PodTemplateSpec())
    sts = StatefulSet(metadata=ObjectMeta(name="db", namespace="b"), spec=spec)
    with pytest.raises(errors.CrossNamespaceOwner):
        set_controller_reference(owner, sts)


def test_kopf_body_and_patch() -> None:
    kopf = pytest.importorskip("kopf")
    raw_owner = service()
    owner = kopf.Body(raw_owner)
    # A kopf Body as the owner (the usual handler case), a dict as the child.
    meta = {"name": "c", "namespace": "default"}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    set_controller_reference(owner, cm)
    assert cm["metadata"]["ownerReferences"] == [expected(raw_owner)]
    # A Body as the dependent is read-only: a new Body comes back, the original is untouched.
    dep_raw = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "d", "namespace": "default"},
        "data": {"x": "1"},
    }
    dep = kopf.Body(copy.deepcopy(dep_raw))
    new = set_controller_reference(owner, dep)
    assert type(new) is kopf.Body and new is not dep
    assert "ownerReferences" not in dep["metadata"]
    assert new["metadata"]["ownerReferences"] == [expected(raw_owner)]
    assert {k: v for k, v in new.items() if k != "metadata"} == {
        k: v for k, v in dep_raw.items() if k != "metadata"
    }
    # A Patch for that body carries the whole new list; the body gives namespace and refs.
    patch = kopf.Patch()
    out = set_controller_reference(owner, patch, body=dep)
    assert out is patch and type(patch) is kopf.Patch
    assert patch == {"metadata": {"ownerReferences": [expected(raw_owner)]}}
    assert get_controller_of(new) == expected(raw_owner)
    other = kopf.Body({**dep_raw, "metadata": {"name": "d", "namespace": "other"}})
    with pytest.raises(errors.CrossNamespaceOwner):
        set_controller_reference(owner, kopf.Patch(), body=other)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    srv = start_serve(tmp_path_factory.mktemp("serve"))
    try:
        yield srv
    finally:
        code, err = stop_serve(srv)
        assert code == 0, err


def test_kr8s_objects(served: Served) -> None:
    """kr8s needs a reachable apiserver to build objects: the test runs in a subprocess."""
    pytest.importorskip("kr8s")
    code = f"""
import copy, json
import kr8s
from kr8s.objects import ConfigMap, Service
from ownergc.ownerrefs import set_controller_reference
api = kr8s.api(kubeconfig={str(served.kubeconfig)!r})
meta = {{"name": "kubernetes", "namespace": "default", "uid": "u1"}}
owner = Service({{"apiVersion": "v1", "kind": "Service", "metadata": meta}}, api=api)
meta = {{"name": "c", "namespace": "default"}}
cm = ConfigMap({{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {{}}}}, api=api)
before = copy.deepcopy(cm.raw)
out = set_controller_reference(owner, cm)
refs = cm.raw["metadata"].pop("ownerReferences")
print(json.dumps({{"same": out is cm, "type": type(out).__name__, "refs": refs,
                  "unchanged": cm.raw == before}}))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr
    import json

    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {
        "same": True,
        "type": "ConfigMap",
        "refs": [{**EXPECTED, "uid": "u1"}],
        "unchanged": True,
    }


def test_importing_ownerrefs_imports_no_client() -> None:
    code = (
        "import sys, ownergc.ownerrefs as o; "
        "o.set_controller_reference({'apiVersion': 'v1', 'kind': 'Namespace', "
        "'metadata': {'name': 'n', 'uid': 'u'}}, {'apiVersion': 'v1', 'kind': 'ConfigMap', "
        "'metadata': {'name': 'c', 'namespace': 'n'}}); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'kubernetes', 'kubernetes_asyncio', 'lightkube', 'kr8s', 'kopf'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
