"""A FlowSchema's ``Dangling`` condition, as kube-apiserver's APF configuration controller
keeps it.

A real kube-apiserver runs, inside itself, the API Priority and Fairness configuration
controller (``apf_controller.go`` of k8s.io/apiserver): whenever a FlowSchema or a
PriorityLevelConfiguration is added, deleted, or has its spec (for a FlowSchema: its
spec or its status) changed, it looks at every FlowSchema and, where its ``Dangling``
condition's status, reason or message is not what it should be, writes it through
``/status``:

* ``status: "True"``, ``reason: NotFound``, ``message: This FlowSchema references the
  PriorityLevelConfiguration object named "<name>" but there is no such object`` when
  ``spec.priorityLevelConfiguration.name`` names no PriorityLevelConfiguration;
* ``status: "False"``, ``reason: Found``, ``message: This FlowSchema references the
  PriorityLevelConfiguration object named "<name>" and it exists`` otherwise;
* ``lastTransitionTime``: when it writes. A condition whose status, reason and message
  are right is left alone (another ``lastTransitionTime`` too).

v1.30 writes it by server-side apply of that one condition, forced, as field manager
``api-priority-and-fairness-config-consumer-v1`` on the ``status`` subresource (a
client's other conditions stay); v1.20 merge-patched the whole list (other conditions
went) and did not react to a status-only change (tests/facade/test_flowschema_status.py
lists these differences with the recording).

serve does it synchronously, in the write that calls for it: right after a FlowSchema is
stored (created, or updated through the object or ``/status``), and after a
PriorityLevelConfiguration is created or removed (for each FlowSchema that names it). The
condition is a write of its own, as on a real server: a new resourceVersion and a
``MODIFIED`` event after the triggering write's ``ADDED``/``MODIFIED``; the answer to the
client is its own write's object (without the condition on a create), and the stored
object is one resourceVersion ahead of it, as a real server's usually is a moment later.
"""

from __future__ import annotations

from typing import Any, Final

from ownergc.protocols import JSONDict

from ._fieldmanager import ApplyConflict, ApplyError, apply, builtin_schema

__all__ = [
    "FLOWCONTROL",
    "MANAGER",
    "dangling_condition",
    "level_named",
    "with_dangling",
]

FLOWCONTROL: Final = "flowcontrol.apiserver.k8s.io"
#: The field manager of the controller's status writes (k8s.io/apiserver's
#: ``ConfigConsumerAsFieldManager``).
MANAGER: Final = "api-priority-and-fairness-config-consumer-v1"
#: The version the 1.30 controller's client writes in.
_APPLIED_VERSION: Final = f"{FLOWCONTROL}/v1"


def level_named(flow_schema: JSONDict) -> str:
    """The name of the PriorityLevelConfiguration a FlowSchema names ("" if none)."""
    spec = flow_schema.get("spec")
    ref = spec.get("priorityLevelConfiguration") if isinstance(spec, dict) else None
    name = ref.get("name") if isinstance(ref, dict) else None
    return name if isinstance(name, str) else ""


def dangling_condition(level: str, exists: bool, now: str) -> JSONDict:
    """The ``Dangling`` condition the controller writes, stamped ``now``."""
    named = f'This FlowSchema references the PriorityLevelConfiguration object named "{level}"'
    if exists:
        status, reason, message = "False", "Found", f"{named} and it exists"
    else:
        status, reason, message = "True", "NotFound", f"{named} but there is no such object"
    return {
        "type": "Dangling",
        "status": status,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def _current(flow_schema: JSONDict) -> Any:
    status = flow_schema.get("status")
    conditions = status.get("conditions") if isinstance(status, dict) else None
    for condition in conditions if isinstance(conditions, list) else ():
        if isinstance(condition, dict) and condition.get("type") == "Dangling":
            return condition
    return None


def with_dangling(flow_schema: JSONDict, exists: bool, now: str) -> JSONDict | None:
    """The FlowSchema as the controller's status write leaves it, or None when its
    condition is right already (status, reason and message; not the time).

    An object with managedFields gets the controller's ``Apply`` entry on ``status``
    (server-side apply of the condition alone, forced); one without (written through
    the Python store API, which tracks no managers) gets the condition in place of its
    own ``Dangling`` one, or after its other conditions."""
    level = level_named(flow_schema)
    wanted = dangling_condition(level, exists, now)
    current = _current(flow_schema)
    if isinstance(current, dict) and all(
        current.get(k) == wanted[k] for k in ("status", "reason", "message")
    ):
        return None
    meta = flow_schema.get("metadata")
    if isinstance(meta, dict) and meta.get("managedFields"):
        applied = {
            "apiVersion": _APPLIED_VERSION,
            "kind": "FlowSchema",
            "metadata": {"name": meta.get("name", "")},
            "status": {"conditions": [wanted]},
        }
        schema = builtin_schema(FLOWCONTROL, "v1", "FlowSchema")
        if schema is not None:
            try:
                result = apply(
                    flow_schema,
                    applied,
                    manager=MANAGER,
                    force=True,
                    schema=schema,
                    now=now,
                    subresource="status",
                )
            except ApplyError:
                result = None
            if result is not None and not isinstance(result, ApplyConflict):
                out = dict(result.object)
                out["apiVersion"] = flow_schema["apiVersion"]
                out["metadata"] = dict(out["metadata"])  # (the store stamps it)
                return out
    status = flow_schema.get("status")
    status = dict(status) if isinstance(status, dict) else {}
    conditions = status.get("conditions")
    kept = [
        c
        for c in (conditions if isinstance(conditions, list) else [])
        if not (isinstance(c, dict) and c.get("type") == "Dangling")
    ]
    if isinstance(conditions, list) and current is not None:
        at = conditions.index(current)
        kept.insert(at, wanted)
    else:
        kept.append(wanted)
    status["conditions"] = kept
    return {
        **flow_schema,
        "metadata": dict(meta) if isinstance(meta, dict) else {},
        "status": status,
    }
