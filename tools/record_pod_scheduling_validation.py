"""Record what the real kube-apiserver 1.20 answers to Pods (and pod templates) whose
security contexts, affinity, topology spread constraints, host aliases, DNS config and
scheduling fields it refuses (or keeps), for tests/facade/test_pod_scheduling_validation_real.py.

Creates are sent with ``?dryRun=All``; a stored Deployment is merge-patched with
``?dryRun=All``. Names start with ``podsched``.

Run: python tools/record_pod_scheduling_validation.py \
    > tests/data/real-apiserver-1.20/pod-scheduling-validation.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _real_apiserver import call

NS = "podsched"
PODS = f"/api/v1/namespaces/{NS}/pods"
DEPLOYMENTS = f"/apis/apps/v1/namespaces/{NS}/deployments"
JOBS = f"/apis/batch/v1/namespaces/{NS}/jobs"
CRONJOBS = f"/apis/batch/v1beta1/namespaces/{NS}/cronjobs"  # (1.20 serves no batch/v1 CronJob)
LABELS = {"app": "podsched"}


def C(**extra: Any) -> dict[str, Any]:
    return {"name": "c", "image": "nginx", **extra}


def S(*containers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"automountServiceAccountToken": False, "containers": list(containers or [C()]), **extra}


def SC(**context: Any) -> dict[str, Any]:
    """A spec whose container has this securityContext."""
    return S(C(securityContext=context))


def PSC(**context: Any) -> dict[str, Any]:
    """A spec with this pod securityContext."""
    return S(securityContext=context)


def NA(*terms: dict[str, Any]) -> dict[str, Any]:
    """A spec with a required node affinity of these terms."""
    required = {"nodeSelectorTerms": list(terms)}
    return S(
        affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    )


def NX(**requirement: Any) -> dict[str, Any]:
    """A spec with a required node affinity of one term of one expression."""
    return NA({"matchExpressions": [requirement]})


def PA(kind: str = "podAffinity", **term: Any) -> dict[str, Any]:
    """A spec with one required pod (anti-)affinity term."""
    full = {"labelSelector": {"matchLabels": LABELS}, "topologyKey": "kubernetes.io/hostname"}
    full.update(term)
    full = {k: v for k, v in full.items() if v is not None}
    return S(affinity={kind: {"requiredDuringSchedulingIgnoredDuringExecution": [full]}})


def TSC(*constraints: dict[str, Any]) -> dict[str, Any]:
    return S(topologySpreadConstraints=list(constraints))


def T(**extra: Any) -> dict[str, Any]:
    """One topology spread constraint."""
    full = {
        "maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": LABELS},
    }
    full.update(extra)
    return {k: v for k, v in full.items() if v is not None}


def DNS(policy: str = "ClusterFirst", **config: Any) -> dict[str, Any]:
    return S(dnsPolicy=policy, dnsConfig=config)


# (case, pod spec): each sent as a Pod's spec.
POD_CASES: list[tuple[str, dict[str, Any]]] = [
    # -- pod securityContext
    ("pod runAsUser negative", PSC(runAsUser=-1)),
    ("pod runAsUser too large", PSC(runAsUser=2147483648)),
    ("pod runAsGroup negative", PSC(runAsGroup=-1)),
    ("pod fsGroup negative", PSC(fsGroup=-5)),
    ("pod supplementalGroups negative", PSC(supplementalGroups=[1000, -1])),
    ("pod runAsUser 0 with runAsNonRoot", PSC(runAsNonRoot=True, runAsUser=0)),
    ("pod security context valid", PSC(runAsUser=1000, runAsGroup=3000, fsGroup=2000)),
    ("sysctl name invalid", PSC(sysctls=[{"name": "Kernel.Shm", "value": "1"}])),
    ("sysctl name empty", PSC(sysctls=[{"name": "", "value": "1"}])),
    (
        "sysctl duplicate",
        PSC(
            sysctls=[
                {"name": "kernel.shm_rmid_forced", "value": "1"},
                {"name": "kernel.shm_rmid_forced", "value": "0"},
            ]
        ),
    ),
    ("sysctl name with slashes", PSC(sysctls=[{"name": "net/ipv4/ip_forward", "value": "1"}])),
    ("sysctl valid", PSC(sysctls=[{"name": "net.ipv4.ip_local_port_range", "value": "1 2"}])),
    ("seccompProfile type unsupported", PSC(seccompProfile={"type": "Custom"})),
    ("seccompProfile type empty", PSC(seccompProfile={"type": ""})),
    ("seccompProfile Localhost without profile", PSC(seccompProfile={"type": "Localhost"})),
    (
        "seccompProfile Localhost absolute profile",
        PSC(seccompProfile={"type": "Localhost", "localhostProfile": "/etc/p.json"}),
    ),
    (
        "seccompProfile Localhost profile with ..",
        PSC(seccompProfile={"type": "Localhost", "localhostProfile": "a/../../p.json"}),
    ),
    (
        "seccompProfile RuntimeDefault with profile",
        PSC(seccompProfile={"type": "RuntimeDefault", "localhostProfile": "p.json"}),
    ),
    ("seccompProfile valid", PSC(seccompProfile={"type": "RuntimeDefault"})),
    ("fsGroupChangePolicy unsupported", PSC(fsGroupChangePolicy="Sometimes")),
    (
        "shareProcessNamespace with hostPID",
        S(hostPID=True, shareProcessNamespace=True),
    ),
    (
        "hostNetwork with hostPort unlike containerPort",
        S(C(ports=[{"containerPort": 80, "hostPort": 8080}]), hostNetwork=True),
    ),
    ("windowsOptions runAsUserName empty", PSC(windowsOptions={"runAsUserName": ""})),
    # -- container securityContext
    ("container runAsUser negative", SC(runAsUser=-1)),
    ("container runAsGroup negative", SC(runAsGroup=-2)),
    ("container privileged", SC(privileged=True)),
    (
        "container privileged without privilege escalation",
        SC(privileged=True, allowPrivilegeEscalation=False),
    ),
    (
        "container CAP_SYS_ADMIN without privilege escalation",
        SC(allowPrivilegeEscalation=False, capabilities={"add": ["CAP_SYS_ADMIN"]}),
    ),
    (
        "container capabilities valid",
        SC(capabilities={"add": ["NET_ADMIN"], "drop": ["ALL"]}),
    ),
    ("container procMount unsupported", SC(procMount="Weird")),
    ("container runAsUser 0 with runAsNonRoot", SC(runAsNonRoot=True, runAsUser=0)),
    ("container seccompProfile type unsupported", SC(seccompProfile={"type": "Custom"})),
    (
        "init container runAsUser negative",
        S(initContainers=[C(name="i", securityContext={"runAsUser": -1})]),
    ),
    # -- node affinity
    ("nodeSelectorTerms empty", NA()),
    ("nodeSelectorTerm empty", NA({})),
    ("node affinity operator unsupported", NX(key="disk", operator="Equals", values=["ssd"])),
    ("node affinity In without values", NX(key="disk", operator="In")),
    ("node affinity NotIn with empty values", NX(key="disk", operator="NotIn", values=[])),
    ("node affinity Exists with values", NX(key="disk", operator="Exists", values=["ssd"])),
    ("node affinity Gt with two values", NX(key="cores", operator="Gt", values=["1", "2"])),
    ("node affinity Lt without values", NX(key="cores", operator="Lt")),
    ("node affinity Gt not an integer", NX(key="cores", operator="Gt", values=["many"])),
    ("node affinity key invalid", NX(key="a b", operator="Exists")),
    ("node affinity value invalid", NX(key="disk", operator="In", values=["a b"])),
    (
        "node affinity matchFields key unsupported",
        NA({"matchFields": [{"key": "spec.nodeName", "operator": "In", "values": ["n"]}]}),
    ),
    (
        "node affinity matchFields two values",
        NA({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}),
    ),
    (
        "node affinity matchFields Exists",
        NA({"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}),
    ),
    (
        "node affinity preferred weight 0",
        S(
            affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 0,
                            "preference": {
                                "matchExpressions": [{"key": "disk", "operator": "Exists"}]
                            },
                        }
                    ]
                }
            }
        ),
    ),
    (
        "node affinity preferred weight 101 and bad operator",
        S(
            affinity={
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 101,
                            "preference": {"matchExpressions": [{"key": "disk", "operator": "Is"}]},
                        }
                    ]
                }
            }
        ),
    ),
    (
        "node affinity valid",
        NA(
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]},
        ),
    ),
    # -- pod affinity and anti-affinity
    ("pod affinity topologyKey empty", PA(topologyKey="")),
    ("pod affinity topologyKey missing", PA(topologyKey=None)),
    ("pod affinity topologyKey invalid", PA(topologyKey="a b")),
    (
        "pod affinity labelSelector operator invalid",
        PA(labelSelector={"matchExpressions": [{"key": "app", "operator": "Equals"}]}),
    ),
    (
        "pod affinity labelSelector In without values",
        PA(labelSelector={"matchExpressions": [{"key": "app", "operator": "In"}]}),
    ),
    ("pod affinity labelSelector value invalid", PA(labelSelector={"matchLabels": {"app": "a b"}})),
    ("pod affinity namespaces invalid", PA(namespaces=["Bad_NS"])),
    ("pod anti-affinity topologyKey empty", PA("podAntiAffinity", topologyKey="")),
    (
        "pod anti-affinity preferred weight 0",
        S(
            affinity={
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 0,
                            "podAffinityTerm": {
                                "labelSelector": {"matchLabels": LABELS},
                                "topologyKey": "",
                            },
                        }
                    ]
                }
            }
        ),
    ),
    (
        "pod affinity without labelSelector",
        PA(labelSelector=None),
    ),
    ("pod anti-affinity valid", PA("podAntiAffinity")),
    # -- topology spread constraints
    ("topology spread maxSkew 0", TSC(T(maxSkew=0))),
    ("topology spread maxSkew negative", TSC(T(maxSkew=-1))),
    ("topology spread topologyKey empty", TSC(T(topologyKey=""))),
    ("topology spread whenUnsatisfiable unsupported", TSC(T(whenUnsatisfiable="Sometimes"))),
    ("topology spread whenUnsatisfiable missing", TSC(T(whenUnsatisfiable=None))),
    ("topology spread duplicate", TSC(T(), T(maxSkew=2))),
    (
        "topology spread same key other action",
        TSC(T(), T(whenUnsatisfiable="ScheduleAnyway")),
    ),
    (
        "topology spread minDomains with ScheduleAnyway",
        TSC(T(whenUnsatisfiable="ScheduleAnyway", minDomains=2)),
    ),
    ("topology spread minDomains 0", TSC(T(minDomains=0))),
    (
        "topology spread labelSelector invalid",
        TSC(T(labelSelector={"matchExpressions": [{"key": "app", "operator": "Equals"}]})),
    ),
    ("topology spread topologyKey invalid", TSC(T(topologyKey="a b"))),
    ("topology spread valid", TSC(T())),
    # -- nodeSelector
    ("nodeSelector value too long", S(nodeSelector={"disk": "x" * 64})),
    ("nodeSelector key prefix invalid", S(nodeSelector={"Example.com/disk": "ssd"})),
    # -- hostAliases
    ("hostAliases ip invalid", S(hostAliases=[{"ip": "not-an-ip", "hostnames": ["a"]}])),
    ("hostAliases ip empty", S(hostAliases=[{"ip": "", "hostnames": ["a"]}])),
    (
        "hostAliases hostname invalid",
        S(hostAliases=[{"ip": "10.0.0.1", "hostnames": ["ok.example", "Bad_Host"]}]),
    ),
    (
        "hostAliases second entry invalid",
        S(
            hostAliases=[
                {"ip": "10.0.0.1", "hostnames": ["a"]},
                {"ip": "1.2.3", "hostnames": ["b"]},
            ]
        ),
    ),
    ("hostAliases valid", S(hostAliases=[{"ip": "fd00::1", "hostnames": ["a.example"]}])),
    # -- DNS
    ("dnsPolicy None without dnsConfig", S(dnsPolicy="None")),
    ("dnsPolicy None without nameservers", DNS("None", searches=["a.example"])),
    ("dnsConfig four nameservers", DNS(nameservers=["1.1.1.1", "1.0.0.1", "8.8.8.8", "8.8.4.4"])),
    ("dnsConfig nameserver invalid", DNS(nameservers=["dns.example"])),
    ("dnsConfig seven searches", DNS(searches=[f"s{i}.example" for i in range(7)])),
    ("dnsConfig searches too long", DNS(searches=["a" * 60 + ".example"] * 5)),
    ("dnsConfig search invalid", DNS(searches=["Bad_Domain.example"])),
    ("dnsConfig search with trailing dot", DNS(searches=["ok.example."])),
    ("dnsConfig option without name", DNS(options=[{"value": "2"}])),
    (
        "dnsConfig valid",
        DNS(
            "None",
            nameservers=["10.0.0.10"],
            searches=["ns.svc.cluster.local"],
            options=[{"name": "ndots", "value": "2"}],
        ),
    ),
    # -- scalar fields
    ("activeDeadlineSeconds negative", S(activeDeadlineSeconds=-1)),
    ("activeDeadlineSeconds too large", S(activeDeadlineSeconds=2147483648)),
    ("terminationGracePeriodSeconds negative", S(terminationGracePeriodSeconds=-1)),
    ("restartPolicy lower case", S(restartPolicy="always")),
    ("preemptionPolicy unsupported", S(preemptionPolicy="Sometimes")),
    ("priorityClassName invalid", S(priorityClassName="Bad_Class")),
    ("runtimeClassName invalid", S(runtimeClassName="Bad_Class")),
    ("readinessGates conditionType invalid", S(readinessGates=[{"conditionType": "a b"}])),
    ("imagePullSecrets name empty", S(imagePullSecrets=[{"name": ""}])),
    ("subdomain invalid", S(subdomain="Bad_Sub")),
    ("nodeName invalid", S(nodeName="Bad_Node")),
    (
        "many scheduling errors",
        S(
            securityContext={"runAsUser": -1},
            affinity={"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{}]}},
            topologySpreadConstraints=[T(maxSkew=0, topologyKey="")],
            hostAliases=[{"ip": "x"}],
            dnsConfig={"options": [{}]},
        ),
    ),
]

# (case, pod template spec): each sent as a Deployment's spec.template.spec.
DEPLOYMENT_CASES: list[tuple[str, dict[str, Any]]] = [
    ("template pod runAsUser negative", PSC(runAsUser=-1)),
    (
        "template container privileged without escalation",
        SC(privileged=True, allowPrivilegeEscalation=False),
    ),
    ("template node affinity In without values", NX(key="disk", operator="In")),
    ("template pod affinity topologyKey empty", PA(topologyKey="")),
    ("template topology spread maxSkew 0", TSC(T(maxSkew=0))),
    ("template hostAliases ip invalid", S(hostAliases=[{"ip": "x", "hostnames": ["a"]}])),
    ("template dnsPolicy None without nameservers", DNS("None")),
    (
        "template valid",
        S(affinity=PA("podAntiAffinity")["affinity"], topologySpreadConstraints=[T()]),
    ),
]

# (case, pod template spec): each sent as a Job's spec.template.spec, then as a CronJob's
# spec.jobTemplate.spec.template.spec.
JOB_CASES: list[tuple[str, dict[str, Any]]] = [
    ("job template topology spread whenUnsatisfiable unsupported", TSC(T(whenUnsatisfiable="No"))),
    (
        "job template hostAliases hostname invalid",
        S(hostAliases=[{"ip": "10.0.0.1", "hostnames": ["A_B"]}]),
    ),
    ("job template container runAsGroup negative", SC(runAsGroup=-1)),
]

#: merge patches of the stored Deployment.
DEPLOYMENT_PATCHES: list[tuple[str, dict[str, Any]]] = [
    (
        "template affinity added invalid",
        {"spec": {"template": {"spec": NX(key="disk", operator="Gt", values=["1", "2"])}}},
    ),
    (
        "template sysctl added invalid",
        {"spec": {"template": {"spec": PSC(sysctls=[{"name": "A B"}])}}},
    ),
]


def deployment(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": LABELS},
            "template": {"metadata": {"labels": LABELS}, "spec": spec},
        },
    }


def kept(status: int | None, body: Any) -> dict[str, Any]:
    if status in (200, 201):
        return {"status": status}
    return {
        "status": status,
        "reason": body.get("reason"),
        "message": body.get("message"),
        "details": body.get("details"),
    }


def main() -> None:
    out: dict[str, Any] = {"namespace": NS, "server": "v1.20.2", "exchanges": []}
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    call(
        "POST",
        f"/api/v1/namespaces/{NS}/serviceaccounts",
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "default"},
            "automountServiceAccountToken": False,
        },
    )
    for case, spec in POD_CASES:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "podsched-new"},
            "spec": spec,
        }
        status, answer = call("POST", PODS + "?dryRun=All", body)
        out["exchanges"].append(
            {
                "kind": "pods",
                "op": "create",
                "case": case,
                "body": body,
                "answer": kept(status, answer),
            }
        )
    for case, spec in DEPLOYMENT_CASES:
        body = deployment("podsched-new", spec)
        status, answer = call("POST", DEPLOYMENTS + "?dryRun=All", body)
        out["exchanges"].append(
            {
                "kind": "deployments",
                "op": "create",
                "case": case,
                "body": body,
                "answer": kept(status, answer),
            }
        )
    for case, spec in JOB_CASES:
        spec = {**spec, "restartPolicy": "Never"}
        template = {"metadata": {"labels": LABELS}, "spec": spec}
        for kind, path, body in (
            (
                "jobs",
                JOBS,
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "metadata": {"name": "podsched-new"},
                    "spec": {"template": template},
                },
            ),
            (
                "cronjobs",
                CRONJOBS,
                {
                    "apiVersion": "batch/v1beta1",
                    "kind": "CronJob",
                    "metadata": {"name": "podsched-new"},
                    "spec": {
                        "schedule": "*/5 * * * *",
                        "jobTemplate": {"spec": {"template": template}},
                    },
                },
            ),
        ):
            status, answer = call("POST", path + "?dryRun=All", body)
            out["exchanges"].append(
                {
                    "kind": kind,
                    "op": "create",
                    "case": case,
                    "body": body,
                    "answer": kept(status, answer),
                }
            )
    stored = deployment("podsched-stored", S())
    call("DELETE", DEPLOYMENTS + "/podsched-stored")
    status, answer = call("POST", DEPLOYMENTS, stored)
    assert status == 201, answer
    out["stored"] = {"deployments": stored}
    for case, patch in DEPLOYMENT_PATCHES:
        status, answer = call(
            "PATCH",
            DEPLOYMENTS + "/podsched-stored?dryRun=All",
            patch,
            "application/merge-patch+json",
        )
        out["exchanges"].append(
            {
                "kind": "deployments",
                "op": "update",
                "case": case,
                "body": patch,
                "answer": kept(status, answer),
            }
        )
    json.dump(out, sys.stdout, indent=1, sort_keys=True, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
