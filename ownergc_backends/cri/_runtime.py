"""CRIRuntime: the ContainerRuntime Protocol over CRI v1 gRPC (``grpc.aio``).

Stubs come from the ``container-runtime-interface-api`` package (module
``cri_api``): generated from the upstream ``api.proto``, typed, and current
enough to carry the fields the newest kubelet reads (``Container.image_id``,
``ImageSpec.runtime_handler``). Errors cross the seam as
:mod:`ownergc.errors`; removing an object that is already gone is success.

CRI reports no capacity for the image filesystem: like the kubelet (which
asks cAdvisor), we take the first ``ImageFsInfo`` entry's mountpoint and
``statvfs`` it. An unknown or unreadable mountpoint gives capacity ``None``,
which the image GC reports as ``invalid capacity 0 on image filesystem``.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio.to_thread
import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
from anyio.abc import AsyncResource
from cri_api.v1 import api_pb2 as pb
from cri_api.v1 import api_pb2_grpc as pb_grpc

from ownergc.errors import (
    AlreadyExists,
    APIError,
    BadRequest,
    Conflict,
    Forbidden,
    MethodNotAllowed,
    NotFound,
    ServerError,
    ServerTimeout,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from ownergc.nodegc import (
    Container,
    ContainerState,
    ContainerStatus,
    FsStats,
    Image,
    PodSandbox,
    SandboxState,
)

__all__ = ["DEFAULT_ENDPOINT", "CRIRuntime", "error_from_rpc"]

#: containerd's CRI socket, the kubelet's usual ``--container-runtime-endpoint``.
DEFAULT_ENDPOINT = "unix:///run/containerd/containerd.sock"

#: The kubelet's default ``--runtime-request-timeout``.
DEFAULT_TIMEOUT = 120.0

_T = TypeVar("_T")

_BY_CODE: dict[Any, type[APIError]] = {
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.ALREADY_EXISTS: AlreadyExists,
    grpc.StatusCode.INVALID_ARGUMENT: BadRequest,
    grpc.StatusCode.OUT_OF_RANGE: BadRequest,
    grpc.StatusCode.FAILED_PRECONDITION: Conflict,
    grpc.StatusCode.ABORTED: Conflict,
    grpc.StatusCode.PERMISSION_DENIED: Forbidden,
    grpc.StatusCode.UNAUTHENTICATED: Unauthorized,
    grpc.StatusCode.RESOURCE_EXHAUSTED: TooManyRequests,
    grpc.StatusCode.UNIMPLEMENTED: MethodNotAllowed,
    grpc.StatusCode.DEADLINE_EXCEEDED: ServerTimeout,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.CANCELLED: Unavailable,
}


def error_from_rpc(exc: grpc.RpcError, what: str = "") -> APIError:
    """Translate a gRPC error into the ownergc error tree (UNKNOWN/INTERNAL: ServerError)."""
    code = exc.code() if callable(getattr(exc, "code", None)) else grpc.StatusCode.UNKNOWN
    details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
    cls = _BY_CODE.get(code, ServerError)
    name = getattr(code, "name", str(code))
    message = f"{what}: {name}: {details}" if what else f"{name}: {details}"
    return cls(message, reason=name)


def normalize_endpoint(endpoint: str) -> str:
    """``unix:///abs/path`` as gRPC wants it; a bare absolute path gets the scheme."""
    if endpoint.startswith("/"):
        return "unix://" + endpoint
    return endpoint


def _container(c: Any) -> Container:
    return Container(
        id=c.id,
        pod_sandbox_id=c.pod_sandbox_id,
        name=c.metadata.name,
        attempt=c.metadata.attempt,
        state=ContainerState(c.state),
        created_at=c.created_at,
        labels=dict(c.labels),
        annotations=dict(c.annotations),
        image=c.image.image,
        image_ref=c.image_ref,
        image_id=c.image_id,
        image_runtime_handler=c.image.runtime_handler,
    )


