"""``FaultyStore``: an :class:`~ownergc.protocols.ObjectStore` wrapper that injects faults.

Wrap any ObjectStore (the in-memory store, a KubeStore, another wrapper) and
hand the wrapper to the code under test::

    from ownergc.testing.faults import FaultRates, FaultyStore

    faulty = FaultyStore(store, seed=1234, rates=FaultRates.uniform(0.1))
    gc = GarbageCollector(faulty)
    ...
    print(faulty.counts())          # what was injected, by kind
    faulty.enabled = False          # heal: from now on every call goes through

Every fault is one a real kube-apiserver (or the network in front of it) can
produce, with the side effects it would have:

============================  ===========================================================
kind                          what the caller sees, and what happened on the server
============================  ===========================================================
``conflict``                  A concurrent writer touched the target object just before
                              this write (a real merge patch adding the annotation
                              :data:`TOUCH_ANNOTATION`, so resourceVersion moves and a
                              MODIFIED event is sent). The write is then forwarded: if it
                              carries a resourceVersion precondition (DELETE
                              preconditions, ``metadata.resourceVersion`` in a patch) the
                              server answers 409 and nothing is applied. A PATCH without
                              one gets a 409 without being applied (kube-apiserver gives
                              up after 5 internal retries on contention). A DELETE
                              without one goes through: the apiserver retries those
                              internally until they succeed.
``too_many_requests``         429 with ``retry_after`` (max-in-flight / priority and
                              fairness rejected it before any handler ran). Not applied.
``server_error``              500. Not applied (an internal error before storage; the
                              "maybe applied" case is ``timeout``).
``timeout``                   :class:`~ownergc.errors.ServerTimeout` (504) or
                              :class:`~ownergc.errors.Unavailable` (connection lost). For
                              writes the request was applied or not, with equal
                              probability: the nasty real case where only a re-read tells.
``drop_watch``                A watch stream ends early (before its first event or after
                              any event), as when a connection or a load balancer drops.
``expire_watch``              A watch raises :class:`~ownergc.errors.ResourceExpired` at
                              its start or mid-stream (410: the client fell behind the
                              watch window / etcd compaction); the caller must relist.
``duplicate_events``          After an event, the stream replays the last 1..``max_replay``
                              events it delivered, in their order, then carries on. This
                              is what a client sees when its watch is re-established from
                              an older resourceVersion than the last one it processed
                              (informer restart, reconnect to a lagging apiserver). The
                              replayed events are genuine past states, in order; the
                              consumer's view goes back in time briefly and then catches
                              up again.
``reorder_events``            The stream holds its next event for up to ``max_lag``
                              seconds. Events of *one* watch are never reordered (a real
                              watch delivers one resource's changes in resourceVersion
                              order, and the ObjectStore contract promises it), but
                              separate watches are independent streams: a lagging stream
                              lets other resources' later events overtake its earlier
                              ones. That cross-resource reordering is the one real
                              clusters show (e.g. a Pod's ADDED before its owner
                              ReplicaSet's), so it is the one injected here.
``latency``                   ``anyio.sleep`` of up to ``max_latency`` before a request,
                              and for writes also after it was applied (before the
                              answer), which widens every read-decide-write race window.
============================  ===========================================================

What is deliberately *not* injected: reordering inside one watch stream,
dropping single events from a stream that goes on, or answering a write with
success without applying it. A real apiserver never does these, and no
client (client-go's informers included) could be correct if it did.

Determinism. Each decision draws from a :class:`random.Random` seeded with
the seed plus the call's key (verb, resource, namespace, name and how many
calls with that key came before; for watches also the resourceVersion it
starts from), so the faults a given request gets do not depend on how many
*other* requests ran before it. A run with the same seed and the same
sequence of calls per key therefore gets exactly the same faults. Task
scheduling is not deterministic, though (several workers, latency and
watches interleave differently from run to run), so a run with a concurrent
caller such as the GarbageCollector is reproducible in its faults per call,
not in its exact interleaving; the :attr:`FaultyStore.log` says what
happened in a given run.
"""

from __future__ import annotations

from ._kinds import TOUCH_ANNOTATION, FaultKind, FaultRates, InjectedFault
from ._runtime import FaultyRuntime
from ._store import FaultyStore

__all__ = [
    "TOUCH_ANNOTATION",
    "FaultKind",
    "FaultRates",
    "FaultyRuntime",
    "FaultyStore",
    "InjectedFault",
]
