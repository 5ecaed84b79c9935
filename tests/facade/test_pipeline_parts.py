"""The facade's pipeline parts, each built on its own (no server, no socket)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import pytest

from ownergc._kit.http import Request, ServerConnection
from ownergc.errors import APIError, BadRequest, Forbidden, NotFound, UnsupportedPatchType
from ownergc.protocols import APIResource, JSONDict, PatchType
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver import admission as admission_mod
from ownergc_backends.memory._apiserver.admission import AdmissionAttributes, AdmissionChain
from ownergc_backends.memory._apiserver.context import (
    ANONYMOUS,
    Reply,
    RequestContext,
    UserInfo,
    WatchPlan,
)
from ownergc_backends.memory._apiserver.discovery import Discovery
from ownergc_backends.memory._apiserver.dryrun import RefuseDryRun
from ownergc_backends.memory._apiserver.faults import OpenGate
from ownergc_backends.memory._apiserver.fieldmanager import NoFieldManagement
from ownergc_backends.memory._apiserver.filters import (
    Authentication,
    RequestLog,
    RequestRecorder,
    StatusErrors,
)
from ownergc_backends.memory._apiserver.openapi import EmptyOpenAPI
from ownergc_backends.memory._apiserver.requestinfo import request_info
from ownergc_backends.memory._apiserver.rest import (
    CreateHandler,
    DeleteCollectionHandler,
    DeleteHandler,
    GetHandler,
    ListHandler,
    ObjectRenderer,
    PatchHandler,
    UpdateHandler,
    WriteHooks,
    WriteSteps,
)
from ownergc_backends.memory._apiserver.router import (
    NonResourceRoutes,
    ResourceResolver,
    RESTDispatcher,
    Router,
)
from ownergc_backends.memory._apiserver.scale import ScaleHandler
from ownergc_backends.memory._apiserver.watch import OpenWatches, WatchHandler, WatchStreamer
from ownergc_backends.memory._negotiation import _Response
from ownergc_backends.memory._pages import ContinuePages
from ownergc_backends.memory._tables import printer_for

CM = "/api/v1/namespaces/default/configmaps"
_CM_RESOURCE = APIResource(
    group="", version="v1", resource="configmaps", kind="ConfigMap", namespaced=True
)


def _request(
    method: str, target: str, body: Any = None, headers: dict[str, str] | None = None
) -> Request:
    raw = json.dumps(body).encode() if body is not None else b""
    return Request(method, target, "HTTP/1.1", dict(headers or {}), raw)


def _ctx(request: Request) -> RequestContext:
    return RequestContext(request, request_info(request.method, request.path, request.query))


def _run(func: Callable[[], Awaitable[Any]]) -> Any:
    return anyio.run(func)


def _body(reply: Reply) -> Any:
    assert isinstance(reply, _Response)
    return json.loads(reply.body)


# ---------------------------------------------------------------- request info


@pytest.mark.parametrize(
    ("method", "target", "expected"),
    [
        ("GET", "/version", ("nonresource", "", None, "", None, None)),
        ("GET", "/apis/apps/v1", ("discovery", "apps", None, "", None, None)),
        ("GET", f"{CM}?watch=1", ("watch", "", "default", "configmaps", None, None)),
        ("GET", f"{CM}?watch=0", ("list", "", "default", "configmaps", None, None)),
        ("GET", f"{CM}/a", ("get", "", "default", "configmaps", "a", None)),
        ("PUT", f"{CM}/a/status", ("update", "", "default", "configmaps", "a", "status")),
        ("DELETE", CM, ("deletecollection", "", "default", "configmaps", None, None)),
        ("DELETE", "/api/v1/nodes/n1", ("delete", "", None, "nodes", "n1", None)),
        (
            "POST",
            "/apis/apps/v1/namespaces/x/deployments/",
            ("create", "apps", "x", "deployments", None, None),
        ),
        # A namespace's own status is a subresource, not a collection inside it.
        ("GET", "/api/v1/namespaces/ns1/status", ("get", "", None, "namespaces", "ns1", "status")),
        ("PATCH", "/api/v1/namespaces/ns1", ("patch", "", None, "namespaces", "ns1", None)),
    ],
)
def test_request_info_reads_the_path(method: str, target: str, expected: tuple[Any, ...]) -> None:
    request = _request(method, target)
    info = request_info(method, request.path, request.query)
    assert (
        info.verb,
        info.group,
        info.namespace,
        info.resource,
        info.name,
        info.subresource,
    ) == expected


def test_request_info_of_discovery_and_non_resource_paths() -> None:
    root = request_info("GET", "/", {})
    assert (root.segments, root.api_prefix, root.is_resource_request) == ((), "", False)
    gv = request_info("GET", "/apis/apps/v1/", {})
    assert (gv.path, gv.group_version, gv.is_resource_request) == (
        "/apis/apps/v1",
        "apps/v1",
        False,
    )
    core = request_info("GET", "/api/v1/pods", {})
    assert (core.api_prefix, core.group_version, core.is_resource_request) == ("api", "v1", True)


# ---------------------------------------------------------------- filters


class _Answer:
    """An inner handler that answers ``reply`` or raises ``error``, and keeps the context."""

    def __init__(self, reply: Reply | None = None, error: Exception | None = None) -> None:
        self.reply = reply
        self.error = error
        self.seen: list[RequestContext] = []

    async def __call__(self, ctx: RequestContext) -> Reply:
        self.seen.append(ctx)
        if self.error is not None:
            raise self.error
        assert self.reply is not None
        return self.reply


def test_request_log_counts_the_verb_and_records_the_status() -> None:
    recorder = RequestRecorder()
    chain = RequestLog(StatusErrors(_Answer(error=NotFound("gone", reason="NotFound"))), recorder)
    request = _request(
        "GET", f"{CM}/x", headers={"user-agent": "ua/1", "authorization": "Bearer t"}
    )
    reply = _run(lambda: chain(_ctx(request)))
    assert isinstance(reply, _Response) and reply.status == 404
    assert _body(reply)["reason"] == "NotFound"
    assert [tuple(e) for e in recorder.requests] == [("GET", f"{CM}/x", 404)]
    assert [tuple(c) for c in recorder.request_credentials] == [("ua/1", "Bearer t")]
    assert recorder.count("get") == 1 and recorder.count() == 1
    recorder.clear()
    assert recorder.count() == 0 and recorder.requests == []


def test_status_errors_turn_a_bug_into_a_500_status() -> None:
    reply = _run(
        lambda: StatusErrors(_Answer(error=RuntimeError("boom")))(_ctx(_request("GET", "/")))
    )
    assert isinstance(reply, _Response) and reply.status == 500
    assert "boom" in _body(reply)["message"]


def test_authentication_fills_in_the_user_for_later_stages() -> None:
    someone = UserInfo("alice", ("devs",))

    class Fixed:
        def authenticate(self, request: Request) -> UserInfo:
            return someone

    inner = _Answer(reply=_Response(200, b"{}"))
    _run(lambda: Authentication(inner, Fixed())(_ctx(_request("GET", "/"))))
    assert inner.seen[0].user == someone


# ---------------------------------------------------------------- router and handlers


def _parts(
    store: InMemoryStore, admission: AdmissionChain | None = None
) -> tuple[Router, list[tuple[str, JSONDict]]]:
    """A router over ``store`` with every default seam, and the write hooks' record."""
    written: list[tuple[str, JSONDict]] = []

    async def hook(verb: str, resource: APIResource, obj: JSONDict) -> None:
        written.append((verb, obj))

    def printers(resource: APIResource) -> Any:
        return printer_for(resource, store.crd_for(resource))

    renderer = ObjectRenderer(printers)
    writes = WriteSteps(
        RefuseDryRun(), admission or AdmissionChain(), NoFieldManagement(), WriteHooks([hook])
    )
    router = Router(
        NonResourceRoutes(EmptyOpenAPI()),
        Discovery(store, lambda: "http://127.0.0.1:1"),
        ResourceResolver(store),
        OpenGate(),
        RESTDispatcher(
            get=GetHandler(store, renderer),
            list=ListHandler(store, renderer, ContinuePages()),
            watch=WatchHandler(),
            create=CreateHandler(store, renderer, writes),
            update=UpdateHandler(store, renderer, writes),
            patch=PatchHandler(store, renderer, writes),
            delete=DeleteHandler(store, renderer, writes),
            deletecollection=DeleteCollectionHandler(store, writes),
            scale=ScaleHandler(store),
        ),
    )
    return router, written


