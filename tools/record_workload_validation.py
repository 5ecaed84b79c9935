"""Record workload spec validation answers from the real kube-apiserver 1.20.2.

Creates (``dryRun=All``) of invalid Deployments, ReplicaSets, ReplicationControllers,
StatefulSets, DaemonSets, Jobs, CronJobs (batch/v1beta1 on 1.20),
HorizontalPodAutoscalers (autoscaling/v1 and v2beta2) and PodDisruptionBudgets
(policy/v1beta1), and merge-patch updates (``dryRun=All``) of valid ones, saved to
tests/data/real-apiserver-1.20/workload-validation.json for
tests/facade/test_workload_validation_real.py.
"""

import copy
import json
import sys
from pathlib import Path

from _real_apiserver import call  # tools/

NS = "workloadspec"


TEMPLATE = {
    "metadata": {"labels": {"app": "x"}},
    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
}
JOB_TEMPLATE = {
    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
}
SELECTOR = {"matchLabels": {"app": "x"}}
#: kind -> (path on 1.20, a valid object)
KINDS = {
    "deployments": (
        f"/apis/apps/v1/namespaces/{NS}/deployments",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "spec": {"selector": SELECTOR, "template": TEMPLATE},
        },
    ),
    "replicasets": (
        f"/apis/apps/v1/namespaces/{NS}/replicasets",
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "spec": {"selector": SELECTOR, "template": TEMPLATE},
        },
    ),
    "replicationcontrollers": (
        f"/api/v1/namespaces/{NS}/replicationcontrollers",
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "spec": {"selector": {"app": "x"}, "template": TEMPLATE},
        },
    ),
    "statefulsets": (
        f"/apis/apps/v1/namespaces/{NS}/statefulsets",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "spec": {"serviceName": "s", "selector": SELECTOR, "template": TEMPLATE},
        },
    ),
    "daemonsets": (
        f"/apis/apps/v1/namespaces/{NS}/daemonsets",
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "spec": {"selector": SELECTOR, "template": TEMPLATE},
        },
    ),
    "jobs": (
        f"/apis/batch/v1/namespaces/{NS}/jobs",
        {"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": JOB_TEMPLATE}},
    ),
    "cronjobs": (
        f"/apis/batch/v1beta1/namespaces/{NS}/cronjobs",
        {
            "apiVersion": "batch/v1beta1",
            "kind": "CronJob",
            "spec": {
                "schedule": "*/5 * * * *",
                "jobTemplate": {"spec": {"template": JOB_TEMPLATE}},
            },
        },
    ),
    "hpa-v1": (
        f"/apis/autoscaling/v1/namespaces/{NS}/horizontalpodautoscalers",
        {
            "apiVersion": "autoscaling/v1",
            "kind": "HorizontalPodAutoscaler",
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "maxReplicas": 3,
            },
        },
    ),
    "hpa-v2": (
        f"/apis/autoscaling/v2beta2/namespaces/{NS}/horizontalpodautoscalers",
        {
            "apiVersion": "autoscaling/v2beta2",
            "kind": "HorizontalPodAutoscaler",
            "spec": {
                "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d"},
                "maxReplicas": 3,
            },
        },
    ),
    "pdbs": (
        f"/apis/policy/v1beta1/namespaces/{NS}/poddisruptionbudgets",
        {
            "apiVersion": "policy/v1beta1",
            "kind": "PodDisruptionBudget",
            "spec": {"selector": SELECTOR, "minAvailable": 1},
        },
    ),
}

