"""Discovery: ``/api``, ``/apis``, a group, and a group version's resource list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from ownergc.errors import Unavailable
from ownergc.protocols import APIResource, JSONDict

from .._negotiation import _json_response, _Response
from ..store import InMemoryStore
from .connect import CONNECT_DISCOVERY
from .context import no_route

__all__ = ["Discovery"]

_SHORT_NAMES: Final[dict[tuple[str, str], list[str]]] = {
    # As a 1.24 kube-apiserver's discovery lists them (tests/data/real-apiserver-1.24).
    ("", "componentstatuses"): ["cs"],
    ("", "configmaps"): ["cm"],
    ("", "endpoints"): ["ep"],
    ("", "events"): ["ev"],
    ("", "limitranges"): ["limits"],
    ("", "namespaces"): ["ns"],
    ("", "nodes"): ["no"],
    ("", "persistentvolumeclaims"): ["pvc"],
    ("", "persistentvolumes"): ["pv"],
    ("", "pods"): ["po"],
    ("", "replicationcontrollers"): ["rc"],
    ("", "resourcequotas"): ["quota"],
    ("", "serviceaccounts"): ["sa"],
    ("", "services"): ["svc"],
    ("apiextensions.k8s.io", "customresourcedefinitions"): ["crd", "crds"],
    ("apps", "daemonsets"): ["ds"],
    ("apps", "deployments"): ["deploy"],
    ("apps", "replicasets"): ["rs"],
    ("apps", "statefulsets"): ["sts"],
    ("autoscaling", "horizontalpodautoscalers"): ["hpa"],
    ("batch", "cronjobs"): ["cj"],
    ("certificates.k8s.io", "certificatesigningrequests"): ["csr"],
    ("events.k8s.io", "events"): ["ev"],
    ("networking.k8s.io", "ingresses"): ["ing"],
    ("networking.k8s.io", "networkpolicies"): ["netpol"],
    ("policy", "poddisruptionbudgets"): ["pdb"],
    ("scheduling.k8s.io", "priorityclasses"): ["pc"],
    ("storage.k8s.io", "storageclasses"): ["sc"],
}


#: Resource categories: ``kubectl get all`` expands "all"; "api-extensions" as recorded.
_CATEGORIES: Final[dict[tuple[str, str], list[str]]] = {
    **{
        key: ["all"]
        for key in (
            ("", "pods"),
            ("", "services"),
            ("", "replicationcontrollers"),
            ("apps", "deployments"),
            ("apps", "replicasets"),
            ("apps", "daemonsets"),
            ("apps", "statefulsets"),
            ("autoscaling", "horizontalpodautoscalers"),
            ("batch", "jobs"),
            ("batch", "cronjobs"),
        )
    },
    **{
        key: ["api-extensions"]
        for key in (
            ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
            ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
            ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
            ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
            ("apiextensions.k8s.io", "customresourcedefinitions"),
            ("apiregistration.k8s.io", "apiservices"),
        )
    },
}


class Discovery:
    """The discovery documents kubectl and client-go read, from the store's registry.

    ``address`` gives the server's URL when asked (it is known once serving).
    """

    def __init__(self, store: InMemoryStore, address: Callable[[], str]) -> None:
        self.store = store
        self.address = address

    def api_versions(self) -> _Response:
        address = self.address().removeprefix("http://")
        return _json_response(
            200,
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": address}
                ],
            },
        )

    async def _discovered(self) -> tuple[dict[str, list[APIResource]], dict[str, str]]:
        """Served resources by ``group/version`` (preferred version first per group)."""
        result = await self.store.discover()
        by_gv: dict[str, list[APIResource]] = {}
        for r in sorted(result.resources, key=lambda r: not r.preferred):
            by_gv.setdefault(r.api_version, []).append(r)
        return by_gv, dict(result.failed)

    async def group_list(self) -> JSONDict:
        by_gv, failed = await self._discovered()
        groups: dict[str, list[str]] = {}
        preferred: dict[str, str] = {}
        for resources in by_gv.values():
            group, version = resources[0].group, resources[0].version
            if not group:
                continue
            versions = groups.setdefault(group, [])
            if version not in versions:
                versions.append(version)
            if resources[0].preferred:
                preferred.setdefault(group, version)
        for gv in failed:
            group, _, version = gv.rpartition("/")
            if group and version not in groups.setdefault(group, []):
                groups[group].append(version)
        return {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [
                self._group_body(name, versions, preferred.get(name, versions[0]))
                for name, versions in groups.items()
            ],
        }

    @staticmethod
    def _group_body(name: str, versions: list[str], preferred: str) -> JSONDict:
        ordered = [preferred, *(v for v in versions if v != preferred)]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": name,
            "versions": [{"groupVersion": f"{name}/{v}", "version": v} for v in ordered],
            "preferredVersion": {"groupVersion": f"{name}/{preferred}", "version": preferred},
        }

    async def group(self, name: str) -> JSONDict | None:
        listing = await self.group_list()
        for group in listing["groups"]:
            if group["name"] == name:
                return dict(group)
        return None

    async def resource_list(self, group: str, version: str) -> _Response:
        by_gv, failed = await self._discovered()
        gv = f"{group}/{version}" if group else version
        if gv in failed:
            raise Unavailable(
                f"the server is currently unable to handle the request ({gv}: {failed[gv]})",
                reason="ServiceUnavailable",
            )
        if gv not in by_gv:
            raise no_route()
        entries = []
        for r in by_gv[gv]:
            entry: JSONDict = {
                "name": r.resource,
                "singularName": r.kind.lower(),
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": sorted(r.verbs),
            }
            short = _SHORT_NAMES.get((r.group, r.resource))
            if short:
                entry["shortNames"] = short
            categories = _CATEGORIES.get((r.group, r.resource))
            if categories:
                entry["categories"] = categories
            entries.append(entry)
            for sub in sorted(self.store.subresources_of(r)):
                entries.append(_subresource_entry(r, sub))
        body = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv}
        return _json_response(200, {**body, "resources": entries})


def _subresource_entry(resource: APIResource, sub: str) -> JSONDict:
    """A subresource's discovery entry; scale, token and eviction are other kinds of other
    groups, binding another kind of the core group."""
    entry: JSONDict = {
        "name": f"{resource.resource}/{sub}",
        "singularName": "",
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": ["get", "patch", "update"],
    }
    if sub == "scale":
        entry.update(group="autoscaling", version="v1", kind="Scale")
    elif sub == "token":
        entry.update(
            group="authentication.k8s.io", version="v1", kind="TokenRequest", verbs=["create"]
        )
    elif sub == "eviction":
        entry.update(group="policy", version="v1", kind="Eviction", verbs=["create"])
    elif sub == "binding":
        entry.update(kind="Binding", verbs=["create"])
    elif sub == "finalize":
        entry.update(verbs=["update"])
    connect = None if resource.group else CONNECT_DISCOVERY.get((resource.resource, sub))
    if connect is not None:
        entry.update(kind=connect[0], verbs=list(connect[1]))
    return entry