def _cm(name: str) -> JSONDict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def test_the_router_alone_serves_crud_and_discovery() -> None:
    store = InMemoryStore()
    router, written = _parts(store)

    async def main() -> None:
        created = await router(_ctx(_request("POST", CM, _cm("a"))))
        assert isinstance(created, _Response) and created.status == 201
        got = _body(await router(_ctx(_request("GET", f"{CM}/a"))))
        assert got["data"] == {"k": "v"}
        listed = _body(await router(_ctx(_request("GET", f"{CM}?limit=1"))))
        assert listed["kind"] == "ConfigMapList" and [
            i["metadata"]["name"] for i in listed["items"]
        ] == ["a"]
        patch = _request(
            "PATCH",
            f"{CM}/a",
            {"data": {"k": "w"}},
            {"content-type": "application/merge-patch+json"},
        )
        assert _body(await router(_ctx(patch)))["data"] == {"k": "w"}
        resources = _body(await router(_ctx(_request("GET", "/api/v1"))))
        assert "configmaps" in {r["name"] for r in resources["resources"]}
        deleted = _body(await router(_ctx(_request("DELETE", f"{CM}/a"))))
        assert deleted["kind"] == "Status" and deleted["status"] == "Success"
        plan = await router(_ctx(_request("GET", f"{CM}?watch=1&resourceVersion=1")))
        assert isinstance(plan, WatchPlan) and plan.route.resource.resource == "configmaps"
        version = _body(await router(_ctx(_request("GET", "/version"))))
        assert version["major"] == "1"

    _run(main)
    assert [verb for verb, _ in written] == ["create", "patch", "delete"]