D = "deployments"
CPU = {
    "type": "Resource",
    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
}
#: (kind, case, spec merge patch) for the creates
CREATES = [
    (D, "replicas negative", {"replicas": -2}),
    (D, "minReadySeconds negative", {"minReadySeconds": -1}),
    (D, "revisionHistoryLimit negative", {"revisionHistoryLimit": -1}),
    (
        D,
        "progressDeadline not above minReady",
        {"minReadySeconds": 10, "progressDeadlineSeconds": 5},
    ),
    (D, "progressDeadline equal minReady", {"minReadySeconds": 10, "progressDeadlineSeconds": 10}),
    (D, "progressDeadline negative", {"progressDeadlineSeconds": -1}),
    (D, "strategy type bogus", {"strategy": {"type": "Bogus"}}),
    (
        D,
        "strategy recreate with rollingUpdate",
        {"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}},
    ),
    (D, "both zero", {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}}),
    (
        D,
        "both zero percent",
        {"strategy": {"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": "0%"}}},
    ),
    (D, "maxUnavailable not a percent", {"strategy": {"rollingUpdate": {"maxUnavailable": "abc"}}}),
    (D, "maxSurge negative", {"strategy": {"rollingUpdate": {"maxSurge": -1}}}),
    (D, "maxUnavailable over 100%", {"strategy": {"rollingUpdate": {"maxUnavailable": "150%"}}}),
    (D, "maxSurge over 100% allowed", {"strategy": {"rollingUpdate": {"maxSurge": "150%"}}}),
    (D, "restartPolicy never", {"template": {"spec": {"restartPolicy": "Never"}}}),
    (D, "several", {"replicas": -1, "minReadySeconds": -1, "strategy": {"type": "Bogus"}}),
    (D, "paused valid", {"paused": True}),
    ("replicasets", "replicas negative", {"replicas": -1}),
    ("replicasets", "minReadySeconds negative", {"minReadySeconds": -1}),
    ("replicasets", "both negative", {"replicas": -1, "minReadySeconds": -1}),
    ("replicationcontrollers", "replicas negative", {"replicas": -1}),
    ("replicationcontrollers", "both negative", {"replicas": -1, "minReadySeconds": -1}),
    ("statefulsets", "replicas negative", {"replicas": -1}),
    ("statefulsets", "podManagementPolicy bogus", {"podManagementPolicy": "Bogus"}),
    ("statefulsets", "updateStrategy bogus", {"updateStrategy": {"type": "Bogus"}}),
    (
        "statefulsets",
        "onDelete with rollingUpdate",
        {"updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}}},
    ),
    (
        "statefulsets",
        "partition negative",
        {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}},
    ),
    ("statefulsets", "no serviceName", {"serviceName": None}),
    ("statefulsets", "minReadySeconds negative", {"minReadySeconds": -1}),
    (
        "statefulsets",
        "retention bogus",
        {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Bogus"}},
    ),
    ("statefulsets", "restartPolicy never", {"template": {"spec": {"restartPolicy": "Never"}}}),
    ("daemonsets", "updateStrategy bogus", {"updateStrategy": {"type": "Bogus"}}),
    (
        "daemonsets",
        "maxUnavailable zero",
        {"updateStrategy": {"rollingUpdate": {"maxUnavailable": 0}}},
    ),
    (
        "daemonsets",
        "maxUnavailable not a percent",
        {"updateStrategy": {"rollingUpdate": {"maxUnavailable": "abc"}}},
    ),
    (
        "daemonsets",
        "maxUnavailable over 100%",
        {"updateStrategy": {"rollingUpdate": {"maxUnavailable": "101%"}}},
    ),
    (
        "daemonsets",
        "maxSurge with maxUnavailable",
        {"updateStrategy": {"rollingUpdate": {"maxSurge": 1}}},
    ),
    ("daemonsets", "minReadySeconds negative", {"minReadySeconds": -1}),
    ("daemonsets", "revisionHistoryLimit negative", {"revisionHistoryLimit": -1}),
    ("jobs", "parallelism negative", {"parallelism": -1}),
    ("jobs", "completions negative", {"completions": -1}),
    ("jobs", "backoffLimit negative", {"backoffLimit": -1}),
    ("jobs", "activeDeadlineSeconds negative", {"activeDeadlineSeconds": -1}),
    ("jobs", "ttlSecondsAfterFinished negative", {"ttlSecondsAfterFinished": -1}),
    ("jobs", "completionMode bogus", {"completionMode": "Bogus"}),
    (
        "jobs",
        "indexed without completions",
        {"completionMode": "Indexed", "completions": None, "parallelism": 2},
    ),
    ("jobs", "backoffLimitPerIndex not indexed", {"backoffLimitPerIndex": 1}),
    (
        "jobs",
        "podFailurePolicy action bogus",
        {
            "podFailurePolicy": {
                "rules": [{"action": "Bogus", "onExitCodes": {"operator": "In", "values": [1]}}]
            }
        },
    ),
    ("jobs", "restartPolicy always", {"template": {"spec": {"restartPolicy": "Always"}}}),
    ("jobs", "several", {"parallelism": -1, "completions": -1, "backoffLimit": -1}),
    ("jobs", "suspend valid", {"suspend": True}),
    ("cronjobs", "schedule bogus", {"schedule": "bogus"}),
    ("cronjobs", "schedule six fields", {"schedule": "* * * * * *"}),
    ("cronjobs", "schedule minute 61", {"schedule": "61 * * * *"}),
    ("cronjobs", "schedule hour 24", {"schedule": "0 24 * * *"}),
    ("cronjobs", "schedule day 0", {"schedule": "0 0 0 * *"}),
    ("cronjobs", "schedule month name bogus", {"schedule": "0 0 1 foo *"}),
    ("cronjobs", "schedule weekday 7", {"schedule": "0 0 * * 7"}),
    ("cronjobs", "schedule reversed range", {"schedule": "5-1 * * * *"}),
    ("cronjobs", "schedule step zero", {"schedule": "*/0 * * * *"}),
    ("cronjobs", "schedule two hyphens", {"schedule": "1-2-3 * * * *"}),
    ("cronjobs", "schedule two slashes", {"schedule": "1/2/3 * * * *"}),
    ("cronjobs", "schedule negative", {"schedule": "-1 * * * *"}),
    ("cronjobs", "schedule hourly valid", {"schedule": "@hourly"}),
    ("cronjobs", "schedule every valid", {"schedule": "@every 5m"}),
    ("cronjobs", "schedule every bad unit", {"schedule": "@every 5x"}),
    ("cronjobs", "schedule every no unit", {"schedule": "@every 5"}),
    ("cronjobs", "schedule descriptor bogus", {"schedule": "@fortnightly"}),
    ("cronjobs", "schedule names valid", {"schedule": "0 0 * JAN-mar mon-FRI"}),
    ("cronjobs", "schedule TZ", {"schedule": "TZ=UTC 0 0 * * *"}),
    ("cronjobs", "schedule CRON_TZ bad zone", {"schedule": "CRON_TZ=Nowhere/Land 0 0 * * *"}),
    ("cronjobs", "timeZone bogus", {"timeZone": "Nowhere/Land"}),
    ("cronjobs", "concurrencyPolicy bogus", {"concurrencyPolicy": "Bogus"}),
    ("cronjobs", "startingDeadlineSeconds negative", {"startingDeadlineSeconds": -1}),
    ("cronjobs", "successfulJobsHistoryLimit negative", {"successfulJobsHistoryLimit": -1}),
    ("cronjobs", "failedJobsHistoryLimit negative", {"failedJobsHistoryLimit": -1}),
    ("cronjobs", "job parallelism negative", {"jobTemplate": {"spec": {"parallelism": -1}}}),
    (
        "cronjobs",
        "several",
        {"schedule": "bogus", "concurrencyPolicy": "Bogus", "failedJobsHistoryLimit": -1},
    ),
    ("hpa-v1", "maxReplicas zero", {"maxReplicas": 0}),
    ("hpa-v1", "minReplicas zero", {"minReplicas": 0}),
    ("hpa-v1", "max below min", {"minReplicas": 5, "maxReplicas": 3}),
    ("hpa-v1", "target cpu zero", {"targetCPUUtilizationPercentage": 0}),
    ("hpa-v1", "no target name", {"scaleTargetRef": {"name": None}}),
    ("hpa-v1", "target kind with slash", {"scaleTargetRef": {"kind": "a/b"}}),
    ("hpa-v2", "metric type bogus", {"metrics": [{"type": "Bogus"}]}),
    (
        "hpa-v2",
        "utilization zero",
        {
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 0},
                    },
                }
            ]
        },
    ),
    (
        "hpa-v2",
        "no target value",
        {
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}}
            ]
        },
    ),
    (
        "hpa-v2",
        "target type bogus",
        {
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Bogus", "averageUtilization": 50},
                    },
                }
            ]
        },
    ),
    ("hpa-v2", "resource type without resource", {"metrics": [{"type": "Resource"}]}),
    ("hpa-v2", "max below min", {"minReplicas": 5, "maxReplicas": 3, "metrics": [CPU]}),
    ("pdbs", "both set", {"maxUnavailable": 1}),
    ("pdbs", "minAvailable negative", {"minAvailable": -1}),
    ("pdbs", "maxUnavailable over 100%", {"minAvailable": None, "maxUnavailable": "150%"}),
    ("pdbs", "minAvailable not a percent", {"minAvailable": "abc"}),
    ("pdbs", "minAvailable percent valid", {"minAvailable": "50%"}),
]

