"""A private containerd for the real-CRI tests (settings from cri-test-env.md).

Started once per session on a fresh directory under /tmp (the unix socket
path must stay short), with ``restrict_oom_score_adj`` (this VM refuses
negative OOM scores), host-network sandboxes only (no CNI) and a locally
built pause image, so nothing ever reaches a registry.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread

from tests.nodegc._nodegc_oci import build_image

CONFIG = """\
version = 2
root = "{base}/root"
state = "{base}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]
[grpc]
  address = "{base}/containerd.sock"
[ttrpc]
  address = "{base}/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "{base}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "{base}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{base}/net.d"
"""

PAUSE = "docker.io/library/ownergc-pause:1"
BUSYBOX = "docker.io/library/ownergc-busybox:1"
EXTRA = ("docker.io/library/ownergc-gc-a:1", "docker.io/library/ownergc-gc-b:1")

# CRI enum values (see cri-subset.md)
NODE_NETWORK = 2
CONTAINER_PID = 1


def missing_tools() -> list[str]:
    return [t for t in ("containerd", "ctr", "runc") if shutil.which(t) is None] + (
        [] if Path("/bin/busybox").exists() else ["busybox"]
    )


@dataclass
class CRIEnv:
    base: Path
    proc: subprocess.Popen[bytes] | None = None
    tarballs: dict[str, Path] = field(default_factory=dict)

    @property
    def socket(self) -> Path:
        return self.base / "containerd.sock"

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"

    @property
    def pod_logs_dir(self) -> Path:
        return self.base / "pods"

    @property
    def container_logs_dir(self) -> Path:
        return self.base / "containers"

    # --- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        for d in ("root", "state", "opt", "runc", "net.d", "pods", "containers", "images"):
            (self.base / d).mkdir(parents=True, exist_ok=True)
        cfg = self.base / "config.toml"
        cfg.write_text(CONFIG.format(base=self.base, pause=PAUSE))
        with open(self.base / "containerd.log", "wb") as log:  # the child keeps its own fd
            self.proc = subprocess.Popen(
                ["containerd", "--config", str(cfg)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"containerd exited early:\n{self.log_tail()}")
            if self.socket.exists() and self._ctr("version", check=False).returncode == 0:
                break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"containerd did not come up:\n{self.log_tail()}")
        self.tarballs[PAUSE] = build_image(
            self.base / "images" / "pause.tar", PAUSE, entrypoint=["/bin/sleep", "2147483647"]
        )
        for ref in (BUSYBOX, *EXTRA):
            self.tarballs[ref] = build_image(
                self.base / "images" / (ref.rsplit("/", 1)[-1].replace(":", "_") + ".tar"), ref
            )
        for ref in self.tarballs:
            self.import_image(ref)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join((self.base / "containerd.log").read_text().splitlines()[-n:])
        except OSError:
            return "(no log)"

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["ctr", "-a", str(self.socket), "-n", "k8s.io", *args],
            capture_output=True,
            check=check,
            timeout=120,
        )

    def import_image(self, ref: str) -> None:
        self._ctr("images", "import", str(self.tarballs[ref]))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            # Remove what CRI still holds, so no shim or mount outlives the test run.
            with contextlib.suppress(Exception):
                run_in_fresh_loop(self.remove_everything)
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=15)
        self._kill_leftover_shims()
        self._unmount_leftovers()
        shutil.rmtree(self.base, ignore_errors=True)

    def _kill_leftover_shims(self) -> None:
        marker = str(self.base).encode()
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"containerd-shim" in cmdline and marker in cmdline:
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)

    def _unmount_leftovers(self) -> None:
        try:
            mounts = Path("/proc/mounts").read_text().splitlines()
        except OSError:
            return
        targets = [m.split()[1] for m in mounts if len(m.split()) > 1]
        for target in sorted((t for t in targets if t.startswith(str(self.base))), reverse=True):
            subprocess.run(["umount", "-l", target], capture_output=True, check=False)

    # --- CRI helpers (async, used inside tests) -----------------------------------------

    async def remove_everything(self) -> None:
        from ownergc_backends.cri import CRIRuntime

        async with CRIRuntime(self.endpoint, timeout=60) as rt:
            for c in await rt.list_containers():
                await rt.remove_container(c.id)
            for sb in await rt.list_pod_sandboxes():
                with contextlib.suppress(Exception):
                    await rt.stop_pod_sandbox(sb.id)
                await rt.remove_pod_sandbox(sb.id)

    async def reset(self, rt: object) -> None:
        """Empty runtime, base images present: every test starts from the same node."""
        await self.remove_everything()
        from ownergc_backends.cri import CRIRuntime

        assert isinstance(rt, CRIRuntime)
        for ref in self.tarballs:
            if await rt.image_status(ref) is None:
                await anyio.to_thread.run_sync(self.import_image, ref)

    def sandbox_config(self, name: str, uid: str, namespace: str, attempt: int = 0) -> object:
        from cri_api.v1 import api_pb2 as pb

        labels = {
            "io.kubernetes.pod.name": name,
            "io.kubernetes.pod.namespace": namespace,
            "io.kubernetes.pod.uid": uid,
        }
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(
                name=name, uid=uid, namespace=namespace, attempt=attempt
            ),
            log_directory=str(self.pod_logs_dir / f"{namespace}_{name}_{uid}"),
            labels=labels,
            linux=pb.LinuxPodSandboxConfig(
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=pb.NamespaceOption(network=NODE_NETWORK)
                )
            ),
        )

    async def run_pod(
        self, rt: object, name: str, uid: str, namespace: str = "ogc", attempt: int = 0
    ) -> tuple[str, object]:
        from cri_api.v1 import api_pb2 as pb

        from ownergc_backends.cri import CRIRuntime

        assert isinstance(rt, CRIRuntime)
        config = self.sandbox_config(name, uid, namespace, attempt)
        r = await rt.runtime_service.RunPodSandbox(pb.RunPodSandboxRequest(config=config))
        return r.pod_sandbox_id, config

    async def run_container(
        self,
        rt: object,
        sandbox: tuple[str, object],
        name: str,
        attempt: int = 0,
        *,
        image: str = BUSYBOX,
        command: Iterable[str] = ("/bin/true",),
        start: bool = True,
        wait_exit: bool = True,
    ) -> str:
        from cri_api.v1 import api_pb2 as pb

        from ownergc_backends.cri import CRIRuntime

        assert isinstance(rt, CRIRuntime)
        sb_id, sb_config = sandbox
        meta = sb_config.metadata  # type: ignore[attr-defined]
        labels = {
            "io.kubernetes.pod.name": meta.name,
            "io.kubernetes.pod.namespace": meta.namespace,
            "io.kubernetes.pod.uid": meta.uid,
            "io.kubernetes.container.name": name,
        }
        config = pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=name, attempt=attempt),
            image=pb.ImageSpec(image=image),
            command=list(command),
            log_path=f"{name}/{attempt}.log",
            labels=labels,
            linux=pb.LinuxContainerConfig(
                security_context=pb.LinuxContainerSecurityContext(
                    namespace_options=pb.NamespaceOption(network=NODE_NETWORK, pid=CONTAINER_PID)
                )
            ),
        )
        svc = rt.runtime_service
        r = await svc.CreateContainer(
            pb.CreateContainerRequest(pod_sandbox_id=sb_id, config=config, sandbox_config=sb_config)
        )
        cid: str = r.container_id
        if start:
            await svc.StartContainer(pb.StartContainerRequest(container_id=cid))
            if wait_exit:
                with anyio.fail_after(30):
                    while (await rt.container_status(cid)).state != 2:  # EXITED
                        await anyio.sleep(0.02)
        return cid


def run_in_fresh_loop(fn: object) -> None:
    """Run an async callable on its own event loop in a thread (safe from any context)."""
    import threading

    errors: list[BaseException] = []

    def target() -> None:
        try:
            anyio.run(fn)  # type: ignore[arg-type]
        except BaseException as exc:  # reported to the caller
            errors.append(exc)

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if errors:
        raise errors[0]


def new_base() -> Path:
    return Path(tempfile.mkdtemp(prefix="ogc-", dir="/tmp"))