def test_the_resolver_alone_answers_404_for_what_is_not_served() -> None:
    resolver = ResourceResolver(InMemoryStore())
    ok = resolver.resolve(request_info("GET", f"{CM}/a", {}))
    assert (ok.resource.kind, ok.namespace, ok.name) == ("ConfigMap", "default", "a")
    for path in (
        "/api/v1/namespaces/default/widgets",  # no such resource
        "/api/v1/namespaces/default/nodes/n",  # a cluster-scoped resource in a namespace
        "/api/v1/pods/p",  # a namespaced object without its namespace
        f"{CM}/a/exec",  # a subresource this server does not serve
        f"{CM}/a/status",  # configmaps have no status subresource
    ):
        with pytest.raises(NotFound):
            resolver.resolve(request_info("GET", path, {}))


def test_the_dispatcher_refuses_methods_a_route_does_not_take() -> None:
    store = InMemoryStore()
    router, _ = _parts(store)
    reply = _run(lambda: StatusErrors(router)(_ctx(_request("POST", f"{CM}/a"))))
    assert isinstance(reply, _Response) and reply.status == 405
    reply = _run(lambda: StatusErrors(router)(_ctx(_request("PUT", "/healthz"))))
    assert isinstance(reply, _Response) and reply.status == 405


# ---------------------------------------------------------------- the seams' defaults


def test_default_seams_refuse_apply_and_dry_run_as_before() -> None:
    store = InMemoryStore()
    router, written = _parts(store)

    async def main() -> None:
        await router(_ctx(_request("POST", CM, _cm("a"))))
        apply = _request(
            "PATCH", f"{CM}/a", {"data": {}}, {"content-type": "application/apply-patch+yaml"}
        )
        with pytest.raises(UnsupportedPatchType, match="server-side apply is not supported"):
            await router(_ctx(apply))
        with pytest.raises(BadRequest, match="dryRun is not supported"):
            await router(_ctx(_request("POST", f"{CM}?dryRun=All", _cm("b"))))

    _run(main)
    assert [verb for verb, _ in written] == ["create"]
    assert RefuseDryRun().dry_run(None, None) is False


