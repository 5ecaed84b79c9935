"""Leader election on a coordination.k8s.io/v1 Lease, with kube-controller-manager's timings.

Only the leader runs the collector; standbys poll the Lease. Expiry is judged
by *local* observation (when this process last saw the lease record change),
not by comparing server timestamps with the local clock, so clock skew
between replicas cannot make two of them lead at once. Updates carry the
Lease's resourceVersion, so two candidates racing for an expired lease
cannot both win.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from typing import Any

import anyio

from ownergc.errors import Conflict, NotFound, OwnerGCError
from ownergc.protocols import APIResource, ObjectStore, PatchType

__all__ = ["LeaderElector", "LeadershipLost"]

log = logging.getLogger("ownergc.leaderelection")


class LeadershipLost(OwnerGCError):
    """The lease could not be renewed within the renew deadline."""


def _micro_time(now: datetime) -> str:
    return now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Acquire and renew a Lease; run a payload only while leading.

    Defaults are kube-controller-manager's: lease 15 s, renew deadline 10 s,
    retry period 2 s.
    """

    def __init__(
        self,
        store: ObjectStore,
        *,
        name: str,
        namespace: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        release_on_cancel: bool = True,
        wall_clock: Callable[[], datetime] | None = None,
    ) -> None:
        if not (lease_duration > renew_deadline > retry_period > 0):
            raise ValueError(
                "need lease_duration > renew_deadline > retry_period > 0, got "
                f"{lease_duration}, {renew_deadline}, {retry_period}"
            )
        if not identity:
            raise ValueError("leader election needs a non-empty identity")
        self.store = store
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.release_on_cancel = release_on_cancel
        self._wall = wall_clock or (lambda: datetime.now(timezone.utc))
        self._resource: APIResource | None = None
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self.is_leader = False
        self.leader: str | None = None

    async def _lease_resource(self) -> APIResource:
        if self._resource is None:
            found = await self.store.discover()
            for res in found.resources:
                if (
                    res.group == "coordination.k8s.io"
                    and res.resource == "leases"
                    and (res.preferred)
                ):
                    self._resource = res
                    break
            else:
                raise NotFound("the server does not serve coordination.k8s.io leases")
        return self._resource

    def _spec(self, now: datetime, *, acquire: bool, transitions: int) -> dict[str, Any]:
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, round(self.lease_duration)),
            "renewTime": _micro_time(now),
            "leaseTransitions": transitions,
        }
        if acquire:
            spec["acquireTime"] = _micro_time(now)
        return spec

    async def try_acquire_or_renew(self) -> bool:
        """One attempt; True if this process holds the lease afterwards."""
        resource = await self._lease_resource()
        now = self._wall()
        try:
            lease = await self.store.get(
                resource, self.name, namespace=self.namespace, metadata_only=False
            )
        except NotFound:
            spec = self._spec(now, acquire=True, transitions=0)
            body: dict[str, Any] = {
                "apiVersion": resource.api_version,
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": self.namespace},
                "spec": spec,
            }
            try:
                await self.store.create(resource, body, namespace=self.namespace)
            except Conflict:
                return False
            self._observe(spec)
            return True
        spec = dict(lease.get("spec") or {})
        if spec != self._observed_spec:
            self._observe(spec)
        holder = spec.get("holderIdentity") or ""
        self.leader = holder or None
        expired = anyio.current_time() > self._observed_at + float(
            spec.get("leaseDurationSeconds") or self.lease_duration
        )
        if holder and holder != self.identity and not expired:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        acquiring = holder != self.identity
        new_spec = self._spec(
            now, acquire=acquiring, transitions=transitions + (1 if acquiring else 0)
        )
        if not acquiring and spec.get("acquireTime"):
            new_spec["acquireTime"] = spec["acquireTime"]
        patch = {
            "metadata": {"resourceVersion": lease["metadata"].get("resourceVersion")},
            "spec": new_spec,
        }
        try:
            await self.store.patch(
                resource, self.name, patch, patch_type=PatchType.MERGE, namespace=self.namespace
            )
        except Conflict:
            return False
        self._observe(new_spec)
        return True

    def _observe(self, spec: dict[str, Any]) -> None:
        self._observed_spec = spec
        self._observed_at = anyio.current_time()
        self.leader = spec.get("holderIdentity") or None

    async def _acquire(self) -> None:
        while True:
            try:
                if await self.try_acquire_or_renew():
                    self.is_leader = True
                    self.leader = self.identity
                    log.info(
                        "acquired lease %s/%s",
                        self.namespace,
                        self.name,
                        extra={"identity": self.identity},
                    )
                    return
            except OwnerGCError as exc:
                log.warning("error acquiring lease %s/%s: %s", self.namespace, self.name, exc)
            await anyio.sleep(self.retry_period * (1 + 0.2 * random.random()))

    async def _renew_loop(self) -> None:
        while True:
            await anyio.sleep(self.retry_period)
            renewed = False
            with anyio.move_on_after(self.renew_deadline):
                while not renewed:
                    try:
                        renewed = await self.try_acquire_or_renew()
                    except OwnerGCError as exc:
                        log.warning("error renewing lease: %s", exc)
                    if not renewed:
                        await anyio.sleep(self.retry_period / 2)
            if not renewed:
                self.is_leader = False
                return

    async def _release(self) -> None:
        resource = await self._lease_resource()
        lease = await self.store.get(
            resource, self.name, namespace=self.namespace, metadata_only=False
        )
        if (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        patch = {
            "metadata": {"resourceVersion": lease["metadata"].get("resourceVersion")},
            "spec": {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": _micro_time(self._wall()),
            },
        }
        await self.store.patch(
            resource, self.name, patch, patch_type=PatchType.MERGE, namespace=self.namespace
        )

    async def run(self, payload: Callable[[], Awaitable[None]]) -> None:
        """Wait to lead, then run ``payload`` until it returns, is cancelled or leadership
        is lost (``LeadershipLost`` is raised; the payload is cancelled first)."""
        await self._acquire()
        lost = False
        try:
            async with anyio.create_task_group() as tg:

                async def lead() -> None:
                    await payload()
                    tg.cancel_scope.cancel()

                async def renew() -> None:
                    nonlocal lost
                    await self._renew_loop()
                    lost = True
                    tg.cancel_scope.cancel()

                tg.start_soon(renew)
                tg.start_soon(lead)
        finally:
            was_leader = self.is_leader
            self.is_leader = False
            if was_leader and self.release_on_cancel:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    try:
                        await self._release()
                    except OwnerGCError as exc:
                        log.info("could not release lease: %s", exc)
        if lost:
            raise LeadershipLost(
                f"failed to renew lease {self.namespace}/{self.name} within {self.renew_deadline}s"
            )
