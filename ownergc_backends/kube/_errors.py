"""Translate HTTP answers and client exceptions into the ownergc error tree.

Kept free of ``kubernetes`` and ``aiohttp`` imports where possible so the
translation rules can be unit-tested on plain values; the controller only ever
sees :mod:`ownergc.errors` classes.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import ssl
import sys
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from ownergc.errors import (
    APIError,
    Forbidden,
    OwnerGCError,
    ServerTimeout,
    Unauthorized,
    Unavailable,
    error_for_status,
)

__all__ = [
    "KubeConfigError",
    "error_from_exception",
    "error_from_response",
    "error_from_status_object",
    "parse_retry_after",
]


class KubeConfigError(OwnerGCError):
    """No usable cluster configuration (no kubeconfig, bad context, not in a cluster)."""


#: How to point ownergc at a cluster; appended to every configuration error.
HOW_TO_CONNECT = (
    "Point ownergc at a cluster with --kubeconfig PATH (optionally --context NAME), "
    "the KUBECONFIG environment variable (a list of paths), ~/.kube/config, "
    "or run it inside a cluster with a ServiceAccount."
)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date)."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - (now or datetime.now(timezone.utc))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return max(0.0, seconds)


def _decode_status(body: bytes) -> dict[str, Any] | None:
    try:
        decoded = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return decoded if isinstance(decoded, dict) else None


def _hint(code: int, message: str, what: str) -> str:
    """Add the operator-facing hint for auth failures (the error is often read by a human)."""
    if code == 401:
        return (
            f"{what}: the apiserver rejected the credentials (401 Unauthorized): {message}. "
            "Check the user of the kubeconfig context (expired token or client certificate?)."
        )
    if code == 403:
        return (
            f"{what}: forbidden (403): {message}. The identity needs get/list/watch/patch/delete "
            "on the resources it collects (see deploy/ for least-privilege RBAC)."
        )
    return message


def error_from_status_object(
    status: Mapping[str, Any], *, fallback_code: int = 500, retry_after: float | None = None
) -> APIError:
    """The error for a ``metav1.Status`` failure body (also watch ``ERROR`` events)."""
    raw_code = status.get("code")
    code = raw_code if isinstance(raw_code, int) and raw_code >= 400 else fallback_code
    reason = status.get("reason") if isinstance(status.get("reason"), str) else None
    message = status.get("message") if isinstance(status.get("message"), str) else ""
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    if code >= 500 and reason in ("Timeout", "ServerTimeout"):
        return ServerTimeout(
            str(message), reason=reason, details=details, retry_after=retry_after, code=code
        )
    return error_for_status(
        code, str(message), reason=reason, details=details, retry_after=retry_after
    )


def error_from_response(
    code: int,
    body: bytes,
    headers: Mapping[str, str],
    *,
    what: str = "request",
) -> APIError:
    """The error for an HTTP error answer: status code, Status body, Retry-After."""
    retry_after = parse_retry_after(headers.get("Retry-After"))
    status = _decode_status(body)
    if status is not None and status.get("kind") == "Status":
        err = error_from_status_object(status, fallback_code=code, retry_after=retry_after)
        if err.code != code:
            # The HTTP status is authoritative; the body's code only refines it.
            err = error_from_status_object(
                {**status, "code": code}, fallback_code=code, retry_after=retry_after
            )
    else:
        text = body[:300].decode("utf-8", "replace").strip()
        message = f"{what}: HTTP {code}" + (f": {text}" if text else "")
        err = error_from_status_object(
            {"code": code, "message": message}, fallback_code=code, retry_after=retry_after
        )
    if code in (401, 403):
        cls = Unauthorized if code == 401 else Forbidden
        return cls(
            _hint(code, err.message, what),
            reason=err.reason,
            details=err.details,
            retry_after=retry_after,
            code=code,
        )
    return err


def error_from_exception(exc: BaseException, *, host: str, what: str = "request") -> APIError:
    """The error for a request that got no HTTP answer (connection, TLS, timeout)."""
    from ownergc_backends.kube._http1 import ConnectFailed

    # aiohttp's exceptions only where aiohttp is loaded (it serves watches and proxies).
    aiohttp: Any = sys.modules.get("aiohttp")
    cert_errors: tuple[type[BaseException], ...] = ()
    ssl_errors: tuple[type[BaseException], ...] = (ssl.SSLError,)
    connect_errors: tuple[type[BaseException], ...] = (ConnectFailed,)
    client_errors: tuple[type[BaseException], ...] = ()
    if aiohttp is not None:
        cert_errors = (aiohttp.ClientConnectorCertificateError,)
        ssl_errors += (aiohttp.ClientSSLError,)
        connect_errors += (aiohttp.ClientConnectorError,)
        client_errors = (aiohttp.ClientError,)

    cert_error: BaseException | None = None
    if isinstance(exc, cert_errors):
        cert_error = getattr(exc, "certificate_error", exc)
    elif isinstance(exc, ssl.SSLCertVerificationError):
        cert_error = exc
    if cert_error is not None:
        return Unavailable(
            f"{what}: TLS certificate verification failed for {host}: {cert_error}. "
            "Check certificate-authority(-data) of the kubeconfig cluster, or the server's "
            "certificate (hostname, expiry).",
            reason="TLSError",
        )
    if isinstance(exc, ssl_errors):
        return Unavailable(
            f"{what}: TLS handshake with {host} failed: {exc}. Check the kubeconfig's "
            "client certificate/key and the cluster CA.",
            reason="TLSError",
        )
    if isinstance(exc, connect_errors):
        return Unavailable(
            f"{what}: cannot connect to the apiserver at {host}: "
            f"{getattr(exc, 'os_error', None) or exc}. "
            "Is the cluster running and does the kubeconfig point at it?",
            reason="ConnectionError",
        )
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Unavailable(
            f"{what}: no answer from {host} in time (client-side timeout)",
            reason="Timeout",
        )
    if isinstance(exc, client_errors):
        return Unavailable(
            f"{what}: connection to {host} failed: {type(exc).__name__}: {exc}",
            reason="ConnectionError",
        )
    if isinstance(exc, OSError):
        return Unavailable(f"{what}: {host}: {exc}", reason="ConnectionError")
    return Unavailable(f"{what}: {host}: {type(exc).__name__}: {exc}")
