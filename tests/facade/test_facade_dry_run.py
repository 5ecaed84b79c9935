"""``dryRun=All`` over HTTP, replayed from what a real kube-apiserver 1.24 answered.

tests/data/real-apiserver-1.24/ssa-dryrun-exchanges.json (a copy of
../shared/fixtures) holds a dry-run create, a read showing nothing was stored,
an unknown ``dryRun`` value, a dry-run DELETE and a read showing the object
is still there. The same requests go to the facade on the same objects; the
status, the reason and the body's shape must match (uids, resourceVersions,
timestamps aside, and ``managedFields``, which serve does not keep yet). Other
verbs and subresources are checked against the rule the recorded ones show:
the answer is the would-be object, and nothing changes on the server.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.from_thread
import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._negotiation import _Response
from ownergc_backends.memory._openapi import builtin_v2
from ownergc_backends.memory._openapi_proto import encode_openapi_v2
from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.facade_helpers import Reply, request

FIXTURE = Path(__file__).resolve().parents[1] / "data/real-apiserver-1.24/ssa-dryrun-exchanges.json"
EXCHANGES: list[dict[str, Any]] = json.loads(FIXTURE.read_text())
NS = "ssa-rec2"  # the recorded namespace
CM = f"/api/v1/namespaces/{NS}/configmaps"
#: Values that differ run to run, and managedFields (left aside here). generation
#: is compared: the recorded ConfigMaps have none and neither do the store's.
VOLATILE = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp", "time")
ASIDE = ("managedFields",)


def shape(value: Any) -> Any:
    """``value`` with run-dependent values replaced by their presence.

    An empty ``group`` is dropped: the real server omits it (``omitempty``), and so
    do serve's error Statuses; bodies other than Statuses may still carry one.
    """
    if isinstance(value, dict):
        return {
            k: ("<set>" if k in VOLATILE else shape(v))
            for k, v in value.items()
            if k not in ASIDE and not (k == "group" and v == "")
        }
    if isinstance(value, list):
        return [shape(v) for v in value]
    return value


def recorded_state(store: InMemoryStore) -> None:
    """The namespace and ConfigMap ``a`` as the real server held them before exchange 13."""
    store.load_objects(
        [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "a", "namespace": NS},
                "data": EXCHANGES[17]["response"]["body"]["data"],
            },
        ]
    )


def send(server: KubeAPIServer, exchange: dict[str, Any]) -> Reply:
    req = exchange["request"]
    body = req["body"]
    raw = body.encode() if isinstance(body, str) else None
    return request(
        server,
        req["method"],
        req["path"],
        body if not isinstance(body, str) else None,
        raw=raw,
        headers={"Content-Type": req["content_type"]},
    )


@contextmanager
def nothing_changes(server: KubeAPIServer, store: InMemoryStore) -> Iterator[None]:
    """The block leaves every object and the resourceVersion as they were."""
    before, rv = store.snapshot(), store.resource_version
    yield
    assert store.snapshot() == before
    assert store.resource_version == rv


def test_recorded_dry_run_exchanges_replay(server: KubeAPIServer, store: InMemoryStore) -> None:
    recorded_state(store)
    replayed = [e for e in EXCHANGES[13:18]]
    assert [e["request"]["method"] for e in replayed] == ["POST", "GET", "POST", "DELETE", "GET"]
    with nothing_changes(server, store):
        for exchange in replayed:
            want = exchange["response"]
            got = send(server, exchange)
            assert got.status == want["status"], (exchange["note"], got.text)
            assert shape(got.json()) == shape(want["body"]), exchange["note"]


def test_dry_run_create_answers_the_would_be_object(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    recorded_state(store)
    with nothing_changes(server, store):
        got = request(
            server,
            "POST",
            f"{CM}?dryRun=All",
            {"metadata": {"generateName": "gen-"}, "data": {"x": "1"}},
        )
    assert got.status == 201, got.text
    meta = got.json()["metadata"]
    assert meta["name"].startswith("gen-") and "resourceVersion" not in meta
    assert {"uid", "creationTimestamp"} <= set(meta)


@pytest.mark.parametrize(
    ("method", "path", "body", "kind"),
    [
        ("POST", CM, {"metadata": {"name": "x"}}, "CreateOptions"),
        ("PUT", f"{CM}/a", {"metadata": {"name": "a"}}, "UpdateOptions"),
        ("PATCH", f"{CM}/a", {"data": {"k": "v"}}, "PatchOptions"),
        ("DELETE", f"{CM}/a", None, "DeleteOptions"),
        ("DELETE", CM, None, "DeleteOptions"),
    ],
)
def test_unknown_values_are_refused_per_verb(
    server: KubeAPIServer, store: InMemoryStore, method: str, path: str, body: Any, kind: str
) -> None:
    recorded_state(store)
    real = EXCHANGES[15]["response"]
    headers = {"Content-Type": "application/merge-patch+json"} if method == "PATCH" else None
    with nothing_changes(server, store):
        got = request(server, method, f"{path}?dryRun=Yes", body, headers=headers)
    assert got.status == real["status"] == 422
    want = json.loads(json.dumps(real["body"]).replace("CreateOptions", kind))
    assert got.json() == want


def test_several_values_are_refused_whole(server: KubeAPIServer, store: InMemoryStore) -> None:
    recorded_state(store)
    got = request(server, "POST", f"{CM}?dryRun=All&dryRun=Maybe", {"metadata": {"name": "x"}})
    assert got.status == 422
    assert got.json()["details"]["causes"][0]["message"] == (
        'Unsupported value: []string{"All", "Maybe"}: supported values: "All"'
    )


def test_dry_run_update_and_patches_keep_the_stored_object(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    recorded_state(store)
    live = request(server, "GET", f"{CM}/a").json()
    changed = {**live, "data": {"only": "this"}}
    with nothing_changes(server, store):
        put = request(server, "PUT", f"{CM}/a?dryRun=All", changed)
        patches = [
            request(
                server,
                "PATCH",
                f"{CM}/a?dryRun=All",
                patch,
                headers={"Content-Type": content_type},
            )
            for content_type, patch in (
                (
                    "application/merge-patch+json",
                    {"data": {"only": "this", "k2": None, "w": None, "z": None}},
                ),
                (
                    "application/strategic-merge-patch+json",
                    {"data": {"only": "this", "k2": None, "w": None, "z": None}},
                ),
                (
                    "application/json-patch+json",
                    [{"op": "replace", "path": "/data", "value": {"only": "this"}}],
                ),
            )
        ]
    for got in [put, *patches]:
        assert got.status == 200, got.text
        assert got.json()["data"] == {"only": "this"}
        assert got.json()["metadata"]["resourceVersion"] == live["metadata"]["resourceVersion"]
    stale = {**changed, "metadata": {**live["metadata"], "resourceVersion": "1"}}
    conflict = request(server, "PUT", f"{CM}/a?dryRun=All", stale)
    assert (conflict.status, conflict.json()["reason"]) == (409, "Conflict")


def test_dry_run_delete_with_delete_options_and_finalizers(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    """kubectl sends ``dryRun`` in the DeleteOptions body; a held object stays unmarked."""
    recorded_state(store)
    with nothing_changes(server, store):
        got = request(
            server,
            "DELETE",
            f"{CM}/a",
            {
                "kind": "DeleteOptions",
                "apiVersion": "v1",
                "dryRun": ["All"],
                "propagationPolicy": "Orphan",
            },
        )
        assert got.status == 200, got.text
        assert got.json()["metadata"]["finalizers"] == ["orphan"]
        assert "deletionTimestamp" in got.json()["metadata"]
        many = request(server, "DELETE", f"{CM}?dryRun=All")
        assert many.status == 200
        assert [i["metadata"]["name"] for i in many.json()["items"]] == ["a"]
    missing = request(server, "DELETE", f"{CM}/nope?dryRun=All")
    assert (missing.status, missing.json()["reason"]) == (404, "NotFound")


def test_a_delete_body_without_dry_run_is_a_real_delete(
    server: KubeAPIServer, store: InMemoryStore
) -> None:
    """With a DeleteOptions body the query is not read (kube-apiserver never merges them)."""
    recorded_state(store)
    got = request(server, "DELETE", f"{CM}/a?dryRun=All", {"kind": "DeleteOptions"})
    assert got.status == 200
    assert not store.exists("v1", "ConfigMap", "a", NS)


CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {
                    "status": {},
                    "scale": {
                        "specReplicasPath": ".spec.replicas",
                        "statusReplicasPath": ".status.replicas",
                    },
                },
            }
        ],
    },
}
W = "/apis/example.com/v1/namespaces/default/widgets"


def test_subresources_honour_dry_run(server: KubeAPIServer, store: InMemoryStore) -> None:
    assert (
        request(
            server, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD
        ).status
        == 201
    )
    widget = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"replicas": 1},
    }
    assert request(server, "POST", W, widget).status == 201
    merge = {"Content-Type": "application/merge-patch+json"}
    with nothing_changes(server, store):
        status = request(
            server, "PATCH", f"{W}/w/status?dryRun=All", {"status": {"replicas": 3}}, headers=merge
        )
        assert status.status == 200 and status.json()["status"] == {"replicas": 3}
        current = request(server, "GET", f"{W}/w/status").json()
        put = request(
            server, "PUT", f"{W}/w/status?dryRun=All", {**current, "status": {"replicas": 4}}
        )
        assert put.status == 200 and put.json()["status"] == {"replicas": 4}
        scale = request(
            server, "PATCH", f"{W}/w/scale?dryRun=All", {"spec": {"replicas": 5}}, headers=merge
        )
        assert scale.status == 200, scale.text
        assert scale.json()["spec"] == {"replicas": 5}
        bad = request(
            server, "PATCH", f"{W}/w/scale?dryRun=Yes", {"spec": {"replicas": 5}}, headers=merge
        )
        assert (bad.status, bad.json()["details"]["kind"]) == (422, "PatchOptions")
    assert request(server, "GET", f"{W}/w").json()["spec"] == {"replicas": 1}


def test_write_hooks_do_not_see_dry_runs(server: KubeAPIServer, store: InMemoryStore) -> None:
    recorded_state(store)
    seen: list[str] = []

    async def hook(verb: str, resource: Any, obj: Any) -> None:
        seen.append(verb)

    server.write_hooks.append(hook)
    request(server, "POST", f"{CM}?dryRun=All", {"metadata": {"name": "x"}})
    request(server, "DELETE", f"{CM}/a?dryRun=All")
    assert seen == []
    request(server, "POST", CM, {"metadata": {"name": "x"}})
    assert seen == ["create"]


# -- kubectl 1.20 over the facade, with the recorded OpenAPI document
#
# kubectl 1.20 sends a dry run only for kinds whose PATCH operation in
# /openapi/v2 (protobuf, gnostic openapi_v2.Document) lists a ``dryRun`` query
# parameter. Until serve publishes it (issue 17 item 4), this test serves the
# recorded document in that form, so 1.20's own dry-run requests (the
# DeleteOptions body, the dry-run patch of ``diff``) are checked now.


class _RecordedOpenAPI:
    def serve(self, request: Any, path: str) -> Any:
        if path != "/openapi/v2":
            return None
        document = encode_openapi_v2(builtin_v2())
        return _Response(200, document, [("Content-Type", "application/octet-stream")])


def test_kubectl_120_dry_runs_over_the_facade(tmp_path: Path) -> None:
    binary = os.environ.get("OWNERGC_KUBECTL")
    if not binary:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("kubectl 1.20 is required in CI (OWNERGC_KUBECTL)")
        pytest.skip("no kubectl 1.20 (OWNERGC_KUBECTL)")
    store = InMemoryStore()
    server = KubeAPIServer(store, openapi=_RecordedOpenAPI())
    with anyio.from_thread.start_blocking_portal() as portal:
        future, _ = portal.start_task(server.serve)
        try:
            config = tmp_path / "kubeconfig"
            server.write_kubeconfig(config)

            def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
                cmd = [binary, "--kubeconfig", str(config), "--cache-dir", str(tmp_path), *args]
                env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
                return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)

            manifest = tmp_path / "web.yaml"
            manifest.write_text(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: default}\n"
                "data: {color: blue}\n"
            )
            assert kubectl("apply", "-f", str(manifest)).returncode == 0
            manifest.write_text(manifest.read_text().replace("blue", "red"))
            with nothing_changes(server, store):
                created = kubectl(
                    "create",
                    "configmap",
                    "x",
                    "--from-literal=a=b",
                    "--dry-run=server",
                    "-o",
                    "json",
                )
                assert created.returncode == 0, created.stderr
                assert "resourceVersion" not in json.loads(created.stdout)["metadata"]
                applied = kubectl(
                    "apply", "-f", str(manifest), "--dry-run=server", "-o", "jsonpath={.data}"
                )
                assert (applied.returncode, applied.stdout) == (0, '{"color":"red"}'), (
                    applied.stderr
                )
                diff = kubectl("diff", "-f", str(manifest))
                assert diff.returncode == 1 and "+  color: red" in diff.stdout, diff.stderr
                # A real server gives ConfigMaps no generation, so none shows in the diff.
                assert "generation" not in diff.stdout, diff.stdout
                deleted = kubectl("delete", "configmap", "web", "--dry-run=server")
                assert deleted.returncode == 0 and "(server dry run)" in deleted.stdout
            assert store.get_object("v1", "ConfigMap", "web", "default")["data"] == {
                "color": "blue"
            }
        finally:
            future.cancel()
