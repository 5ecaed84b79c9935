"""PodSpec scheduling and security rules as kube-apiserver validates them
(``_podspec_scheduling``).

tests/data/real-apiserver-1.20/pod-scheduling-validation.json holds what a real
kube-apiserver 1.20 answered (recorded by tools/record_pod_scheduling_validation.py, all
``dryRun=All``): Pod creates with bad (and good) security contexts, node and pod
affinity, topology spread constraints, nodeSelector, host aliases, DNS config and
scheduling fields; Deployment, Job and CronJob creates with some of them in the template
(named ``spec.template.spec...``, ``spec.jobTemplate.spec.template.spec...``); two
merge-patch updates of a stored Deployment. Each is sent
to serve's facade and the answers compared: the status code, the reason, the details'
kind and name, and the errors, from the message and from the causes (as sets: a real
server's order is its walk of the spec, serve's is close but not the same).

Where kube-apiserver 1.30 answers otherwise than the recorded 1.20, serve follows 1.30
and the recorded answer is rewritten before comparing:

========================================  ===========================================
1.20 (recorded)                           1.30 (serve), and where it is written
========================================  ===========================================
sysctl names match                        ``^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*...$``:
``(seg\\.)*seg``; ``net/ipv4/ip_forward``   ``/`` is a separator too, so that name is
refused                                   kept: validateSysctls / IsValidSysctlName,
                                          pkg/apis/core/validation/validation.go
a Localhost seccomp profile's bad path    the field only: the fields are no longer
also reported on the synced               copied to annotations (kubernetes PR
``metadata.annotations.seccomp...``       #109819, 1.25)
``core.SecurityContext{...}`` printed     one field more, ``AppArmorProfile`` (the
with 11 fields                            1.30 appArmorProfile field): ValidateSecurity-
                                          Context prints the struct
host network: ``containerPort: Invalid    ``hostPort: Invalid value: 8080: must match
value: 80: must match `hostPort```        `containerPort```: validatePodHostNetworkDeps
                                          (kubernetes PR #117696, 1.28)
pod affinity selector errors under        under ``...labelSelector.matchExpressions[0]``:
``...matchExpressions.matchExpressions``  ValidatePodAffinityTermSelector (kubernetes
                                          PR #98378, 1.21)
``spec.hostAliases.ip: ... must be        ``spec.hostAliases[0].ip: ... must be a valid
valid IP address`` (no index)             IP address, (e.g. 10.9.8.7 or
                                          2001:db8::ffff)``, ``hostnames[1]``:
                                          ValidateHostAliases with IsValidIP
                                          (apimachinery v0.30.0 validation.go)
``dnsConfig.nameservers[0]: ... must be   ``must be a valid IP address, (e.g. ...)``:
valid IP address``                        validatePodDNSConfig with IsValidIP
at most 6 DNS search paths of 256         at most 32 paths of 2048 characters
characters                                (ExpandedDNSConfig, GA in 1.28):
                                          MaxDNSSearchPaths, MaxDNSSearchListChars
``minDomains`` and a spread constraint's  checked (MinDomainsInPodTopologySpread GA in
``labelSelector`` not checked (the field  1.30): validateMinDomains and
unknown / not validated)                  validateTopologySpreadConstraints
========================================  ===========================================

Not compared: ``privileged: true`` is refused by the recorded server as "disallowed by
cluster policy" (it runs without ``--allow-privileged``); serve answers as a cluster
started with ``--allow-privileged=true`` (kubeadm's, kind's), so that cause is dropped
from the recorded answers. An invalid ``runtimeClassName`` on a Pod is refused by the
RuntimeClass admission plugin before validation (a 403; serve has no such plugin).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send

RECORDED = json.loads(
    (
        Path(__file__).parent.parent / "data/real-apiserver-1.20/pod-scheduling-validation.json"
    ).read_text()
)
NS = RECORDED["namespace"]
PATHS = {
    "pods": f"/api/v1/namespaces/{NS}/pods",
    "deployments": f"/apis/apps/v1/namespaces/{NS}/deployments",
    "jobs": f"/apis/batch/v1/namespaces/{NS}/jobs",
    "cronjobs": f"/apis/batch/v1/namespaces/{NS}/cronjobs",
}
NOT_COMPARED = {"runtimeClassName invalid"}  # (the RuntimeClass admission plugin's 403)

_NOT_AN_IP_130 = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
_SYSCTL_130 = (
    "must have at most 253 characters and match regex "
    "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$"
)
_SYSCTL_NAME_130 = re.compile(
    r"([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
)
_ADDRESS = re.compile(r"\(0x[0-9a-f]+\)")

#: The errors 1.30 adds to a recorded answer (the rules 1.20 did not have).
ADDED_130: dict[str, list[dict[str, str]]] = {
    "topology spread minDomains with ScheduleAnyway": [
        {
            "field": "spec.topologySpreadConstraints[0].minDomains",
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 2: can only use minDomains if "
            "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
        }
    ],
    "topology spread minDomains 0": [
        {
            "field": "spec.topologySpreadConstraints[0].minDomains",
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0: must be greater than zero",
        }
    ],
    "topology spread labelSelector invalid": [
        {
            "field": "spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator",
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: "Equals": not a valid selector operator',
        }
    ],
}


def _quoted_value(message: str) -> str | None:
    match = re.match(r'Invalid value: "(.*?)": ', message)
    return match.group(1) if match else None


def _spec_of(exchange: dict[str, Any]) -> dict[str, Any]:
    spec = exchange["body"].get("spec", {})
    if "jobTemplate" in spec:
        spec = spec["jobTemplate"]["spec"]
    template = spec.get("template")
    return template["spec"] if isinstance(template, dict) else spec


def _cause_as_130(cause: dict[str, str], exchange: dict[str, Any]) -> dict[str, str] | None:
    """A recorded cause as 1.30 gives it, or None when 1.30 does not report it."""
    field, message = cause["field"], cause["message"]
    if message == "Forbidden: disallowed by cluster policy":
        return None  # (serve allows privileged containers)
    if field.startswith("metadata.annotations.seccomp"):
        return None
    spec = _spec_of(exchange)
    if field.endswith(".sysctls[0].name") and message.startswith("Invalid value:"):
        if _SYSCTL_NAME_130.fullmatch(_quoted_value(message) or ""):
            return None
        message = message.split(": must have at most", 1)[0] + ": " + _SYSCTL_130
    if "must match `hostPort` when `hostNetwork` is true" in message:
        port = spec["containers"][0]["ports"][0]
        field = field.replace(".containerPort", ".hostPort")
        message = (
            f"Invalid value: {port['hostPort']}: must match `containerPort` when `hostNetwork` "
            "is true"
        )
    field = field.replace(
        "].matchExpressions.matchExpressions[", "].labelSelector.matchExpressions["
    )
    field = field.replace("].matchExpressions.matchLabels", "].labelSelector.matchLabels")
    if field.endswith("hostAliases.ip"):
        value = _quoted_value(message)
        index = next(i for i, a in enumerate(spec["hostAliases"]) if a.get("ip", "") == value)
        field = field.replace("hostAliases.ip", f"hostAliases[{index}].ip")
    elif field.endswith("hostAliases.hostnames"):
        value = _quoted_value(message)
        index, position = next(
            (i, j)
            for i, a in enumerate(spec["hostAliases"])
            for j, h in enumerate(a.get("hostnames", []))
            if h == value
        )
        field = field.replace(
            "hostAliases.hostnames", f"hostAliases[{index}].hostnames[{position}]"
        )
    if field.endswith(".searches") and "search" in message:
        return None  # (1.30 allows 32 search paths of 2048 characters)
    message = message.replace(": must be valid IP address", ": " + _NOT_AN_IP_130)
    if message.startswith("Invalid value: core.SecurityContext{"):
        message = message.replace(
            "SeccompProfile:(*core.SeccompProfile)(nil)}",
            "SeccompProfile:(*core.SeccompProfile)(nil), "
            "AppArmorProfile:(*core.AppArmorProfile)(nil)}",
        )
    return {**cause, "field": field, "message": message}


def _expected(exchange: dict[str, Any]) -> dict[str, Any]:
    """The recorded answer as 1.30 gives it, in the compared shape."""
    answer = exchange["answer"]
    if answer["status"] in (200, 201):
        causes: list[dict[str, str]] = []
        details: dict[str, Any] = {}
        status, reason, head = answer["status"], None, ""
    else:
        details = dict(answer.get("details") or {})
        recorded = details.pop("causes", [])
        kept = (_cause_as_130(c, exchange) for c in recorded)
        causes = [c for c in kept if c is not None]
        status, reason = answer["status"], answer["reason"]
        head = answer["message"].partition(" is invalid: ")[0]
    causes += ADDED_130.get(exchange["case"], [])
    if status == 422 and not causes:
        return {"status": 201 if exchange["op"] == "create" else 200}
    if status == 201 and causes:  # (refused by 1.30 only)
        kind = "Pod" if exchange["kind"] == "pods" else "Deployment.apps"
        name = exchange["body"]["metadata"]["name"]
        status, reason, head = 422, "Invalid", f'{kind} "{name}"'
        details = {"name": name, "kind": exchange["kind"].removesuffix("s").capitalize()}
        if exchange["kind"] == "deployments":
            details["group"] = "apps"
    if status in (200, 201):
        return {"status": status}
    if status != 422:  # (an admission plugin's refusal, compared whole)
        return {"status": status, "reason": reason, "message": answer["message"]}
    return _shape(status, reason, head, details, causes)


def _shape(
    status: int, reason: Any, head: str, details: dict[str, Any], causes: list[dict[str, str]]
) -> dict[str, Any]:
    def norm(text: str) -> str:
        return _ADDRESS.sub("(0x…)", text)

    return {
        "status": status,
        "reason": reason,
        "head": head,
        "details": details,
        "errors": frozenset(norm(f"{c['field']}: {c['message']}") for c in causes),
        "causes": frozenset(
            json.dumps({**c, "message": norm(c["message"])}, sort_keys=True) for c in causes
        ),
    }


def _listed(message: str) -> tuple[str, frozenset[str]]:
    head, _, errors = message.partition(" is invalid: ")
    if errors.startswith("[") and errors.endswith("]"):
        parts = re.split(r", (?=(?:spec|metadata)[.\w\[\]{}, ]*: )", errors[1:-1])
    else:
        parts = [errors]
    return head, frozenset(_ADDRESS.sub("(0x…)", p) for p in parts)


def _actual(status: int, answer: Any) -> dict[str, Any]:
    if status in (200, 201):
        return {"status": status}
    if status != 422:
        return {"status": status, "reason": answer.get("reason"), "message": answer["message"]}
    details = dict(answer.get("details") or {})
    causes = details.pop("causes", [])
    head, errors = _listed(answer.get("message") or "")
    shaped = _shape(status, answer.get("reason"), head, details, causes)
    assert shaped["errors"] == errors, answer["message"]  # (the message lists the causes)
    return shaped


@pytest.fixture(scope="module")
def server() -> Iterator[KubeAPIServer]:
    with run_in_thread(InMemoryStore()) as running:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
        assert send(running, "POST", "/api/v1/namespaces", json.dumps(namespace))[0] == 201
        account = {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default"},
            "automountServiceAccountToken": False,
        }
        send(running, "POST", f"/api/v1/namespaces/{NS}/serviceaccounts", json.dumps(account))
        for kind, obj in RECORDED["stored"].items():
            status, _, answer = send(running, "POST", PATHS[kind], json.dumps(obj))
            assert status == 201, answer
        yield running


@pytest.mark.parametrize(
    "exchange",
    [e for e in RECORDED["exchanges"] if e["case"] not in NOT_COMPARED],
    ids=lambda e: f"{e['kind']}-{e['op']}-{e['case']}",
)
def test_pod_scheduling_validation_as_recorded(
    server: KubeAPIServer, exchange: dict[str, Any]
) -> None:
    kind = exchange["kind"]
    if exchange["op"] == "create":
        body = exchange["body"]
        if kind == "cronjobs":  # (1.20 served CronJobs as batch/v1beta1 only; 1.30 as batch/v1)
            body = {**body, "apiVersion": "batch/v1"}
        body = json.dumps(body)
        status, _, answer = send(server, "POST", PATHS[kind] + "?dryRun=All", body)
    else:
        name = RECORDED["stored"][kind]["metadata"]["name"]
        status, _, answer = send(
            server,
            "PATCH",
            f"{PATHS[kind]}/{name}?dryRun=All",
            json.dumps(exchange["body"]),
            "application/merge-patch+json",
        )
    assert _actual(status, answer) == _expected(exchange)


# -- 1.30's rules the 1.20 recording cannot show ---------------------------------------


def _create_pod(server: KubeAPIServer, spec: dict[str, Any]) -> tuple[int, Any]:
    spec = {"containers": [{"name": "c", "image": "x"}], **spec}
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "podsched-x"}, "spec": spec}
    status, _, answer = send(server, "POST", PATHS["pods"] + "?dryRun=All", json.dumps(body))
    return status, answer


def _messages(answer: Any) -> set[str]:
    return {f"{c['field']}: {c['message']}" for c in answer["details"]["causes"]}


def test_dns_search_paths_up_to_32(server: KubeAPIServer) -> None:
    searches = [f"s{i}.example" for i in range(32)]
    assert _create_pod(server, {"dnsConfig": {"searches": searches}})[0] == 201
    status, answer = _create_pod(server, {"dnsConfig": {"searches": [*searches, "x.example"]}})
    assert status == 422
    [cause] = answer["details"]["causes"]
    assert cause["field"] == "spec.dnsConfig.searches"
    assert cause["message"].endswith(": must not have more than 32 search paths")
    assert cause["message"].startswith('Invalid value: []string{"s0.example", "s1.example", ')


def test_dns_search_list_up_to_2048_characters(server: KubeAPIServer) -> None:
    searches = ["a" * 63 + ".example"] * 30  # (30 x 71 characters and 29 spaces)
    status, answer = _create_pod(server, {"dnsConfig": {"searches": searches}})
    assert status == 422
    assert {c["message"].rsplit(": ", 1)[1] for c in answer["details"]["causes"]} == {
        "must not have more than 2048 characters (including spaces) in the search list"
    }


def test_host_network_template_may_leave_host_port_unset(server: KubeAPIServer) -> None:
    template = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "hostNetwork": True,
            "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80}]}],
        },
    }
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "podsched-x"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": template},
    }
    path = PATHS["deployments"] + "?dryRun=All"
    assert send(server, "POST", path, json.dumps(body))[0] == 201
    template["spec"]["containers"][0]["ports"][0]["hostPort"] = 81
    status, _, answer = send(server, "POST", path, json.dumps(body))
    assert status == 422
    assert _messages(answer) == {
        "spec.template.spec.containers[0].ports[0].hostPort: Invalid value: 81: must match "
        "`containerPort` when `hostNetwork` is true"
    }


def test_net_sysctl_refused_with_host_network(server: KubeAPIServer) -> None:
    status, answer = _create_pod(
        server,
        {
            "hostNetwork": True,
            "securityContext": {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
        },
    )
    assert status == 422
    assert _messages(answer) == {
        'spec.securityContext.sysctls[0].name: Invalid value: "net.core.somaxconn": may not '
        "be specified when 'hostNetwork' is true"
    }


def test_spread_constraint_policies_and_match_label_keys(server: KubeAPIServer) -> None:
    constraint = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "nodeAffinityPolicy": "Sometimes",
        "matchLabelKeys": ["pod-template-hash", "a b"],
    }
    status, answer = _create_pod(server, {"topologySpreadConstraints": [constraint]})
    assert status == 422
    where = "spec.topologySpreadConstraints[0]"
    assert _messages(answer) == {
        f'{where}.nodeAffinityPolicy: Unsupported value: "Sometimes": supported values: '
        '"Honor", "Ignore"',
        f"{where}.matchLabelKeys: Forbidden: must not be specified when labelSelector is not set",
        f'{where}.matchLabelKeys[1]: Invalid value: "a b": name part must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    }


def test_apparmor_profile_rules(server: KubeAPIServer) -> None:
    status, answer = _create_pod(
        server,
        {
            "securityContext": {"appArmorProfile": {"type": "Localhost"}},
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "securityContext": {"appArmorProfile": {"type": "Strict"}},
                }
            ],
        },
    )
    assert status == 422
    assert _messages(answer) == {
        "spec.securityContext.appArmorProfile.localhostProfile: Required value: must be set "
        "when AppArmor type is Localhost",
        'spec.containers[0].securityContext.appArmorProfile.type: Unsupported value: "Strict": '
        'supported values: "Localhost", "RuntimeDefault", "Unconfined"',
    }


def test_privileged_container_is_allowed(server: KubeAPIServer) -> None:
    """serve answers as a cluster started with ``--allow-privileged=true``."""
    spec = {"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": True}}]}
    assert _create_pod(server, spec)[0] == 201


def test_scheduling_gates_are_qualified_names_once_each(server: KubeAPIServer) -> None:
    gates = [{"name": "example.com/quota"}, {"name": "a b"}, {"name": "example.com/quota"}]
    status, answer = _create_pod(server, {"schedulingGates": gates})
    assert status == 422
    assert _messages(answer) == {
        'spec.schedulingGates[1]: Invalid value: "a b": name part must consist of alphanumeric '
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'spec.schedulingGates[2]: Duplicate value: "example.com/quota"',
    }


def test_scheduling_gates_may_be_removed_not_added(server: KubeAPIServer) -> None:
    """1.30 (PodSchedulingReadiness, GA): a gated Pod's update may drop gates, which is how
    it becomes schedulable, and may not add one."""
    spec = {
        "containers": [{"name": "c", "image": "x"}],
        "schedulingGates": [{"name": "example.com/a"}, {"name": "example.com/b"}],
    }
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "podsched-gated"}, "spec": spec}
    assert send(server, "POST", PATHS["pods"], json.dumps(body))[0] == 201
    path = f"{PATHS['pods']}/podsched-gated?dryRun=All"

    def patch(gates: list[dict[str, str]] | None) -> tuple[int, Any]:
        status, _, answer = send(
            server,
            "PATCH",
            path,
            json.dumps({"spec": {"schedulingGates": gates}}),
            "application/merge-patch+json",
        )
        return status, answer

    assert patch([{"name": "example.com/a"}])[0] == 200
    assert patch(None)[0] == 200
    status, answer = patch([{"name": "example.com/a"}, {"name": "example.com/c"}])
    assert status == 422
    assert _messages(answer) == {
        "spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new "
        "scheduling gate 'example.com/c'"
    }
