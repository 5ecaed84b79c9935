"""Unit tests of the kube backend's pure parts: discovery parsing, error
translation, Retry-After, the token bucket (fake clock) and config loading."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import aiohttp
import pytest
import yaml

from ownergc.errors import (
    AlreadyExists,
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    ResourceExpired,
    ServerError,
    ServerTimeout,
    TooManyRequests,
    Unauthorized,
    Unavailable,
    UnsupportedPatchType,
)
from ownergc.protocols import APIResource
from ownergc_backends.kube import KubeConfigError, KubeStore, TokenBucket, kubeconfig_paths
from ownergc_backends.kube._discovery import (
    GroupVersion,
    group_versions_from_api_versions,
    group_versions_from_group_list,
    parse_aggregated,
    parse_resource_list,
)
from ownergc_backends.kube._errors import (
    error_from_exception,
    error_from_response,
    error_from_status_object,
    parse_retry_after,
)

REPO = Path(__file__).resolve().parents[2]

# -- discovery ------------------------------------------------------------------


def test_core_and_group_versions_with_preferred() -> None:
    assert group_versions_from_api_versions({"kind": "APIVersions", "versions": ["v1"]}) == [
        GroupVersion("", "v1", True)
    ]
    groups = {
        "kind": "APIGroupList",
        "groups": [
            {
                "name": "autoscaling",
                "versions": [
                    {"groupVersion": "autoscaling/v2", "version": "v2"},
                    {"groupVersion": "autoscaling/v1", "version": "v1"},
                ],
                "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"},
            },
            {"name": "example.com", "versions": [{"groupVersion": "example.com/v1beta1"}]},
        ],
    }
    gvs = group_versions_from_group_list(groups)
    assert gvs == [
        GroupVersion("autoscaling", "v2", True),
        GroupVersion("autoscaling", "v1", False),
        GroupVersion("example.com", "v1beta1", True),
    ]
    assert gvs[0].path == "/apis/autoscaling/v2"
    assert GroupVersion("", "v1", True).path == "/api/v1"


def test_resource_list_drops_subresources() -> None:
    body = {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {"name": "pods", "namespaced": True, "kind": "Pod", "verbs": ["get", "list"]},
            {"name": "pods/status", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
            {"name": "nodes", "namespaced": False, "kind": "Node", "verbs": ["delete"]},
        ],
    }
    got = parse_resource_list(body, GroupVersion("", "v1", True))
    assert got == [
        APIResource("", "v1", "pods", "Pod", True, frozenset({"get", "list"}), True),
        APIResource("", "v1", "nodes", "Node", False, frozenset({"delete"}), True),
    ]


def test_aggregated_discovery_and_stale_versions() -> None:
    apis = {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "items": [
            {
                "metadata": {"name": "apps"},
                "versions": [
                    {
                        "version": "v1",
                        "freshness": "Current",
                        "resources": [
                            {
                                "resource": "deployments",
                                "responseKind": {"group": "", "version": "", "kind": "Deployment"},
                                "scope": "Namespaced",
                                "verbs": ["delete", "list", "watch"],
                                "subresources": [{"subresource": "scale"}],
                            }
                        ],
                    }
                ],
            },
            {
                "metadata": {"name": "metrics.k8s.io"},
                "versions": [{"version": "v1beta1", "freshness": "Stale", "resources": []}],
            },
        ],
    }
    core = {
        "kind": "APIGroupDiscoveryList",
        "items": [
            {
                "metadata": {},
                "versions": [
                    {
                        "version": "v1",
                        "resources": [
                            {
                                "resource": "nodes",
                                "responseKind": {"kind": "Node"},
                                "scope": "Cluster",
                                "verbs": ["get"],
                            }
                        ],
                    }
                ],
            }
        ],
    }
    resources, failed = parse_aggregated([core, apis])
    assert resources == [
        APIResource("", "v1", "nodes", "Node", False, frozenset({"get"}), True),
        APIResource(
            "apps", "v1", "deployments", "Deployment", True, frozenset({"delete", "list", "watch"})
        ),
    ]
    assert list(failed) == ["metrics.k8s.io/v1beta1"]


# -- error translation ------------------------------------------------------------


def _status(code: int, reason: str, message: str = "m") -> bytes:
    import json

    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }
    ).encode()


@pytest.mark.parametrize(
    ("code", "reason", "cls"),
    [
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (409, "AlreadyExists", AlreadyExists),
        (410, "Expired", ResourceExpired),
        (415, "UnsupportedMediaType", UnsupportedPatchType),
        (422, "Invalid", Invalid),
        (429, "TooManyRequests", TooManyRequests),
        (500, "InternalError", ServerError),
        (503, "ServiceUnavailable", ServerError),
        (504, "Timeout", ServerTimeout),
        (500, "ServerTimeout", ServerTimeout),
        (401, "Unauthorized", Unauthorized),
        (403, "Forbidden", Forbidden),
    ],
)
def test_status_bodies_map_to_the_error_tree(code: int, reason: str, cls: type) -> None:
    err = error_from_response(code, _status(code, reason, "why"), {}, what="GET /x")
    assert type(err) is cls
    assert err.code == code
    assert err.reason == reason
    assert "why" in err.message


def test_auth_failures_say_what_to_check() -> None:
    err = error_from_response(401, _status(401, "Unauthorized", "Unauthorized"), {})
    assert "credentials" in err.message and "kubeconfig" in err.message
    err = error_from_response(403, _status(403, "Forbidden", 'pods is forbidden: User "x"'), {})
    assert "RBAC" in err.message and 'User "x"' in err.message


def test_non_status_body_and_retry_after() -> None:
    err = error_from_response(429, b"<html>slow down</html>", {"Retry-After": "3"})
    assert isinstance(err, TooManyRequests) and err.retry_after == 3.0
    assert "slow down" in err.message
    err = error_from_response(502, b"", {})
    assert type(err) is ServerError and err.code == 502


def test_http_status_wins_over_body_code() -> None:
    err = error_from_response(404, _status(500, "InternalError"), {})
    assert isinstance(err, NotFound)


def test_watch_error_event_status() -> None:
    err = error_from_status_object({"kind": "Status", "code": 410, "reason": "Expired"})
    assert isinstance(err, ResourceExpired)


def test_retry_after_forms() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 0.5 ") == 0.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = datetime(2024, 1, 1, 0, 0, 0, tzinfo=timezone.utc)
    assert parse_retry_after("Mon, 01 Jan 2024 00:00:07 GMT", now=now) == 7.0


def test_client_exceptions_become_unavailable() -> None:
    host = "https://10.0.0.1:6443"
    err = error_from_exception(asyncio.TimeoutError(), host=host)
    assert isinstance(err, Unavailable) and "timeout" in err.message
    err = error_from_exception(aiohttp.ServerDisconnectedError(), host=host)
    assert isinstance(err, Unavailable) and host in err.message
    err = error_from_exception(ConnectionResetError("reset"), host=host)
    assert isinstance(err, Unavailable)


# -- token bucket (fake clock) ----------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.mark.anyio
async def test_token_bucket_burst_then_qps() -> None:
    t = FakeTime()
    bucket = TokenBucket(10, 5, clock=t.clock, sleep=t.sleep)
    for _ in range(5):
        assert await bucket.acquire() == 0.0
    assert t.slept == []
    # The 6th..15th requests each wait one refill interval (0.1 s).
    for _ in range(10):
        await bucket.acquire()
    assert t.now == pytest.approx(1.0)
    assert bucket.throttled == 10
    # 15 requests in 1.0 s of fake time: burst + qps * elapsed.
    t.now += 10.0  # idle refills only up to burst
    for _ in range(5):
        assert await bucket.acquire() == 0.0
    assert await bucket.acquire() == pytest.approx(0.1)


@pytest.mark.anyio
async def test_token_bucket_reservations_queue_in_order() -> None:
    t = FakeTime()
    bucket = TokenBucket(2, 1, clock=t.clock, sleep=t.sleep)
    waits = [bucket.reserve() for _ in range(4)]
    assert waits == [0.0, 0.5, 1.0, 1.5]
    bucket.cancel_reservation()
    assert bucket.reserve() == 1.5


def test_token_bucket_disabled() -> None:
    bucket = TokenBucket(0, 0)
    assert not bucket.enabled
    assert [bucket.reserve() for _ in range(100)] == [0.0] * 100
    with pytest.raises(ValueError):
        TokenBucket(5, 0)


# -- configuration ---------------------------------------------------------------


def _kubeconfig(server: str, *, name: str = "c", token: str = "t") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


@pytest.fixture
def no_ambient_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


@pytest.mark.anyio
async def test_no_config_anywhere_says_how_to_connect(no_ambient_config: Path) -> None:
    with pytest.raises(KubeConfigError) as info:
        await KubeStore.from_config()
    msg = str(info.value)
    assert "--kubeconfig" in msg and "KUBECONFIG" in msg and "inside a cluster" in msg
    with pytest.raises(KubeConfigError, match="no kubeconfig found"):
        await KubeStore.from_kubeconfig(no_ambient_config / "missing.yaml")


@pytest.mark.anyio
async def test_kubeconfig_env_list_and_context(
    no_ambient_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = no_ambient_config / "a.yaml"
    b = no_ambient_config / "b.yaml"
    a.write_text(yaml.safe_dump(_kubeconfig("http://127.0.0.1:1111", name="one")))
    b.write_text(yaml.safe_dump(_kubeconfig("http://127.0.0.1:2222", name="two")))
    missing = no_ambient_config / "nope.yaml"
    monkeypatch.setenv("KUBECONFIG", f"{missing}:{a}:{b}")
    assert kubeconfig_paths() == [str(missing), str(a), str(b)]
    async with await KubeStore.from_config() as store:
        # kubectl's merge: the first file to set current-context wins (the
        # ``kubernetes`` package's loader took the last one's).
        assert store.host == "http://127.0.0.1:1111"
    async with await KubeStore.from_config(context="two") as store:
        assert store.host == "http://127.0.0.1:2222"
    with pytest.raises(KubeConfigError, match="invalid cluster configuration"):
        await KubeStore.from_config(context="three")


@pytest.mark.anyio
async def test_explicit_path_and_broken_file(no_ambient_config: Path) -> None:
    good = no_ambient_config / "good.yaml"
    good.write_text(yaml.safe_dump(_kubeconfig("http://127.0.0.1:3333")))
    async with await KubeStore.from_kubeconfig(good, qps=7, burst=3) as store:
        assert store.host == "http://127.0.0.1:3333"
        assert (store.rate_limiter.qps, store.rate_limiter.burst) == (7.0, 3)
    bad = no_ambient_config / "bad.yaml"
    bad.write_text("clusters: [\n")
    with pytest.raises(KubeConfigError, match="cannot load"):
        await KubeStore.from_kubeconfig(bad)


@pytest.mark.anyio
async def test_in_cluster_needs_service_account(
    no_ambient_config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(KubeConfigError, match="not running inside"):
        await KubeStore.from_config()


def test_importing_ownergc_does_not_import_kubernetes() -> None:
    code = (
        "import sys, ownergc, ownergc.controller, ownergc.protocols, ownergc_backends.memory\n"
        "bad = [m for m in ('kubernetes', 'aiohttp') if m in sys.modules]\n"
        "assert not bad, bad\n"
        "from ownergc_backends.kube import KubeStore\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)
