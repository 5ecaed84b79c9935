"""Admission webhooks as kube-apiserver calls them (admission.k8s.io/v1).

The apiserver's ``MutatingAdmissionWebhook`` and ``ValidatingAdmissionWebhook``
plugins, for the facade's admission chain: for each write, find the webhooks of
the stored ``MutatingWebhookConfiguration`` / ``ValidatingWebhookConfiguration``
objects whose rules, scope, ``namespaceSelector`` and ``objectSelector`` match
(with ``matchPolicy: Equivalent`` across the versions of one resource), send
each an ``AdmissionReview``, and act on the answers: JSONPatch patches from
mutating hooks applied in order, denials turned into the error the client
sees (``admission webhook "x" denied the request: …``), warnings passed on,
``failurePolicy`` on a call that fails, ``sideEffects`` checked on dry run.

What is not done, and said in docs/serve.md: ``matchConditions`` (CEL) are not
evaluated (the webhook is called as if they matched), ``reinvocationPolicy:
IfNeeded`` is treated as ``Never``, an object matched through an equivalent
version is sent with only its ``apiVersion`` changed (exact for custom
resources, whose versions differ only in name unless a conversion webhook
is involved; a v1beta3 PriorityLevelConfiguration, the one built-in whose
versions differ, is converted as :mod:`._conversion` says, and a mutating hook's
patch to it is defaulted in the hook's version as the server decodes it; other
kinds' patched objects are not defaulted again here, the store defaults
them), and a ``service`` client config is reached through its
Endpoints' first address (serve has no cluster network).

Matching is pure (``matching_webhooks``); the calls go through a
``WebhookCaller`` so the tests can count them and the dispatcher never holds
a socket itself.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import json
import ssl
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

import anyio
import anyio.abc

from ownergc._kit.jsonio import loads
from ownergc.errors import APIError, BadRequest, Forbidden, ServerError
from ownergc.protocols import JSONDict

from ._conversion import CONVERTED, from_storage, to_storage
from ._defaults import apply_defaults
from ._negotiation import _encode
from ._patch import apply_json_patch, copy_json
from ._selectors import label_selector_matches as selects_labels

__all__ = [
    "AdmissionAttributes",
    "CallFailed",
    "KeptConnections",
    "MatchedWebhook",
    "WebhookAdmission",
    "WebhookCaller",
    "WebhookSource",
    "label_selector_matches",
    "matching_webhooks",
]

REVIEW_VERSION: Final = "admission.k8s.io/v1"
REGISTRATION: Final = "admissionregistration.k8s.io"
#: Requests on these are never sent to webhooks, or a bad hook could lock itself in.
_EXEMPT: Final = frozenset(
    {
        (REGISTRATION, "mutatingwebhookconfigurations"),
        (REGISTRATION, "validatingwebhookconfigurations"),
        (REGISTRATION, "validatingadmissionpolicies"),
        (REGISTRATION, "validatingadmissionpolicybindings"),
        (REGISTRATION, "mutatingadmissionpolicies"),
        (REGISTRATION, "mutatingadmissionpolicybindings"),
    }
)
DEFAULT_TIMEOUT: Final = 10


@dataclass(frozen=True)
class AdmissionAttributes:
    """One write as admission sees it (k8s.io/apiserver's ``admission.Attributes``)."""

    operation: str  # CREATE, UPDATE, DELETE, CONNECT
    group: str
    version: str
    resource: str
    kind: str
    namespace: str  # "" for cluster-scoped objects
    name: str
    object: JSONDict | None
    old_object: JSONDict | None = None
    subresource: str = ""
    dry_run: bool = False
    options: JSONDict | None = None
    user_info: JSONDict = field(
        default_factory=lambda: {"username": "system:admin", "groups": ["system:masters"]}
    )
    #: (group, version) of ``kind`` when it is not the resource's: a subresource with a kind
    #: of its own (``pods/eviction`` takes a policy/v1 ``Eviction``). None: the resource's.
    kind_group_version: tuple[str, str] | None = None

    @property
    def request_kind(self) -> JSONDict:
        """The ``requestKind`` of the review: the kind the request carried."""
        group, version = self.kind_group_version or (self.group, self.version)
        return {"group": group, "version": version, "kind": self.kind}


@dataclass(frozen=True)
class MatchedWebhook:
    """A webhook that applies to a request, and the resource it was matched as."""

    configuration: str
    webhook: JSONDict
    group: str
    version: str
    resource: str
    kind: str

    @property
    def name(self) -> str:
        return str(self.webhook.get("name", ""))


class WebhookSource(Protocol):
    """What the dispatcher reads from the cluster it admits for."""

    def webhook_configurations(self, kind: str) -> Sequence[JSONDict]:
        """The stored ``MutatingWebhookConfiguration`` or ``ValidatingWebhookConfiguration``
        objects (``kind`` names which)."""
        ...

    def namespace_labels(self, name: str) -> Mapping[str, str] | None:
        """The labels of namespace ``name``, or None when it does not exist."""
        ...

    def equivalents(self, group: str, resource: str) -> Sequence[tuple[str, str, str, str]]:
        """(group, version, resource, kind) of every served version of the same resource."""
        ...

    def service_address(self, namespace: str, name: str, port: int) -> tuple[str, int] | None:
        """Where a Service's webhook is reached (its Endpoints), or None."""
        ...


class CallFailed(Exception):
    """A webhook call that produced no usable answer (subject to ``failurePolicy``)."""


#: (url, TLS context or None for http, server name for SNI, body, timeout) -> (status, body)
WebhookCaller = Callable[
    [str, "ssl.SSLContext | None", str, bytes, float], Awaitable[tuple[int, bytes]]
]


# -- matching (pure) ---------------------------------------------------------------------


def label_selector_matches(selector: JSONDict | None, labels: Mapping[str, str]) -> bool:
    """A webhook's ``metav1.LabelSelector`` against labels: empty or absent matches
    everything, one that does not parse nothing (see ``_selectors``)."""
    if not selector:
        return True
    return selects_labels(selector, labels)


def _listed(values: Iterable[Any] | None, value: str) -> bool:
    listed = [str(v) for v in values or ()]
    return "*" in listed or value in listed


def _resource_listed(patterns: Iterable[Any] | None, resource: str, subresource: str) -> bool:
    for pattern in patterns or ():
        res, _, sub = str(pattern).partition("/")
        if (res in ("*", resource)) and (sub == "*" or sub == subresource):
            return True
    return False


def _rule_matches(
    rule: JSONDict, attrs: AdmissionAttributes, group: str, version: str, resource: str
) -> bool:
    if not _listed(rule.get("operations"), attrs.operation):
        return False
    if not (_listed(rule.get("apiGroups"), group) and _listed(rule.get("apiVersions"), version)):
        return False
    if not _resource_listed(rule.get("resources"), resource, attrs.subresource):
        return False
    scope = rule.get("scope") or "*"
    cluster_scoped = attrs.namespace == "" or (group == "" and resource == "namespaces")
    if scope == "Cluster":
        return cluster_scoped
    if scope == "Namespaced":
        return not cluster_scoped
    return True


def _object_labels(obj: JSONDict | None) -> Mapping[str, str] | None:
    if obj is None:
        return None
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return labels if isinstance(labels, dict) else {}


def _selectors_match(webhook: JSONDict, attrs: AdmissionAttributes, source: WebhookSource) -> bool:
    namespace_selector = webhook.get("namespaceSelector")
    if namespace_selector:
        if attrs.group == "" and attrs.resource == "namespaces":
            # A Namespace itself is matched by its own labels.
            labels = _object_labels(attrs.object) or _object_labels(attrs.old_object) or {}
            if not label_selector_matches(namespace_selector, labels):
                return False
        elif attrs.namespace:
            ns_labels = source.namespace_labels(attrs.namespace)
            if not label_selector_matches(namespace_selector, ns_labels or {}):
                return False
    object_selector = webhook.get("objectSelector")
    if object_selector:
        candidates = [
            labels
            for labels in (_object_labels(attrs.object), _object_labels(attrs.old_object))
            if labels is not None
        ]
        if not any(label_selector_matches(object_selector, labels) for labels in candidates):
            return False
    return True


def matching_webhooks(
    kind: str, attrs: AdmissionAttributes, source: WebhookSource
) -> list[MatchedWebhook]:
    """The webhooks of ``kind`` (``Mutating`` / ``Validating``) configurations that apply, in
    the order the apiserver calls them: configurations by name, webhooks as listed."""
    if (attrs.group, attrs.resource) in _EXEMPT:
        return []
    configurations = sorted(
        source.webhook_configurations(kind),
        key=lambda c: str((c.get("metadata") or {}).get("name", "")),
    )
    matched: list[MatchedWebhook] = []
    for configuration in configurations:
        config_name = str((configuration.get("metadata") or {}).get("name", ""))
        for webhook in configuration.get("webhooks") or ():
            found = _match_resource(webhook, attrs, source)
            if found is None or not _selectors_match(webhook, attrs, source):
                continue
            group, version, resource, kind_name = found
            matched.append(
                MatchedWebhook(config_name, webhook, group, version, resource, kind_name)
            )
    return matched


def _match_resource(
    webhook: JSONDict, attrs: AdmissionAttributes, source: WebhookSource
) -> tuple[str, str, str, str] | None:
    rules = webhook.get("rules") or ()
    exact = (attrs.group, attrs.version, attrs.resource, attrs.kind)
    if any(_rule_matches(rule, attrs, *exact[:3]) for rule in rules):
        return exact
    if (webhook.get("matchPolicy") or "Equivalent") != "Equivalent":
        return None
    for candidate in source.equivalents(attrs.group, attrs.resource):
        if candidate[:3] != exact[:3] and any(
            _rule_matches(rule, attrs, *candidate[:3]) for rule in rules
        ):
            return candidate
    return None


# -- the review --------------------------------------------------------------------------


def _as_version(obj: JSONDict | None, group: str, version: str) -> JSONDict | None:
    if obj is None:
        return None
    converted = dict(obj)
    converted["apiVersion"] = f"{group}/{version}" if group else version
    return converted


def _converts(group: str, resource: str, *versions: str) -> bool:
    """Whether an object of ``resource`` in one of ``versions`` differs from its stored
    form (:mod:`._conversion`: a v1beta3 PriorityLevelConfiguration)."""
    return (
        any((resource, v) in CONVERTED for v in versions)
        and group == "flowcontrol.apiserver.k8s.io"
    )


def _converted(
    obj: JSONDict | None, group: str, resource: str, written: str, read: str
) -> JSONDict | None:
    """``obj`` (in version ``written``) as the server converts it to ``read`` through its
    stored form: what a webhook registered for ``read`` sees of a v1beta3
    PriorityLevelConfiguration, or of another version's when matched as v1beta3 (the
    preserve-zero-shares annotation dropped, then added back where the shares are 0)."""
    if obj is None:
        return None
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = dict(meta)  # (to_storage changes it in place)
    to_storage(group, resource, written, out)
    from_storage(group, resource, read, out)
    out["apiVersion"] = f"{group}/{read}" if group else read
    return out


def review_objects(
    hook: MatchedWebhook, attrs: AdmissionAttributes
) -> tuple[JSONDict | None, JSONDict | None]:
    """The object and old object the webhook receives, in the version it was matched as."""
    if _converts(attrs.group, attrs.resource, attrs.version, hook.version):
        return (
            _converted(attrs.object, attrs.group, attrs.resource, attrs.version, hook.version),
            _converted(attrs.old_object, attrs.group, attrs.resource, attrs.version, hook.version),
        )
    if (hook.group, hook.version, hook.resource) == (attrs.group, attrs.version, attrs.resource):
        return attrs.object, attrs.old_object
    return (
        _as_version(attrs.object, hook.group, hook.version),
        _as_version(attrs.old_object, hook.group, hook.version),
    )


def admission_review(hook: MatchedWebhook, attrs: AdmissionAttributes, uid: str) -> JSONDict:
    """The ``AdmissionReview`` request a webhook receives for ``attrs``."""
    same = (hook.group, hook.version, hook.resource) == (attrs.group, attrs.version, attrs.resource)
    request_kind = attrs.request_kind
    obj, old_obj = review_objects(hook, attrs)
    request: JSONDict = {
        "uid": uid,
        "kind": request_kind
        if same
        else {"group": hook.group, "version": hook.version, "kind": hook.kind},
        "resource": {"group": hook.group, "version": hook.version, "resource": hook.resource},
        "requestKind": request_kind,
        "requestResource": {
            "group": attrs.group,
            "version": attrs.version,
            "resource": attrs.resource,
        },
        "name": attrs.name,
        "operation": attrs.operation,
        "userInfo": attrs.user_info,
        "object": obj,
        "oldObject": old_obj,
        "dryRun": attrs.dry_run,
        "options": attrs.options,
    }
    if attrs.subresource:
        request["subResource"] = attrs.subresource
        request["requestSubResource"] = attrs.subresource
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    return {"apiVersion": REVIEW_VERSION, "kind": "AdmissionReview", "request": request}


def denial(webhook_name: str, status: JSONDict | None) -> APIError:
    """The error a client gets when a webhook says no (code ≥ 400, the hook's message)."""
    status = status or {}
    denied_by = f'admission webhook "{webhook_name}" denied the request'
    message = str(status.get("message") or "")
    reason = str(status.get("reason") or "")
    if message:
        text = f"{denied_by}: {message}"
    elif reason:
        text = f"{denied_by}: {reason}"
    else:
        text = f"{denied_by} without explanation"
    code = status.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    kind: type[APIError] = {400: BadRequest, 403: Forbidden}.get(code, APIError)
    error = kind(text, code=code)
    error.reason = reason  # as the hook gave it: kubectl prints no "(Reason)" for ""
    return error


@dataclass
class AdmissionOutcome:
    """What admission leaves of a request: the (possibly patched) object and the warnings."""

    object: JSONDict | None
    warnings: list[str] = field(default_factory=list)


class WebhookAdmission:
    """Both webhook plugins over one ``WebhookSource``."""

    def __init__(self, source: WebhookSource, *, caller: WebhookCaller | None = None) -> None:
        self._source = source
        self._call = caller or KeptConnections()

    async def mutate(
        self, attrs: AdmissionAttributes, warnings: list[str] | None = None
    ) -> AdmissionOutcome:
        """Call the matching mutating webhooks in order; each sees the previous one's patch.
        Warnings go to ``warnings`` as they arrive (a denial keeps those before it)."""
        outcome = AdmissionOutcome(attrs.object, warnings if warnings is not None else [])
        for hook in matching_webhooks("Mutating", attrs, self._source):
            current = replace(attrs, object=outcome.object)
            response = await self._review(hook, current)
            if response is None:
                continue
            outcome.warnings.extend(_warnings(response))
            if not response.get("allowed"):
                raise denial(hook.name, response.get("status"))
            patch = response.get("patch")
            if patch and outcome.object is not None:
                outcome.object = self._mutated(hook, current, response)
        return outcome

    async def validate(
        self, attrs: AdmissionAttributes, warnings: list[str] | None = None
    ) -> list[str]:
        """Call the matching validating webhooks at once; the first (in order) to refuse wins.
        Warnings go to ``warnings`` (returned), those of a refusing hook included."""
        hooks = matching_webhooks("Validating", attrs, self._source)
        results: list[JSONDict | BaseException | None] = [None] * len(hooks)

        async def one(index: int, hook: MatchedWebhook) -> None:
            try:
                results[index] = await self._review(hook, attrs)
            except APIError as exc:
                results[index] = exc

        if len(hooks) == 1:  # the usual case: no task to start and wait for
            await one(0, hooks[0])
        elif hooks:
            async with anyio.create_task_group() as tg:
                for index, hook in enumerate(hooks):
                    tg.start_soon(one, index, hook)
        if warnings is None:
            warnings = []
        for hook, result in zip(hooks, results, strict=True):
            if isinstance(result, BaseException):
                raise result
            if result is None:
                continue
            warnings.extend(_warnings(result))
            if not result.get("allowed"):
                raise denial(hook.name, result.get("status"))
        return warnings

    def _mutated(
        self, hook: MatchedWebhook, attrs: AdmissionAttributes, response: JSONDict
    ) -> JSONDict:
        """The object after the hook's patch, in the request's version. The patch applies
        to the object as the hook saw it: for a converted kind, that one (then defaulted
        in the hook's version and converted back, as the server decodes the result);
        otherwise the request's object, whose matched version differs in name only."""
        assert attrs.object is not None
        if not _converts(attrs.group, attrs.resource, attrs.version, hook.version):
            return self._patched(hook, attrs.object, response)
        seen, _ = review_objects(hook, attrs)
        assert seen is not None
        patched = self._patched(hook, seen, response)
        apply_defaults(attrs.group, hook.version, attrs.resource, patched)
        back = _converted(patched, attrs.group, attrs.resource, hook.version, attrs.version)
        assert back is not None
        return back

    def _patched(self, hook: MatchedWebhook, obj: JSONDict, response: JSONDict) -> JSONDict:
        if response.get("patchType") != "JSONPatch":
            raise self._failure(hook, f"unsupported patch type {response.get('patchType')!r}")
        try:
            operations = json.loads(base64.b64decode(str(response["patch"])))
            patched = apply_json_patch(copy_json(obj), operations)
        except (ValueError, TypeError, APIError) as exc:
            raise self._failure(hook, f"the patch could not be applied: {exc}") from None
        if not isinstance(patched, dict):
            raise self._failure(hook, "the patch did not leave an object")
        return patched

    def _failure(self, hook: MatchedWebhook, why: str) -> APIError:
        return ServerError(
            f'Internal error occurred: failed calling webhook "{hook.name}": {why}',
            reason="InternalError",
        )

    async def _review(self, hook: MatchedWebhook, attrs: AdmissionAttributes) -> JSONDict | None:
        """The webhook's ``response``, or None where a failed call is ignored (``Ignore``)."""
        webhook = hook.webhook
        side_effects = webhook.get("sideEffects") or "Unknown"
        if attrs.dry_run and side_effects not in ("None", "NoneOnDryRun"):
            raise BadRequest(
                f'admission webhook "{hook.name}" does not support dry run', reason="BadRequest"
            )
        try:
            return await self._call_once(hook, attrs)
        except CallFailed as exc:
            if (webhook.get("failurePolicy") or "Fail") == "Ignore":
                return None
            raise self._failure(hook, str(exc)) from None

    async def _call_once(self, hook: MatchedWebhook, attrs: AdmissionAttributes) -> JSONDict:
        webhook = hook.webhook
        versions = webhook.get("admissionReviewVersions") or ()
        if "v1" not in versions:
            raise CallFailed(f"webhook does not accept v1 AdmissionReview (it lists {versions})")
        url, server_name = self._endpoint(webhook.get("clientConfig") or {})
        context = _tls_context((webhook.get("clientConfig") or {}).get("caBundle"))
        uid = str(uuid.uuid4())
        body = _encode(admission_review(hook, attrs, uid))
        timeout = webhook.get("timeoutSeconds")
        seconds = (
            float(timeout) if isinstance(timeout, int) and 1 <= timeout <= 30 else DEFAULT_TIMEOUT
        )
        try:
            if getattr(self._call, "enforces_timeout", False):  # no cancel scope of ours
                status, answer = await self._call(url, context, server_name, body, seconds)
            else:
                with anyio.fail_after(seconds):
                    status, answer = await self._call(url, context, server_name, body, seconds)
        except TimeoutError:
            raise CallFailed(f"Post {url!r}: context deadline exceeded") from None
        except (OSError, ssl.SSLError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            raise CallFailed(f"Post {url!r}: {exc}") from None
        if status != 200:
            raise CallFailed(f"expected response code 200 from {url!r}, got {status}")
        try:
            review = loads(answer)
            response = review["response"]
        except (ValueError, KeyError, TypeError):
            raise CallFailed("the answer is not an AdmissionReview with a response") from None
        if not isinstance(response, dict) or response.get("uid") != uid:
            raise CallFailed(
                f"expected response.uid={uid!r}, got {response.get('uid')!r}"
                if isinstance(response, dict)
                else "the response is not an object"
            )
        return response

    def _endpoint(self, config: JSONDict) -> tuple[str, str]:
        url = config.get("url")
        if isinstance(url, str) and url:
            parts = urlsplit(url)
            if parts.scheme != "https" or not parts.hostname:
                raise CallFailed(f"webhook URL {url!r} must be https://host[:port]/path")
            return url, parts.hostname
        service = config.get("service")
        if not isinstance(service, dict):
            raise CallFailed("the client config names neither a url nor a service")
        namespace, name = str(service.get("namespace", "")), str(service.get("name", ""))
        port = int(service.get("port") or 443)
        address = self._source.service_address(namespace, name, port)
        if address is None:
            raise CallFailed(
                f'service "{name}" in namespace "{namespace}" has no endpoints '
                "(serve has no cluster network: give the Service Endpoints)"
            )
        host, target = address
        path = str(service.get("path") or "/")
        return f"https://{host}:{target}{path}", f"{name}.{namespace}.svc"


def _warnings(response: JSONDict) -> list[str]:
    return [str(w) for w in response.get("warnings") or () if str(w)]


def _tls_context(ca_bundle: Any) -> ssl.SSLContext:
    return _context_for(str(ca_bundle) if ca_bundle else "")


@functools.lru_cache(maxsize=64)
def _context_for(ca_bundle: str) -> ssl.SSLContext:
    """One TLS context per caBundle, kept: loading certificates costs milliseconds, and a
    context is what lets a kept connection's session be reused."""
    if not ca_bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(ca_bundle).decode()
        return ssl.create_default_context(cadata=pem)
    except (ValueError, ssl.SSLError) as exc:
        raise CallFailed(f"the caBundle is not PEM certificates: {exc}") from None


class _Kept:
    """One open connection to a webhook and its HTTP/1.1 state (anyio streams)."""

    __slots__ = ("h11", "stream")

    def __init__(self, stream: anyio.abc.ByteStream, connection: Any) -> None:
        self.stream = stream
        self.h11 = connection


class _KeptProtocol(asyncio.Protocol):
    """One open connection to a webhook on asyncio: the answer is parsed (h11) in the
    transport's callbacks as it arrives, and the caller waits on one future."""

    __slots__ = ("answered", "chunks", "h11", "loop", "lost", "status", "transport", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        import h11

        self.loop = loop
        self.h11 = h11.Connection(h11.CLIENT)
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.status = 0
        self.chunks: list[bytes] = []
        self.answered = False
        #: Closed (by either side): never reused.
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            self.h11.receive_data(data)
        except RuntimeError as exc:  # data after the end of the stream
            self._fail(exc)
            return
        if self.waiter is not None:
            self._pump()

    def eof_received(self) -> None:
        self._ended()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if exc is None:
            self._ended()
        if self.waiter is not None:  # cut off mid-answer
            self._fail(_Stale() if not self.answered else anyio.BrokenResourceError())

    def _ended(self) -> None:
        """The webhook closed its side: before any answer, the connection was stale."""
        self.lost = True
        if self.waiter is None:
            return
        if not self.answered:
            self._fail(_Stale())
            return
        with contextlib.suppress(RuntimeError):
            self.h11.receive_data(b"")
        self._pump()

    def _pump(self) -> None:
        import h11

        conn = self.h11
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    return
                self.answered = True
                kind = type(event)
                if kind is h11.Response:
                    self.status = event.status_code  # type: ignore[union-attr]
                elif kind is h11.Data:
                    self.chunks.append(bytes(event.data))  # type: ignore[union-attr]
                elif kind is h11.EndOfMessage or kind is h11.ConnectionClosed:
                    waiter, self.waiter = self.waiter, None
                    if waiter is not None and not waiter.done():
                        waiter.set_result(None)
                    return
        except Exception as exc:  # a protocol error mid-answer
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    def abort(self) -> None:
        self.lost = True
        self.waiter = None
        if self.transport is not None:
            self.transport.abort()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


def _running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # another event loop (trio)
        return None


class KeptConnections:
    """The default :data:`WebhookCaller`: HTTPS POSTs over kept-alive connections.

    kube-apiserver keeps its connections to a webhook open and sends review
    after review down them; a TLS handshake per review would cost the write
    more than the webhook's answer. Idle connections are kept per (host, port,
    TLS context, server name), as many as were needed at once (up to
    :attr:`max_idle`); one that the webhook closed meanwhile is replaced once,
    and one interrupted by a timeout is closed, never reused.

    On asyncio a connection is a protocol on the loop's own (TLS) transport: the
    review is written at once and the caller waits on one future, resolved when
    the whole answer has been parsed, with the deadline a timer (the caller adds
    no cancel scope: :attr:`enforces_timeout`). Elsewhere (trio), anyio streams.
    """

    #: Idle connections kept per webhook endpoint: enough for the writes an apiserver
    #: admits at once (fewer would mean a TLS handshake for each review beyond them).
    max_idle = 1024
    #: The call itself ends at its ``timeout`` (raising TimeoutError).
    enforces_timeout = True

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int, int, str], list[Any]] = {}

    async def aclose(self) -> None:
        """Close every idle connection (those in use close when their call ends)."""
        idle, self._idle = self._idle, {}
        for kept in (k for conns in idle.values() for k in conns):
            if isinstance(kept, _KeptProtocol):
                kept.abort()
            else:
                await anyio.aclose_forcefully(kept.stream)

    async def __call__(
        self,
        url: str,
        context: ssl.SSLContext | None,
        server_name: str,
        body: bytes,
        timeout: float,
    ) -> tuple[int, bytes]:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        key = (host, port, id(context), server_name)
        loop = _running_asyncio_loop()
        if loop is not None:
            return await self._call_asyncio(
                loop, key, context, parts.netloc, target, body, loop.time() + timeout
            )
        with anyio.fail_after(timeout):
            return await self._call_anyio(key, context, parts.netloc, target, body)

    # -- asyncio --------------------------------------------------------------------------

    async def _call_asyncio(
        self,
        loop: asyncio.AbstractEventLoop,
        key: tuple[str, int, int, str],
        context: ssl.SSLContext | None,
        netloc: str,
        target: str,
        body: bytes,
        deadline: float,
    ) -> tuple[int, bytes]:
        idle = self._idle.get(key)
        while idle:
            kept = idle.pop()
            if not isinstance(kept, _KeptProtocol) or kept.lost or kept.loop is not loop:
                continue  # closed while idle (or kept by another event loop): forget it
            try:
                return await self._exchange_asyncio(kept, key, netloc, target, body, deadline)
            except _Stale:
                continue  # closed by the webhook as the review went out: take another one
        host, port, _, server_name = key
        with anyio.fail_after(max(deadline - loop.time(), 0.0)):  # connecting: rare
            _, kept = await loop.create_connection(
                lambda: _KeptProtocol(loop),
                host,
                port,
                ssl=context,
                server_hostname=(server_name or host) if context is not None else None,
            )
        try:
            return await self._exchange_asyncio(kept, key, netloc, target, body, deadline)
        except _Stale as exc:
            raise anyio.EndOfStream() from exc

    async def _exchange_asyncio(
        self,
        kept: _KeptProtocol,
        key: tuple[str, int, int, str],
        netloc: str,
        target: str,
        body: bytes,
        deadline: float,
    ) -> tuple[int, bytes]:
        import h11

        connection = kept.h11
        assert kept.transport is not None
        waiter = kept.loop.create_future()
        kept.waiter = waiter
        kept.status = 0
        kept.chunks = []
        kept.answered = False
        timer = kept.loop.call_at(deadline, _expire, waiter)
        try:
            kept.transport.write(_request_bytes(connection, netloc, target, body))
            kept._pump()  # bytes the webhook sent before it was asked, if any
            await waiter
        except BaseException:
            # Stale, a timeout (or cancellation), a protocol error: never reuse it.
            kept.abort()
            raise
        finally:
            timer.cancel()
        answer = b"".join(kept.chunks)
        status = kept.status
        if connection.our_state is h11.DONE and connection.their_state is h11.DONE:
            connection.start_next_cycle()
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.max_idle and not kept.lost:
                idle.append(kept)
                return status, answer
        kept.abort()
        return status, answer

    # -- anyio (other event loops) --------------------------------------------------------

    async def _call_anyio(
        self,
        key: tuple[str, int, int, str],
        context: ssl.SSLContext | None,
        netloc: str,
        target: str,
        body: bytes,
    ) -> tuple[int, bytes]:
        idle = self._idle.setdefault(key, [])
        while idle:
            kept = idle.pop()
            if not isinstance(kept, _Kept):
                continue
            try:
                return await self._exchange(kept, key, netloc, target, body)
            except _Stale:
                continue  # closed by the webhook while idle: take another one
        host, port, _, server_name = key
        kept = await self._connect(host, port, context, server_name)
        try:
            return await self._exchange(kept, key, netloc, target, body)
        except _Stale as exc:
            raise anyio.EndOfStream() from exc

    @staticmethod
    async def _connect(
        host: str, port: int, context: ssl.SSLContext | None, server_name: str
    ) -> _Kept:
        import h11

        if context is not None:
            stream: anyio.abc.ByteStream = await anyio.connect_tcp(
                host,
                port,
                ssl_context=context,
                tls_standard_compatible=False,
                tls_hostname=server_name or host,
            )
        else:
            stream = await anyio.connect_tcp(host, port)
        return _Kept(stream, h11.Connection(h11.CLIENT))

    async def _exchange(
        self, kept: _Kept, key: tuple[str, int, int, str], netloc: str, target: str, body: bytes
    ) -> tuple[int, bytes]:
        import h11

        connection = kept.h11
        answered = False
        try:
            await kept.stream.send(_request_bytes(connection, netloc, target, body))
            status = 0
            chunks: list[bytes] = []
            while True:
                event = connection.next_event()
                if event is h11.NEED_DATA:
                    try:
                        received = await kept.stream.receive()
                    except anyio.EndOfStream:
                        received = b""
                    if not received and not answered:
                        raise _Stale()
                    connection.receive_data(received)
                    continue
                answered = True
                if isinstance(event, h11.Response):
                    status = event.status_code
                elif isinstance(event, h11.Data):
                    chunks.append(bytes(event.data))
                elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                    break
        except _Stale:
            await anyio.aclose_forcefully(kept.stream)
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            await anyio.aclose_forcefully(kept.stream)
            if not answered:
                raise _Stale() from exc
            raise
        except BaseException:
            # A timeout (cancellation) or a protocol error mid-answer: never reuse it.
            await anyio.aclose_forcefully(kept.stream)
            raise
        if connection.our_state is h11.DONE and connection.their_state is h11.DONE:
            connection.start_next_cycle()
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.max_idle:
                idle.append(kept)
                return status, b"".join(chunks)
        await anyio.aclose_forcefully(kept.stream)
        return status, b"".join(chunks)


def _request_bytes(connection: Any, netloc: str, target: str, body: bytes) -> bytes:
    """The POST of one review, head and body in one piece (one write, one TLS record)."""
    import h11

    headers = [
        ("Host", netloc),
        ("Content-Type", "application/json"),
        ("Accept", "application/json"),
        ("Content-Length", str(len(body))),
        ("User-Agent", "ownergc-serve-admission"),
    ]
    data = connection.send(h11.Request(method="POST", target=target, headers=headers)) or b""
    data += connection.send(h11.Data(data=body)) or b""
    data += connection.send(h11.EndOfMessage()) or b""
    return bytes(data)


class _Stale(Exception):
    """A kept connection the webhook closed before answering: retry on a new one."""
