"""How the group versions a default-configured kube-apiserver v1.30.0 serves differ from
the recorded v1.24 server's (tests/data/real-apiserver-1.24, a v1.24 development build),
for the kinds ``ownergc serve`` has.

The recorded data stays as the real server returned it; a test comparing serve with it
applies these tables, so it still fails if serve differs from 1.30 in any other way.
Sources: Kubernetes' Deprecated API Migration Guide (the v1.25, v1.26, v1.27 and v1.29
removals; "available since" for the replacements).
"""

from __future__ import annotations

import copy
from typing import Any, Final

#: (group, version, resource) the recorded server served and v1.30 does not, with the
#: release that stopped serving it.
REMOVED: Final[dict[tuple[str, str, str], str]] = {
    ("batch", "v1beta1", "cronjobs"): "v1.25",
    ("discovery.k8s.io", "v1beta1", "endpointslices"): "v1.25",
    ("events.k8s.io", "v1beta1", "events"): "v1.25",
    ("autoscaling", "v2beta1", "horizontalpodautoscalers"): "v1.25",
    ("policy", "v1beta1", "poddisruptionbudgets"): "v1.25",
    ("policy", "v1beta1", "podsecuritypolicies"): "v1.25",
    ("node.k8s.io", "v1beta1", "runtimeclasses"): "v1.25",
    ("autoscaling", "v2beta2", "horizontalpodautoscalers"): "v1.26",
    ("flowcontrol.apiserver.k8s.io", "v1beta1", "flowschemas"): "v1.26",
    ("flowcontrol.apiserver.k8s.io", "v1beta1", "prioritylevelconfigurations"): "v1.26",
    ("storage.k8s.io", "v1beta1", "csistoragecapacities"): "v1.27",
    ("flowcontrol.apiserver.k8s.io", "v1beta2", "flowschemas"): "v1.29",
    ("flowcontrol.apiserver.k8s.io", "v1beta2", "prioritylevelconfigurations"): "v1.29",
}

#: (group, version, resource) v1.30 serves and the recorded server did not, with the
#: release that started serving it. storage.k8s.io/v1 CSIStorageCapacity is GA since
#: v1.24 itself: the recorded development build predates it.
ADDED: Final[dict[tuple[str, str, str], str]] = {
    ("flowcontrol.apiserver.k8s.io", "v1beta3", "flowschemas"): "v1.26",
    ("flowcontrol.apiserver.k8s.io", "v1beta3", "prioritylevelconfigurations"): "v1.26",
    ("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"): "v1.29",
    ("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"): "v1.29",
    ("storage.k8s.io", "v1", "csistoragecapacities"): "v1.24",
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"): "v1.30",
    ("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings"): "v1.30",
}

_STANDARD_VERBS: Final = frozenset(
    {"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
)
#: Kinds of ADDED the recorded 1.24 server did not have at all (kind, namespaced, verbs),
#: as 1.30's discovery lists them.
NEW_KINDS: Final[dict[tuple[str, str], tuple[str, bool, frozenset[str]]]] = {
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): (
        "ValidatingAdmissionPolicy",
        False,
        _STANDARD_VERBS,
    ),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): (
        "ValidatingAdmissionPolicyBinding",
        False,
        _STANDARD_VERBS,
    ),
}

#: Groups whose preferred version v1.30 changed: flowcontrol's was v1beta2.
PREFERRED: Final[dict[str, str]] = {"flowcontrol.apiserver.k8s.io": "v1"}

#: Whole group versions v1.30 no longer serves (every resource of them is in REMOVED).
REMOVED_GROUP_VERSIONS: Final[frozenset[str]] = frozenset(f"{g}/{v}" for g, v, _ in REMOVED)

#: Where an object of a removed group version is read on v1.30 (the migration guide's
#: replacement), for the recorded objects' versions.
_REPLACEMENT: Final[dict[str, str]] = {
    "flowcontrol.apiserver.k8s.io/v1beta1": "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta2": "flowcontrol.apiserver.k8s.io/v1",
    "batch/v1beta1": "batch/v1",
    "discovery.k8s.io/v1beta1": "discovery.k8s.io/v1",
    "policy/v1beta1": "policy/v1",
    "node.k8s.io/v1beta1": "node.k8s.io/v1",
    "storage.k8s.io/v1beta1": "storage.k8s.io/v1",
}


def as_v130(obj: dict[str, Any]) -> dict[str, Any]:
    """A recorded object as a v1.30 server shows the same stored object: in the served
    version that replaced its removed one; a PriorityLevelConfiguration's
    ``assuredConcurrencyShares`` is ``nominalConcurrencyShares`` there (the one field the
    guide names as renamed, in v1beta3). Objects of served versions are returned as
    they are."""
    replacement = _REPLACEMENT.get(str(obj.get("apiVersion")))
    if replacement is None:
        return obj
    out = copy.deepcopy(obj)
    out["apiVersion"] = replacement
    limited = (out.get("spec") or {}).get("limited")
    if (
        out.get("kind") == "PriorityLevelConfiguration"
        and isinstance(limited, dict)
        and "assuredConcurrencyShares" in limited
    ):
        limited["nominalConcurrencyShares"] = limited.pop("assuredConcurrencyShares")
    return out