def _sandbox(s: Any) -> PodSandbox:
    return PodSandbox(
        id=s.id,
        uid=s.metadata.uid,
        name=s.metadata.name,
        namespace=s.metadata.namespace,
        attempt=s.metadata.attempt,
        state=SandboxState(s.state),
        created_at=s.created_at,
        labels=dict(s.labels),
        annotations=dict(s.annotations),
    )


def _image(i: Any) -> Image:
    return Image(
        id=i.id,
        size=i.size,
        repo_tags=tuple(i.repo_tags),
        repo_digests=tuple(i.repo_digests),
        pinned=i.pinned,
        runtime_handler=i.spec.runtime_handler,
    )


def _statvfs(path: str) -> tuple[int, int] | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


class CRIRuntime(AsyncResource):
    """A :class:`~ownergc.protocols.ContainerRuntime` speaking CRI v1 to ``endpoint``.

    Use as ``async with CRIRuntime(...) as rt:`` or call :meth:`aclose`. The
    channel is opened on first use, inside the running event loop (asyncio;
    ``grpc.aio`` does not support trio). ``runtime_service`` and
    ``image_service`` expose the raw stubs for calls the Protocol lacks.
    """

    def __init__(
        self,
        endpoint: str = DEFAULT_ENDPOINT,
        *,
        image_endpoint: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.endpoint = normalize_endpoint(endpoint)
        self.image_endpoint = normalize_endpoint(image_endpoint) if image_endpoint else None
        self.timeout = timeout
        self._channels: list[Any] = []
        self._runtime: Any = None
        self._images: Any = None

    # --- plumbing -----------------------------------------------------------------

    def _connect(self) -> None:
        if self._runtime is not None:
            return
        channel = grpc.aio.insecure_channel(self.endpoint)
        self._channels.append(channel)
        image_channel = channel
        if self.image_endpoint and self.image_endpoint != self.endpoint:
            image_channel = grpc.aio.insecure_channel(self.image_endpoint)
            self._channels.append(image_channel)
        self._runtime = pb_grpc.RuntimeServiceStub(channel)  # type: ignore[no-untyped-call]
        self._images = pb_grpc.ImageServiceStub(image_channel)  # type: ignore[no-untyped-call]

    @property
    def runtime_service(self) -> Any:
        """The raw ``RuntimeServiceStub``."""
        self._connect()
        return self._runtime

    @property
    def image_service(self) -> Any:
        """The raw ``ImageServiceStub``."""
        self._connect()
        return self._images

    async def _call(self, what: str, fn: Callable[..., Awaitable[_T]], request: Any) -> _T:
        try:
            return await fn(request, timeout=self.timeout)
        except grpc.RpcError as exc:
            raise error_from_rpc(exc, what) from exc

    async def _idempotent(self, what: str, fn: Callable[..., Awaitable[Any]], request: Any) -> None:
        with contextlib.suppress(NotFound):  # already gone is success
            await self._call(what, fn, request)

    async def aclose(self) -> None:
        for ch in self._channels:
            await ch.close()
        self._channels.clear()
        self._runtime = self._images = None

    async def __aenter__(self) -> CRIRuntime:
        self._connect()
        return self

    async def version(self) -> tuple[str, str, str]:
        """(runtime name, runtime version, CRI API version): a cheap liveness probe."""
        r = await self._call(
            "Version", self.runtime_service.Version, pb.VersionRequest(version="0.1.0")
        )
        return r.runtime_name, r.runtime_version, r.runtime_api_version

    async def sandbox_image(self) -> str | None:
        """The runtime's configured sandbox (pause) image, when it says (containerd does).

        Read from the verbose CRI ``Status`` info (containerd's ``config``
        JSON, key ``sandboxImage``); ``None`` when the runtime does not tell.
        The kubelet protected this image by name up to v1.27; containerd 1.6
        never marks it ``pinned``, so without this the image GC would remove it.
        """
        try:
            r = await self._call(
                "Status", self.runtime_service.Status, pb.StatusRequest(verbose=True)
            )
        except APIError:
            return None
        raw = r.info.get("config")
        if not raw:
            return None
        try:
            value = json.loads(raw).get("sandboxImage")
        except (ValueError, AttributeError):
            return None
        return value if isinstance(value, str) and value else None

    # --- ContainerRuntime -------------------------------------------------------------

    async def list_containers(self) -> Sequence[Container]:
        r = await self._call(
            "ListContainers", self.runtime_service.ListContainers, pb.ListContainersRequest()
        )
        return [_container(c) for c in r.containers]

    async def list_pod_sandboxes(self) -> Sequence[PodSandbox]:
        r = await self._call(
            "ListPodSandbox", self.runtime_service.ListPodSandbox, pb.ListPodSandboxRequest()
        )
        return [_sandbox(s) for s in r.items]

    async def container_status(self, container_id: str) -> ContainerStatus:
        r = await self._call(
            f"ContainerStatus {container_id}",
            self.runtime_service.ContainerStatus,
            pb.ContainerStatusRequest(container_id=container_id),
        )
        if not r.HasField("status"):
            raise NotFound(f"ContainerStatus {container_id}: no status in the response")
        s = r.status
        return ContainerStatus(
            id=s.id,
            state=ContainerState(s.state),
            created_at=s.created_at,
            finished_at=s.finished_at,
            log_path=s.log_path,
            labels=dict(s.labels),
            annotations=dict(s.annotations),
        )

    async def stop_container(self, container_id: str, timeout: int) -> None:
        await self._call(
            f"StopContainer {container_id}",
            self.runtime_service.StopContainer,
            pb.StopContainerRequest(container_id=container_id, timeout=timeout),
        )

    async def remove_container(self, container_id: str) -> None:
        await self._idempotent(
            f"RemoveContainer {container_id}",
            self.runtime_service.RemoveContainer,
            pb.RemoveContainerRequest(container_id=container_id),
        )

    async def stop_pod_sandbox(self, sandbox_id: str) -> None:
        await self._call(
            f"StopPodSandbox {sandbox_id}",
            self.runtime_service.StopPodSandbox,
            pb.StopPodSandboxRequest(pod_sandbox_id=sandbox_id),
        )

    async def remove_pod_sandbox(self, sandbox_id: str) -> None:
        await self._idempotent(
            f"RemovePodSandbox {sandbox_id}",
            self.runtime_service.RemovePodSandbox,
            pb.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id),
        )

    async def list_images(self) -> Sequence[Image]:
        r = await self._call("ListImages", self.image_service.ListImages, pb.ListImagesRequest())
        return [_image(i) for i in r.images]

    async def image_status(self, ref: str) -> Image | None:
        r = await self._call(
            f"ImageStatus {ref}",
            self.image_service.ImageStatus,
            pb.ImageStatusRequest(image=pb.ImageSpec(image=ref)),
        )
        return _image(r.image) if r.HasField("image") and r.image.id else None

    async def remove_image(self, image_id: str) -> None:
        await self._idempotent(
            f"RemoveImage {image_id}",
            self.image_service.RemoveImage,
            pb.RemoveImageRequest(image=pb.ImageSpec(image=image_id)),
        )

    async def image_fs_stats(self) -> FsStats:
        r = await self._call("ImageFsInfo", self.image_service.ImageFsInfo, pb.ImageFsInfoRequest())
        if not r.image_filesystems:
            return FsStats(None, None)
        first = r.image_filesystems[0]  # the kubelet uses only the first entry
        mountpoint = first.fs_id.mountpoint
        used = first.used_bytes.value if first.HasField("used_bytes") else None
        measured = await anyio.to_thread.run_sync(_statvfs, mountpoint) if mountpoint else None
        if measured is None:
            return FsStats(None, None, used, mountpoint)
        capacity, available = measured
        return FsStats(capacity, available, used, mountpoint)
