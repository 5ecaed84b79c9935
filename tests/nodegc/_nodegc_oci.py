"""Build a tiny OCI image (static busybox) as a tarball ``ctr images import`` accepts.

No registry, no network: one uncompressed layer with the host's static
``/bin/busybox`` plus a marker file, so that images with different markers
have different ids.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import tarfile
from pathlib import Path

_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_APPLETS = ("sh", "sleep", "true", "cat", "echo", "ls")


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def _dir(tar: tarfile.TarFile, name: str) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = 0o755
    tar.addfile(info)


def _layer(busybox: Path, marker: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for d in ("bin", "etc", "tmp"):
            _dir(tar, d)
        _add(tar, "bin/busybox", busybox.read_bytes(), 0o755)
        for applet in _APPLETS:
            info = tarfile.TarInfo(f"bin/{applet}")
            info.type = tarfile.SYMTYPE
            info.linkname = "busybox"
            tar.addfile(info)
        _add(tar, "etc/passwd", b"root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534::/:/bin/sh\n")
        _add(tar, "etc/group", b"root:x:0:\nnobody:x:65534:\n")
        _add(tar, "etc/marker", marker.encode())
    return buf.getvalue()


def _blob(out: tarfile.TarFile, data: bytes) -> tuple[str, int]:
    digest = hashlib.sha256(data).hexdigest()
    _add(out, f"blobs/sha256/{digest}", data)
    return f"sha256:{digest}", len(data)


def build_image(
    dest: Path,
    ref: str,
    *,
    busybox: Path = Path("/bin/busybox"),
    marker: str = "",
    entrypoint: list[str] | None = None,
    cmd: list[str] | None = None,
) -> Path:
    """Write an OCI-layout tarball for ``ref`` (a full name like docker.io/library/x:1)."""
    layer = _layer(busybox, marker or ref)
    config = {
        "architecture": _ARCH.get(platform.machine(), platform.machine()),
        "os": "linux",
        "config": {
            "Env": ["PATH=/bin"],
            "Entrypoint": entrypoint,
            "Cmd": cmd if cmd is not None else (None if entrypoint else ["/bin/sh"]),
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]},
    }
    with tarfile.open(dest, "w") as out:
        layer_digest, layer_size = _blob(out, layer)
        cfg_digest, cfg_size = _blob(out, json.dumps(config).encode())
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": cfg_digest,
                "size": cfg_size,
            },
            "layers": [
                {
                    "mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": layer_digest,
                    "size": layer_size,
                }
            ],
        }
        man_digest, man_size = _blob(out, json.dumps(manifest).encode())
        index = {
            "schemaVersion": 2,
            "manifests": [
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": man_digest,
                    "size": man_size,
                    "annotations": {
                        "io.containerd.image.name": ref,
                        "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[-1],
                    },
                }
            ],
        }
        _add(out, "index.json", json.dumps(index).encode())
        _add(out, "oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    return dest
