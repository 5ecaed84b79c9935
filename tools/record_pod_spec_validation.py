"""Record PodSpec validation answers from the real kube-apiserver 1.20.

Creates (``dryRun=All``) of Pods and of every kind with a pod template, each with a
spec a real server refuses (or keeps), and merge-patch updates of a stored Pod and
Deployment; writes tests/data/real-apiserver-1.20/pod-spec-validation.json.
"""

import copy
import json
import ssl
import sys
import urllib.error
import urllib.request

BASE, NS, HDR = (
    "https://127.0.0.1:16443",
    "podspec",
    {"Authorization": "Bearer kcm-bench-token"},
)
ctx = ssl._create_unverified_context()


def call(method, path, body=None, ctype="application/json"):
    req = urllib.request.Request(
        BASE + path,
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={**HDR, "Content-Type": ctype},
    )
    try:
        r = urllib.request.urlopen(req, context=ctx)
        return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def C(**extra):
    return {"name": "c", "image": "nginx", **extra}


def S(*containers, **extra):
    return {"automountServiceAccountToken": False, "containers": list(containers or [C()]), **extra}


# (case, pod spec): each sent as a Pod's spec.
POD_CASES = [
    ("valid", S()),
    ("no containers", {"automountServiceAccountToken": False, "containers": []}),
    ("container without name", S({"image": "nginx"})),
    ("container name not a DNS label", S(C(name="Bad_Name"))),
    ("duplicate container names", S(C(), C())),
    ("init container named like a container", S(C(), initContainers=[C(image="busybox")])),
    ("container without image", S({"name": "c"})),
    ("two containers without image", S({"name": "a"}, {"name": "b"})),
    ("imagePullPolicy unsupported", S(C(imagePullPolicy="Sometimes"))),
    ("restartPolicy unsupported", S(restartPolicy="Sometimes")),
    ("dnsPolicy unsupported", S(dnsPolicy="Google")),
    ("protocol unsupported", S(C(ports=[{"containerPort": 80, "protocol": "HTTP"}]))),
    ("terminationMessagePolicy unsupported", S(C(terminationMessagePolicy="Never"))),
    ("containerPort 70000", S(C(ports=[{"containerPort": 70000}]))),
    ("containerPort 0", S(C(ports=[{"containerPort": 0}]))),
    ("containerPort negative", S(C(ports=[{"containerPort": -1}]))),
    ("hostPort 70000", S(C(ports=[{"containerPort": 80, "hostPort": 70000}]))),
    ("port name too long", S(C(ports=[{"containerPort": 80, "name": "a-very-long-port-name"}]))),
    ("port name upper case", S(C(ports=[{"containerPort": 80, "name": "HTTP"}]))),
    ("port name digits only", S(C(ports=[{"containerPort": 80, "name": "8080"}]))),
    ("port name double hyphen", S(C(ports=[{"containerPort": 80, "name": "a--b"}]))),
    ("port name ends with hyphen", S(C(ports=[{"containerPort": 80, "name": "http-"}]))),
    (
        "duplicate port names",
        S(C(ports=[{"containerPort": 80, "name": "http"}, {"containerPort": 81, "name": "http"}])),
    ),
    (
        "duplicate hostPorts",
        S(
            C(ports=[{"containerPort": 80, "hostPort": 8080}]),
            C(name="d", ports=[{"containerPort": 81, "hostPort": 8080}]),
        ),
    ),
    ("env name invalid", S(C(env=[{"name": "1-bad", "value": "x"}]))),
    ("env name with a space", S(C(env=[{"name": "A B", "value": "x"}]))),
    ("env name empty", S(C(env=[{"name": "", "value": "x"}]))),
    ("env valueFrom empty", S(C(env=[{"name": "A", "valueFrom": {}}]))),
    (
        "env value and valueFrom",
        S(
            C(
                env=[
                    {
                        "name": "A",
                        "value": "x",
                        "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}},
                    }
                ]
            )
        ),
    ),
    (
        "env valueFrom two sources",
        S(
            C(
                env=[
                    {
                        "name": "A",
                        "valueFrom": {
                            "fieldRef": {"fieldPath": "metadata.name"},
                            "secretKeyRef": {"name": "s", "key": "k"},
                        },
                    }
                ]
            )
        ),
    ),
    (
        "env fieldRef path unsupported",
        S(C(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.bogus"}}}])),
    ),
    (
        "env secretKeyRef without key",
        S(C(env=[{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": ""}}}])),
    ),
    (
        "env configMapKeyRef without name",
        S(C(env=[{"name": "A", "valueFrom": {"configMapKeyRef": {"key": "k"}}}])),
    ),
    ("volume name empty", S(volumes=[{"name": "", "emptyDir": {}}])),
    ("volume name not a DNS label", S(volumes=[{"name": "Data", "emptyDir": {}}])),
    (
        "duplicate volume names",
        S(volumes=[{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]),
    ),
    ("volume without source", S(volumes=[{"name": "v"}])),
    (
        "volume with two sources",
        S(volumes=[{"name": "v", "emptyDir": {}, "hostPath": {"path": "/tmp"}}]),
    ),
    ("volume hostPath without path", S(volumes=[{"name": "v", "hostPath": {"path": ""}}])),
    ("volume configMap without name", S(volumes=[{"name": "v", "configMap": {}}])),
    ("volume secret without secretName", S(volumes=[{"name": "v", "secret": {}}])),
    (
        "volume pvc without claimName",
        S(volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": ""}}]),
    ),
    ("volumeMount names no volume", S(C(volumeMounts=[{"name": "data", "mountPath": "/data"}]))),
    (
        "volumeMount without mountPath",
        S(
            C(volumeMounts=[{"name": "v", "mountPath": ""}]),
            volumes=[{"name": "v", "emptyDir": {}}],
        ),
    ),
    ("volumeMount without name", S(C(volumeMounts=[{"name": "", "mountPath": "/a"}]))),
    (
        "volumeMount duplicate mountPath",
        S(
            C(volumeMounts=[{"name": "v", "mountPath": "/a"}, {"name": "w", "mountPath": "/a"}]),
            volumes=[{"name": "v", "emptyDir": {}}, {"name": "w", "emptyDir": {}}],
        ),
    ),
    (
        "volumeMount subPath absolute",
        S(
            C(volumeMounts=[{"name": "v", "mountPath": "/a", "subPath": "/x"}]),
            volumes=[{"name": "v", "emptyDir": {}}],
        ),
    ),
    (
        "volumeMount subPath with ..",
        S(
            C(volumeMounts=[{"name": "v", "mountPath": "/a", "subPath": "x/../.."}]),
            volumes=[{"name": "v", "emptyDir": {}}],
        ),
    ),
    (
        "cpu request above limit",
        S(C(resources={"requests": {"cpu": "200m"}, "limits": {"cpu": "100m"}})),
    ),
    (
        "memory request above limit",
        S(C(resources={"requests": {"memory": "128Mi"}, "limits": {"memory": "64Mi"}})),
    ),
    ("negative cpu request", S(C(resources={"requests": {"cpu": "-1"}}))),
    ("resource name unknown", S(C(resources={"limits": {"foo": "1"}}))),
    ("resource quantity bad", S(C(resources={"limits": {"cpu": "lots"}}))),
    ("hugepages without cpu or memory", S(C(resources={"limits": {"hugepages-2Mi": "2Mi"}}))),
    ("probe without handler", S(C(livenessProbe={"periodSeconds": 5}))),
    (
        "probe with two handlers",
        S(C(livenessProbe={"exec": {"command": ["true"]}, "tcpSocket": {"port": 80}})),
    ),
    (
        "liveness successThreshold 2",
        S(C(livenessProbe={"exec": {"command": ["true"]}, "successThreshold": 2})),
    ),
    (
        "probe negative periodSeconds",
        S(C(readinessProbe={"exec": {"command": ["true"]}, "periodSeconds": -1})),
    ),
    ("probe httpGet port 0", S(C(readinessProbe={"httpGet": {"port": 0}}))),
    ("probe httpGet named port invalid", S(C(readinessProbe={"httpGet": {"port": "No_Such"}}))),
    ("terminationGracePeriodSeconds negative", S(terminationGracePeriodSeconds=-5)),
    ("activeDeadlineSeconds 0", S(activeDeadlineSeconds=0)),
    ("nodeSelector bad key", S(nodeSelector={"a b": "x"})),
    ("nodeSelector bad value", S(nodeSelector={"disk": "x y"})),
    (
        "toleration operator unsupported",
        S(tolerations=[{"key": "k", "operator": "In", "value": "v"}]),
    ),
    (
        "toleration Exists with value",
        S(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]),
    ),
    ("toleration empty key with Equal", S(tolerations=[{"operator": "Equal", "value": "v"}])),
    (
        "toleration effect unsupported",
        S(tolerations=[{"key": "k", "operator": "Exists", "effect": "Never"}]),
    ),
    ("toleration bad key", S(tolerations=[{"key": "a b", "operator": "Exists"}])),
    (
        "tolerationSeconds without NoExecute",
        S(
            tolerations=[
                {"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}
            ]
        ),
    ),
    ("hostname invalid", S(hostname="Bad_Host")),
    ("serviceAccountName invalid", S(serviceAccountName="Bad_SA")),
    (
        "many errors",
        S(
            {"name": "Bad", "imagePullPolicy": "x", "ports": [{"containerPort": 70000}]},
            C(volumeMounts=[{"name": "nope", "mountPath": "/a"}]),
            restartPolicy="Sometimes",
        ),
    ),
]

TEMPLATED = {
    "deployments": ("apps/v1", "Deployment", "/apis/apps/v1", True, "Always"),
    "replicasets": ("apps/v1", "ReplicaSet", "/apis/apps/v1", True, "Always"),
    "daemonsets": ("apps/v1", "DaemonSet", "/apis/apps/v1", True, "Always"),
    "statefulsets": ("apps/v1", "StatefulSet", "/apis/apps/v1", True, "Always"),
    "replicationcontrollers": ("v1", "ReplicationController", "/api/v1", False, "Always"),
    "jobs": ("batch/v1", "Job", "/apis/batch/v1", False, "Never"),
    "cronjobs": ("batch/v1beta1", "CronJob", "/apis/batch/v1beta1", False, "Never"),
    "podtemplates": ("v1", "PodTemplate", "/api/v1", False, None),
}
TEMPLATE_CASES = [
    ("valid", S()),
    ("restartPolicy Never", S(restartPolicy="Never")),
    ("restartPolicy OnFailure", S(restartPolicy="OnFailure")),
    ("restartPolicy Always", S(restartPolicy="Always")),
    ("restartPolicy unsupported", S(restartPolicy="Sometimes")),
    ("container without image", S({"name": "c"})),
    ("volumeMount names no volume", S(C(volumeMounts=[{"name": "data", "mountPath": "/data"}]))),
    (
        "cpu request above limit",
        S(C(resources={"requests": {"cpu": "200m"}, "limits": {"cpu": "100m"}})),
    ),
    ("containerPort 70000 and bad name", S(C(name="Bad", ports=[{"containerPort": 70000}]))),
    ("no containers", {"automountServiceAccountToken": False, "containers": []}),
    ("activeDeadlineSeconds", S(activeDeadlineSeconds=30)),
    (
        "init container with a probe",
        S(initContainers=[C(name="i", readinessProbe={"exec": {"command": ["true"]}})]),
    ),
]
LABELS = {"app": "podspec"}


def templated(kind, name, spec, restart):
    api_version, kind_name, _, selector, default_restart = TEMPLATED[kind]
    spec = copy.deepcopy(spec)
    if restart is None and default_restart and "restartPolicy" not in spec:
        spec["restartPolicy"] = default_restart
    template = {"metadata": {"labels": LABELS}, "spec": spec}
    body = {"apiVersion": api_version, "kind": kind_name, "metadata": {"name": name}}
    if kind == "podtemplates":
        body["template"] = template
    elif kind == "cronjobs":
        body["spec"] = {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template}}}
    elif kind == "jobs":
        body["spec"] = {"template": template}
    else:
        body["spec"] = {"template": template}
        if selector:
            body["spec"]["selector"] = {"matchLabels": LABELS}
        if kind == "statefulsets":
            body["spec"]["serviceName"] = "podspec"
        if kind == "replicationcontrollers":
            body["spec"]["selector"] = LABELS
    return body


def path_of(kind):
    return (
        f"{TEMPLATED[kind][2]}/namespaces/{NS}/{kind}"
        if kind != "pods"
        else f"/api/v1/namespaces/{NS}/pods"
    )


def essentials(status, body):
    if status in (200, 201):
        return {"status": status}
    return {
        "status": status,
        "reason": body.get("reason"),
        "message": body.get("message"),
        "details": body.get("details"),
    }


def main():
    out = {"namespace": NS, "server": "v1.20.2", "exchanges": []}
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
    pods = path_of("pods")
    for case, spec in POD_CASES:
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "podspec-new"},
            "spec": spec,
        }
        s, b = call("POST", pods + "?dryRun=All", body)
        out["exchanges"].append(
            {"kind": "pods", "op": "create", "case": case, "body": body, "answer": essentials(s, b)}
        )
    for kind in TEMPLATED:
        for case, spec in TEMPLATE_CASES:
            restart = spec.get("restartPolicy")
            body = templated(kind, "podspec-new", spec, restart)
            s, b = call("POST", path_of(kind) + "?dryRun=All", body)
            out["exchanges"].append(
                {
                    "kind": kind,
                    "op": "create",
                    "case": case,
                    "body": body,
                    "answer": essentials(s, b),
                }
            )
    # Updates: a stored Pod and Deployment, merge-patched (dryRun=All).
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "podspec-stored"},
        "spec": S(
            C(env=[{"name": "A", "value": "1"}]),
            tolerations=[{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
            activeDeadlineSeconds=100,
        ),
    }
    call("DELETE", pods + "/podspec-stored?gracePeriodSeconds=0")
    s, b = call("POST", pods, pod)
    assert s == 201, b
    out["stored"] = {"pods": pod}
    patches = [
        ("image changed", {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}),
        ("env changed", {"spec": {"containers": [C(env=[{"name": "A", "value": "2"}])]}}),
        (
            "container added",
            {"spec": {"containers": [C(env=[{"name": "A", "value": "1"}]), C(name="d")]}},
        ),
        ("activeDeadlineSeconds lowered", {"spec": {"activeDeadlineSeconds": 50}}),
        ("activeDeadlineSeconds raised", {"spec": {"activeDeadlineSeconds": 200}}),
        ("activeDeadlineSeconds removed", {"spec": {"activeDeadlineSeconds": None}}),
        (
            "toleration added",
            {
                "spec": {
                    "tolerations": [
                        {"key": "k", "operator": "Exists", "effect": "NoSchedule"},
                        {"key": "j", "operator": "Exists"},
                    ]
                }
            },
        ),
        ("toleration removed", {"spec": {"tolerations": None}}),
        ("restartPolicy changed", {"spec": {"restartPolicy": "Never"}}),
        ("nodeSelector added", {"spec": {"nodeSelector": {"a": "b"}}}),
        ("image removed", {"spec": {"containers": [{"name": "c", "image": ""}]}}),
        ("terminationGracePeriodSeconds changed", {"spec": {"terminationGracePeriodSeconds": 5}}),
        ("labels changed only", {"metadata": {"labels": {"x": "y"}}}),
    ]
    for case, patch in patches:
        s, b = call(
            "PATCH", pods + "/podspec-stored?dryRun=All", patch, "application/merge-patch+json"
        )
        out["exchanges"].append(
            {
                "kind": "pods",
                "op": "update",
                "case": case,
                "body": patch,
                "answer": essentials(s, b),
            }
        )
    json_patches = [
        (
            "image only",
            [{"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:latest"}],
        ),
        (
            "port added",
            [{"op": "add", "path": "/spec/containers/0/ports", "value": [{"containerPort": 80}]}],
        ),
        (
            "toleration seconds added",
            [{"op": "add", "path": "/spec/tolerations/0/tolerationSeconds", "value": 5}],
        ),
        (
            "image and env",
            [
                {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:latest"},
                {"op": "replace", "path": "/spec/containers/0/env/0/value", "value": "2"},
            ],
        ),
    ]
    for case, patch in json_patches:
        s, b = call(
            "PATCH", pods + "/podspec-stored?dryRun=All", patch, "application/json-patch+json"
        )
        out["exchanges"].append(
            {
                "kind": "pods",
                "op": "json-patch",
                "case": case,
                "body": patch,
                "answer": essentials(s, b),
            }
        )
    dep = templated("deployments", "podspec-stored", S(), None)
    call("DELETE", path_of("deployments") + "/podspec-stored")
    s, b = call("POST", path_of("deployments"), dep)
    assert s == 201, b
    out["stored"]["deployments"] = dep
    dep_patches = [
        (
            "image removed",
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": ""}]}}}},
        ),
        ("restartPolicy Never", {"spec": {"template": {"spec": {"restartPolicy": "Never"}}}}),
        (
            "image changed",
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}},
        ),
    ]
    for case, patch in dep_patches:
        s, b = call(
            "PATCH",
            path_of("deployments") + "/podspec-stored?dryRun=All",
            patch,
            "application/merge-patch+json",
        )
        out["exchanges"].append(
            {
                "kind": "deployments",
                "op": "update",
                "case": case,
                "body": patch,
                "answer": essentials(s, b),
            }
        )
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
