"""Request credentials of a kubeconfig user or a pod, kept fresh as client-go keeps them.

Each kind answers :meth:`Auth.authorization` (the ``Authorization`` header, or
None) before every request; the hot path compares a timestamp and returns a
string. :meth:`Auth.unauthorized` is told of a 401 answer, after which the next
request fetches new credentials where they can be fetched (a token file read
again, an exec plugin run again).

* a static token or basic auth: sent as given;
* a ``tokenFile`` (and the in-cluster ServiceAccount token, which the kubelet
  rotates): read again once a minute, the last value read kept if a read fails;
* an ``exec`` plugin (client.authentication.k8s.io ``v1``, ``v1beta1``,
  ``v1alpha1`` ExecCredential): run again once its credential's
  ``expirationTimestamp`` is near, one run at a time; a client certificate it
  returns is loaded into the connection's TLS context (new connections present
  it).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import ssl
import sys
import time
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Final, Protocol

from ownergc.errors import Unavailable
from ownergc_backends.kube._errors import KubeConfigError

__all__ = [
    "EXEC_API_VERSIONS",
    "Auth",
    "ExecAuth",
    "ExecCredential",
    "ExecPlugin",
    "NoAuth",
    "StaticAuth",
    "TokenFileAuth",
    "basic_authorization",
    "load_client_certificate",
]

log = logging.getLogger("ownergc.kube")

#: The ExecCredential versions client-go has understood (v1alpha1 until 1.24).
EXEC_API_VERSIONS: Final = frozenset(
    {
        "client.authentication.k8s.io/v1",
        "client.authentication.k8s.io/v1beta1",
        "client.authentication.k8s.io/v1alpha1",
    }
)
_INTERACTIVE_MODES: Final = ("Never", "IfAvailable", "Always")
#: Run an exec plugin again this long before its credential's expiry.
EXPIRY_SKEW: Final = timedelta(seconds=10)
#: How often a token file is read again (client-go: once a minute).
TOKEN_FILE_PERIOD: Final = 60.0


class Auth(Protocol):
    """What every kind of credentials answers."""

    async def authorization(self) -> str | None:
        """The ``Authorization`` header's value (None: send none)."""
        ...

    def unauthorized(self, sent: str | None) -> None:
        """The server answered 401 to a request that carried ``sent``."""
        ...


class NoAuth:
    """No credentials."""

    async def authorization(self) -> str | None:
        return None

    def unauthorized(self, sent: str | None) -> None:
        """Nothing to refresh."""


class StaticAuth:
    """A header value that never changes (a static bearer token, basic auth)."""

    def __init__(self, value: str) -> None:
        self.value = value

    async def authorization(self) -> str | None:
        return self.value

    def unauthorized(self, sent: str | None) -> None:
        """Nothing to refresh: a static credential stays what it is."""


def basic_authorization(username: str, password: str) -> str:
    raw = f"{username}:{password}".encode()
    return "Basic " + base64.b64encode(raw).decode("ascii")


class TokenFileAuth:
    """A bearer token read from a file, read again every ``period`` seconds.

    The first read must succeed (client-go fails to build the client otherwise);
    a later failed read keeps the last token and is logged.
    """

    def __init__(self, path: str, *, period: float | None = None, what: str = "tokenFile") -> None:
        self.path = path
        self.period = TOKEN_FILE_PERIOD if period is None else period
        self._what = what
        try:
            self._token = self._read()
        except OSError as exc:
            raise KubeConfigError(f"cannot read the {what} {path}: {exc.strerror or exc}") from exc
        if not self._token:
            raise KubeConfigError(f"the {what} {path} is empty")
        self._read_at = time.monotonic()

    def _read(self) -> str:
        with open(self.path, encoding="utf-8") as f:
            return f.read().strip()

    def _reread(self) -> None:
        self._read_at = time.monotonic()
        try:
            token = self._read()
        except OSError as exc:
            log.warning(
                "cannot read the %s %s again (keeping the last token): %s",
                self._what,
                self.path,
                exc,
            )
            return
        if token:
            self._token = token

    async def authorization(self) -> str | None:
        if time.monotonic() - self._read_at >= self.period:
            self._reread()
        return "Bearer " + self._token

    def unauthorized(self, sent: str | None) -> None:
        self._read_at = -float("inf")  # the next request reads the file first


# -- exec plugins ------------------------------------------------------------------