def test_empty_openapi_serves_v2_only() -> None:
    service = EmptyOpenAPI()
    v2 = service.serve(_request("GET", "/openapi/v2"), "/openapi/v2")
    assert v2 is not None and v2.status == 200
    proto = service.serve(
        _request(
            "GET",
            "/openapi/v2",
            headers={"accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
        ),
        "/openapi/v2",
    )
    assert proto is not None and ("Content-Type", "application/octet-stream") in proto.headers
    assert service.serve(_request("GET", "/openapi/v3"), "/openapi/v3") is None


def test_an_admission_chain_mutates_then_validates_every_write() -> None:
    """The seam the handlers call: mutating plugins change the object to store, and
    validating plugins (after them) see the result and may refuse the write."""
    seen: list[AdmissionAttributes] = []

    class Label:
        async def admit(self, attrs: AdmissionAttributes) -> JSONDict | None:
            seen.append(attrs)
            if attrs.obj is None:
                return None
            meta = attrs.obj.setdefault("metadata", {})
            meta.setdefault("labels", {})["admitted"] = "yes"
            return attrs.obj

    class NoForbidden:
        async def validate(self, attrs: AdmissionAttributes) -> None:
            if (
                attrs.name == "forbidden"
                or (attrs.obj or {}).get("metadata", {}).get("name") == "forbidden"
            ):
                raise Forbidden("not this one", reason="Forbidden")

    store = InMemoryStore()
    router, written = _parts(store, AdmissionChain([Label()], [NoForbidden()]))

    async def main() -> None:
        created = _body(await router(_ctx(_request("POST", CM, _cm("a")))))
        assert created["metadata"]["labels"] == {"admitted": "yes"}
        updated = _body(
            await router(_ctx(_request("PUT", f"{CM}/a", {**_cm("a"), "data": {"k": "2"}})))
        )
        assert updated["metadata"]["labels"] == {"admitted": "yes"}
        with pytest.raises(APIError) as refused:
            await router(_ctx(_request("POST", CM, _cm("forbidden"))))
        assert refused.value.code == 403
        await router(_ctx(_request("DELETE", f"{CM}/a")))

    _run(main)
    assert [(a.operation, a.name) for a in seen] == [
        ("CREATE", None),
        ("UPDATE", "a"),
        ("CREATE", None),
        ("DELETE", "a"),
    ]
    update, delete = seen[1], seen[3]
    # With a plugin present, the handlers read the object before the write.
    assert update.old_obj is not None and update.old_obj["data"] == {"k": "v"}
    assert delete.old_obj is not None and delete.obj is None
    assert all(a.user == ANONYMOUS and a.dry_run is False for a in seen)
    assert [verb for verb, _ in written] == ["create", "update", "delete"]


def test_a_patch_reaches_admission_as_the_patched_object_and_reruns_when_raced() -> None:
    """The patch handler computes the patched object first (admission sees it, and the
    object before it); if another writer gets in between, the patch is applied again
    to the new state, so neither write is lost."""
    seen: list[AdmissionAttributes] = []
    store = InMemoryStore()

    class RaceOnce:
        async def admit(self, attrs: AdmissionAttributes) -> JSONDict | None:
            seen.append(attrs)
            if attrs.operation == "UPDATE" and len(seen) == 2:
                # Someone else writes the object while this patch is in admission.
                await store.patch(
                    _CM_RESOURCE,
                    "a",
                    {"data": {"other": "x"}},
                    patch_type=PatchType.MERGE,
                    namespace="default",
                )
            return attrs.obj

    router, written = _parts(store, AdmissionChain([RaceOnce()]))

    async def main() -> JSONDict:
        await router(_ctx(_request("POST", CM, _cm("a"))))
        patch = _request(
            "PATCH",
            f"{CM}/a",
            {"data": {"k": "w"}},
            {"content-type": "application/merge-patch+json"},
        )
        return _body(await router(_ctx(patch)))  # type: ignore[no-any-return]

    patched = _run(main)
    assert patched["data"] == {"k": "w", "other": "x"}
    first, second = seen[1], seen[2]
    assert first.obj is not None and first.obj["data"] == {"k": "w"}
    assert first.old_obj is not None and first.old_obj["data"] == {"k": "v"}
    assert second.obj is not None and second.obj["data"] == {"k": "w", "other": "x"}
    assert first.patch == {"data": {"k": "w"}}
    assert [verb for verb, _ in written] == ["create", "patch"]
    # The store saw the racing writer's patch, the raced write, and the retried one.
    assert store.request_count("patch") == 3


def test_admission_module_documents_its_order() -> None:
    # The module doc is the contract other helpers build on: it names the order.
    assert admission_mod.__doc__ is not None
    assert "Mutating plugins run first" in admission_mod.__doc__


# ---------------------------------------------------------------- composition, not towers

_FACADE_MODULES = [
    "ownergc._kit.http",
    "ownergc.controller._http",
    "ownergc_backends.memory.http",
    "ownergc_backends.memory._negotiation",
    "ownergc_backends.memory._printing",
    "ownergc_backends.memory._tables",
    "ownergc_backends.memory._pages",
    "ownergc_backends.memory._protobuf",
    "ownergc_backends.memory._scale",
    *(
        f"ownergc_backends.memory._apiserver.{m.name}"
        for m in pkgutil.iter_modules(
            importlib.import_module("ownergc_backends.memory._apiserver").__path__
        )
    ),
]


def _allowed_base(base: type) -> bool:
    """A Protocol, an ABC, an exception, or anything outside the project."""
    if not base.__module__.startswith(("ownergc.", "ownergc_backends.")):
        return True
    if issubclass(base, BaseException) or inspect.isabstract(base):
        return True
    return bool(getattr(base, "_is_protocol", False))


@pytest.mark.parametrize("module_name", _FACADE_MODULES)
def test_facade_classes_have_no_project_base_class(module_name: str) -> None:
    """The facade is composed: no class inherits another of the project's classes
    (only Protocols, ABCs and exceptions may be bases)."""
    module = importlib.import_module(module_name)
    offenders = [
        f"{cls.__name__}({base.__module__}.{base.__name__})"
        for cls in vars(module).values()
        if inspect.isclass(cls) and cls.__module__ == module_name
        for base in cls.__bases__
        if not _allowed_base(base)
    ]
    assert offenders == []


# ---------------------------------------------------------------- the watch streamer alone


class _QuietClient(anyio.abc.ByteStream):
    """A client that sent one request and then waits (as a watching client does)."""

    def __init__(self, request: bytes) -> None:
        self.pending = request
        self.sent = b""

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self.pending:
            data, self.pending = self.pending, b""
            return data
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(self, item: bytes) -> None:
        self.sent += item

    async def send_eof(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def test_the_watch_streamer_alone_sends_events_then_ends_cleanly() -> None:
    store = InMemoryStore()
    configmaps = store.resource_for("v1", "ConfigMap")
    watches = OpenWatches()
    streamer = WatchStreamer(
        store, store, lambda r: printer_for(r, store.crd_for(r)), watches, bookmark_interval=60
    )
    target = f"{CM}?watch=1&resourceVersion=0&timeoutSeconds=1"
    client = _QuietClient(f"GET {target} HTTP/1.1\r\nHost: x\r\n\r\n".encode())

    async def main() -> bool:
        await store.create(configmaps, _cm("w1"), namespace="default")
        connection = ServerConnection(client)
        request = await connection.next_request()
        assert request is not None
        plan = await WatchHandler()(
            _ctx(request), ResourceResolver(store).resolve(_ctx(request).info)
        )
        assert isinstance(plan, WatchPlan)
        with anyio.fail_after(10):
            return await streamer.stream(plan, connection)

    assert _run(main) is True
    head, _, body = client.sent.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head
    assert b'"type":"ADDED"' in body and b'"name":"w1"' in body
    assert body.endswith(b"0\r\n\r\n")
    assert len(watches) == 0