#: (kind, case, spec merge patch) for the updates of a valid stored object
UPDATES = [
    (D, "replicas negative", {"replicas": -1}),
    (D, "strategy bogus", {"strategy": {"type": "Bogus", "rollingUpdate": None}}),
    ("statefulsets", "serviceName changed", {"serviceName": "other"}),
    ("statefulsets", "podManagementPolicy changed", {"podManagementPolicy": "Parallel"}),
    ("statefulsets", "replicas changed valid", {"replicas": 3}),
    ("statefulsets", "replicas negative", {"replicas": -1}),
    ("jobs", "completions changed", {"completions": 5}),
    ("jobs", "parallelism changed valid", {"parallelism": 3}),
    ("jobs", "parallelism negative", {"parallelism": -1}),
    (
        "jobs",
        "template changed",
        {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}},
    ),
    ("cronjobs", "schedule bogus", {"schedule": "bogus"}),
    ("hpa-v1", "maxReplicas zero", {"maxReplicas": 0}),
    ("pdbs", "both set", {"maxUnavailable": 1}),
    ("pdbs", "minAvailable changed valid", {"minAvailable": 2}),
]


def merge(base, patch):
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def kept(status, answer):
    if status in (200, 201):
        return {"status": status, "kind": answer.get("kind")}
    return {"status": status, **{k: answer.get(k) for k in ("reason", "message", "details")}}