class ExecCredential:
    """What one run of an exec plugin returned."""

    __slots__ = ("client_certificate", "client_key", "expiry", "token")

    def __init__(
        self,
        token: str | None,
        client_certificate: str | None,
        client_key: str | None,
        expiry: datetime | None,
    ) -> None:
        self.token = token
        self.client_certificate = client_certificate
        self.client_key = client_key
        self.expiry = expiry

    def expired(self, now: datetime | None = None) -> bool:
        if self.expiry is None:
            return False
        return self.expiry - EXPIRY_SKEW <= (now or datetime.now(timezone.utc))


def _parse_time(value: str) -> datetime:
    """An RFC 3339 timestamp (``Z`` or an offset; Python 3.10's parser lacks ``Z``)."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    # Fractional seconds beyond microseconds (Go writes nanoseconds) are cut.
    head, dot, rest = text.partition(".")
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        rest = rest[: min(digits, 6)] + rest[digits:]
        text = head + "." + rest
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


class ExecPlugin:
    """A kubeconfig user's ``exec`` stanza, ready to run.

    ``command`` is looked up on ``PATH`` unless it holds a path separator, in
    which case a relative one is resolved against the kubeconfig's directory
    (``base_dir``). ``cluster`` is the ``spec.cluster`` handed to a plugin with
    ``provideClusterInfo`` (v1beta1 and v1).
    """

    def __init__(
        self,
        spec: Mapping[str, Any],
        *,
        user: str,
        base_dir: str | None,
        cluster: Mapping[str, Any] | None = None,
    ) -> None:
        where = f"the exec plugin of user {user!r}"
        command = spec.get("command")
        if not isinstance(command, str) or not command:
            raise KubeConfigError(f"{where} has no command")
        api_version = spec.get("apiVersion")
        if api_version not in EXEC_API_VERSIONS:
            raise KubeConfigError(
                f"{where}: apiVersion {api_version!r} is not one of "
                f"{', '.join(sorted(EXEC_API_VERSIONS))}"
            )
        self.api_version: str = api_version
        mode = spec.get("interactiveMode")
        if not mode:
            if api_version.endswith("/v1"):
                raise KubeConfigError(
                    f"{where}: interactiveMode must be set (Never, IfAvailable or Always) "
                    "for client.authentication.k8s.io/v1"
                )
            mode = "IfAvailable"
        if mode not in _INTERACTIVE_MODES:
            raise KubeConfigError(
                f"{where}: interactiveMode {mode!r} is not one of {', '.join(_INTERACTIVE_MODES)}"
            )
        self.interactive_mode: str = mode
        if os.sep in command and not os.path.isabs(command) and base_dir is not None:
            command = os.path.join(base_dir, command)
        self.command = command
        args = spec.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise KubeConfigError(f"{where}: args must be a list of strings")
        self.args: list[str] = list(args)
        self.env: dict[str, str] = {}
        for item in spec.get("env") or []:
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                raise KubeConfigError(f"{where}: each env entry needs a name and a value")
            self.env[item["name"]] = str(item.get("value") or "")
        hint = spec.get("installHint")
        self.install_hint: str | None = hint if isinstance(hint, str) and hint else None
        self.cluster: Mapping[str, Any] | None = (
            cluster
            if spec.get("provideClusterInfo") and not api_version.endswith("v1alpha1")
            else None
        )
        self.user = user

    def _interactive(self) -> bool:
        if self.interactive_mode == "Never":
            return False
        try:
            tty = sys.stdin is not None and sys.stdin.isatty()
        except (OSError, ValueError):
            tty = False
        if self.interactive_mode == "Always" and not tty:
            raise KubeConfigError(
                f"the exec plugin of user {self.user!r} needs an interactive terminal "
                "(interactiveMode: Always), but standard input is not a terminal"
            )
        return tty

    def _exec_info(self, interactive: bool) -> str:
        spec: dict[str, Any] = {"interactive": interactive}
        if self.cluster is not None:
            spec["cluster"] = dict(self.cluster)
        return json.dumps({"apiVersion": self.api_version, "kind": "ExecCredential", "spec": spec})

    async def run(self) -> ExecCredential:
        """Run the plugin once and read its ExecCredential (raises KubeConfigError)."""
        interactive = self._interactive()
        env = dict(os.environ)
        env.update(self.env)
        env["KUBERNETES_EXEC_INFO"] = self._exec_info(interactive)
        try:
            proc = await asyncio.create_subprocess_exec(
                self.command,
                *self.args,
                env=env,
                stdin=None if interactive else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=None,  # the plugin's messages reach the operator, as with kubectl
            )
        except FileNotFoundError:
            msg = f"the exec plugin of user {self.user!r}: executable {self.command!r} not found"
            if self.install_hint:
                msg += f"\n\n{self.install_hint}"
            raise KubeConfigError(msg) from None
        except OSError as exc:
            raise KubeConfigError(
                f"the exec plugin of user {self.user!r}: cannot run {self.command!r}: {exc}"
            ) from exc
        stdout, _ = await proc.communicate()
        if proc.returncode != 0:
            raise KubeConfigError(
                f"the exec plugin of user {self.user!r}: {self.command!r} failed "
                f"with exit code {proc.returncode}"
            )
        return self._credential(stdout)

    def _credential(self, stdout: bytes) -> ExecCredential:
        where = f"the exec plugin of user {self.user!r}"
        try:
            answer = json.loads(stdout)
        except ValueError as exc:
            raise KubeConfigError(f"{where} wrote no ExecCredential JSON: {exc}") from exc
        if not isinstance(answer, dict) or answer.get("kind") != "ExecCredential":
            raise KubeConfigError(f"{where} wrote no ExecCredential (kind: ExecCredential)")
        if answer.get("apiVersion") != self.api_version:
            raise KubeConfigError(
                f"{where} is configured for {self.api_version}, "
                f"but it answered {answer.get('apiVersion')}"
            )
        status = answer.get("status")
        if not isinstance(status, dict):
            raise KubeConfigError(f"{where} returned no status")
        token = status.get("token") or None
        cert = status.get("clientCertificateData") or None
        key = status.get("clientKeyData") or None
        if bool(cert) != bool(key):
            raise KubeConfigError(f"{where} returned a client certificate or key, not both")
        if not token and not cert:
            raise KubeConfigError(f"{where} returned neither a token nor a client certificate")
        expiry = None
        stamp = status.get("expirationTimestamp")
        if stamp:
            try:
                expiry = _parse_time(str(stamp))
            except ValueError as exc:
                raise KubeConfigError(
                    f"{where} returned an unreadable expirationTimestamp {stamp!r}"
                ) from exc
        return ExecCredential(token, cert, key, expiry)


def load_client_certificate(context: ssl.SSLContext, cert_pem: bytes, key_pem: bytes) -> None:
    """Load a client certificate and key given as PEM bytes (ssl reads only files)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="ownergc-") as tmp:
        cert_path = os.path.join(tmp, "client.crt")
        key_path = os.path.join(tmp, "client.key")
        for path, data in ((cert_path, cert_pem), (key_path, key_pem)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        context.load_cert_chain(cert_path, key_path)


class ExecAuth:
    """Credentials from an exec plugin, fetched again when they expire or a 401 says
    they no longer work."""

    def __init__(self, plugin: ExecPlugin, first: ExecCredential) -> None:
        self.plugin = plugin
        self._cred = first
        self._stale = False
        self._lock = asyncio.Lock()
        #: The connection's TLS context, where a client certificate from the plugin goes.
        self.ssl_context: ssl.SSLContext | None = None
        #: Plugin runs after the first (for tests and logs).
        self.refreshes = 0

    @property
    def credential(self) -> ExecCredential:
        return self._cred

    def _fresh(self) -> bool:
        return not self._stale and not self._cred.expired()

    async def authorization(self) -> str | None:
        if not self._fresh():
            async with self._lock:
                if not self._fresh():  # another request may have refreshed it meanwhile
                    await self._refresh()
        token = self._cred.token
        return None if token is None else "Bearer " + token

    async def _refresh(self) -> None:
        try:
            cred = await self.plugin.run()
        except KubeConfigError as exc:
            raise Unavailable(
                f"cannot refresh the credentials: {exc}", reason="Unauthorized"
            ) from exc
        previous = self._cred
        self._cred = cred
        self._stale = False
        self.refreshes += 1
        log.debug("exec plugin of user %r ran again (expiry %s)", self.plugin.user, cred.expiry)
        if (
            cred.client_certificate
            and cred.client_key
            and self.ssl_context is not None
            and (cred.client_certificate, cred.client_key)
            != (previous.client_certificate, previous.client_key)
        ):
            try:
                load_client_certificate(
                    self.ssl_context, cred.client_certificate.encode(), cred.client_key.encode()
                )
            except (ssl.SSLError, OSError) as exc:
                raise Unavailable(
                    f"the exec plugin of user {self.plugin.user!r} returned an unusable "
                    f"client certificate: {exc}",
                    reason="Unauthorized",
                ) from exc

    def unauthorized(self, sent: str | None) -> None:
        current = None if self._cred.token is None else "Bearer " + self._cred.token
        if sent == current:  # not already replaced by a refresh since
            self._stale = True