def main():
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
    for kind, (path, obj) in KINDS.items():
        body = merge(obj, {"metadata": {"name": f"wl-{kind}"}})
        status, answer = call("POST", path, body)
        if status not in (201, 409):
            sys.exit(f"{kind}: {status} {answer}")
    exchanges = []
    for kind, case, patch in CREATES:
        path, obj = KINDS[kind]
        body = merge(obj, {"metadata": {"name": f"wl-{kind}-new"}, "spec": patch})
        status, answer = call("POST", path + "?dryRun=All", body)
        exchanges.append(
            {
                "op": "create",
                "kind": kind,
                "case": case,
                "spec": patch,
                "answer": kept(status, answer),
            }
        )
    long_name = "wl-" + "x" * 50
    path, obj = KINDS["cronjobs"]
    status, answer = call(
        "POST", path + "?dryRun=All", merge(obj, {"metadata": {"name": long_name}})
    )
    exchanges.append(
        {
            "op": "create",
            "kind": "cronjobs",
            "case": "name over 52",
            "spec": {},
            "name": long_name,
            "answer": kept(status, answer),
        }
    )
    for kind, case, patch in UPDATES:
        path, _ = KINDS[kind]
        status, answer = call(
            "PATCH", f"{path}/wl-{kind}?dryRun=All", {"spec": patch}, "application/merge-patch+json"
        )
        exchanges.append(
            {
                "op": "update",
                "kind": kind,
                "case": case,
                "spec": patch,
                "answer": kept(status, answer),
            }
        )
    out = {
        "server": "kube-apiserver v1.20.2",
        "namespace": NS,
        "objects": {kind: obj for kind, (_, obj) in KINDS.items()},
        "exchanges": exchanges,
    }
    target = (
        Path(__file__).parent.parent / "tests/data/real-apiserver-1.20/workload-validation.json"
    )
    target.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{len(exchanges)} exchanges -> {target}")


if __name__ == "__main__":
    main()
