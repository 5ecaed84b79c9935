"""Record what the real kube-apiserver 1.20 answers to invalid Services, ConfigMaps,
Secrets and Endpoints (creates with ``dryRun=All``; merge-patch updates of stored
objects with ``dryRun=All``), for tests/facade/test_core_validation_real.py.

Run: python tools/record_core_validation.py > tests/data/real-apiserver-1.20/core-validation.json
A string ``@repeat:<c>:<n>`` in a body stands for ``<c>`` repeated n times, and
``@b64repeat:<c>:<n>`` for the base64 of that (kept short in the file); the test
expands them alike.
"""

import base64
import json
import ssl
import sys
import urllib.error
import urllib.request

BASE, NS, HDR = (
    "https://127.0.0.1:16443",
    "svcspec-core",
    {"Authorization": "Bearer kcm-bench-token"},
)
ctx = ssl._create_unverified_context()
MIB = 1024 * 1024


def expand(value):
    if isinstance(value, dict):
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    if isinstance(value, str) and value.startswith(("@repeat:", "@b64repeat:")):
        how, char, count = value.split(":")
        text = char * int(count)
        return base64.b64encode(text.encode()).decode() if how == "@b64repeat" else text
    return value


def call(method, path, body=None, ctype="application/json"):
    req = urllib.request.Request(
        BASE + path,
        data=None if body is None else json.dumps(expand(body)).encode(),
        method=method,
        headers={**HDR, "Content-Type": ctype},
    )
    try:
        r = urllib.request.urlopen(req, context=ctx)
        return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


PATHS = {
    "services": f"/api/v1/namespaces/{NS}/services",
    "configmaps": f"/api/v1/namespaces/{NS}/configmaps",
    "secrets": f"/api/v1/namespaces/{NS}/secrets",
    "endpoints": f"/api/v1/namespaces/{NS}/endpoints",
}
KINDS = {
    "services": "Service",
    "configmaps": "ConfigMap",
    "secrets": "Secret",
    "endpoints": "Endpoints",
}


def b64(text):
    return base64.b64encode(text.encode()).decode()


def svc(**spec):
    return {"spec": {"ports": [{"port": 80}], **spec}}


def ports(*entries):
    return {"spec": {"ports": list(entries)}}


def ep(*subsets):
    return {"subsets": list(subsets)}


ADDR = {"addresses": [{"ip": "10.1.2.3"}]}

#: The stored objects the updates patch.
OBJECTS = {
    "services": {
        "svcspec-svc": svc(selector={"app": "x"}),
        "svcspec-np": svc(type="NodePort", selector={"app": "x"}),
        "svcspec-lb": svc(type="LoadBalancer", externalTrafficPolicy="Local"),
    },
    "configmaps": {
        "svcspec-cm": {"data": {"a": "b"}},
        "svcspec-cm-imm": {"data": {"a": "b"}, "binaryData": {"c": b64("d")}, "immutable": True},
    },
    "secrets": {
        "svcspec-sec": {"data": {"a": b64("b")}},
        "svcspec-sec-imm": {"data": {"a": b64("b")}, "immutable": True},
        "svcspec-sec-tls": {
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": b64("c"), "tls.key": b64("k")},
        },
    },
    "endpoints": {"svcspec-ep": ep({**ADDR, "ports": [{"port": 80}]})},
}

CREATES = {
    "services": {
        "valid": svc(),
        "type bogus": svc(type="Bogus"),
        "no ports": {"spec": {}},
        "two unnamed ports": ports({"port": 80}, {"port": 81}),
        "duplicate port names": ports({"name": "a", "port": 80}, {"name": "a", "port": 81}),
        "duplicate port and protocol": ports({"name": "a", "port": 80}, {"name": "b", "port": 80}),
        "same port other protocol": ports(
            {"name": "a", "port": 53}, {"name": "b", "port": 53, "protocol": "UDP"}
        ),
        "port 0": ports({"port": 0, "targetPort": 8080}),
        "port 70000": ports({"port": 70000}),
        "protocol SCTPX": ports({"port": 80, "protocol": "SCTPX"}),
        "port name uppercase": ports({"name": "Http", "port": 80}),
        "port name with dots": ports({"name": "a.b", "port": 80}),
        "targetPort 70000": ports({"port": 80, "targetPort": 70000}),
        "targetPort name underscore": ports({"port": 80, "targetPort": "http_x"}),
        "targetPort name too long": ports({"port": 80, "targetPort": "abcdefghijklmnop"}),
        "targetPort name digits": ports({"port": 80, "targetPort": "8080"}),
        "targetPort name hyphens": ports({"port": 80, "targetPort": "-a--b"}),
        "appProtocol invalid": ports({"port": 80, "appProtocol": "a b"}),
        "nodePort below range": {
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 29999}]}
        },
        "nodePort above range": {
            "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 70000}]}
        },
        "nodePort on ClusterIP": ports({"port": 80, "nodePort": 30080}),
        "ExternalName without externalName": {"spec": {"type": "ExternalName"}},
        "ExternalName invalid": {"spec": {"type": "ExternalName", "externalName": "Not_A_Host"}},
        "ExternalName trailing dot": {
            "spec": {"type": "ExternalName", "externalName": "example.com."}
        },
        "sessionAffinity bogus": svc(sessionAffinity="Sticky"),
        "sessionAffinity timeout 0": svc(
            sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 0}}
        ),
        "sessionAffinity timeout too big": svc(
            sessionAffinity="ClientIP",
            sessionAffinityConfig={"clientIP": {"timeoutSeconds": 86401}},
        ),
        "externalTrafficPolicy bogus": svc(type="NodePort", externalTrafficPolicy="Bogus"),
        "externalTrafficPolicy on ClusterIP": svc(externalTrafficPolicy="Local"),
        "healthCheckNodePort on NodePort": svc(type="NodePort", healthCheckNodePort=30999),
        "internalTrafficPolicy bogus": svc(internalTrafficPolicy="Bogus"),
        "ipFamilyPolicy bogus": svc(ipFamilyPolicy="Bogus"),
        "ipFamilies bogus": svc(ipFamilies=["IPv5"]),
        "externalIPs not an IP": svc(externalIPs=["nope"]),
        "externalIPs loopback": svc(externalIPs=["127.0.0.1"]),
        "clusterIP not an IP": svc(clusterIP="abc"),
        "clusterIPs not matching": svc(clusterIP="10.96.5.5", clusterIPs=["10.96.5.6"]),
        "selector invalid value": svc(selector={"app": "a b"}),
        "LoadBalancer headless": svc(type="LoadBalancer", clusterIP="None"),
        "NodePort headless": svc(type="NodePort", clusterIP="None"),
        "loadBalancerSourceRanges on ClusterIP": svc(loadBalancerSourceRanges=["10.0.0.0/8"]),
        "loadBalancerSourceRanges invalid": svc(
            type="LoadBalancer", loadBalancerSourceRanges=["nope"]
        ),
        "allocateLoadBalancerNodePorts on ClusterIP": svc(allocateLoadBalancerNodePorts=True),
        "trafficDistribution bogus": svc(trafficDistribution="Bogus"),
    },
    "configmaps": {
        "valid": {"data": {"a.b_C-1": "x"}},
        "key with space": {"data": {"a b": "x"}},
        "key dot dot": {"data": {"..a": "x"}},
        "key dot": {"data": {".": "x"}},
        "binaryData key invalid": {"binaryData": {"a/b": b64("x")}},
        "key in data and binaryData": {"data": {"k": "v"}, "binaryData": {"k": b64("v")}},
        "too big": {"data": {"k": f"@repeat:x:{MIB + 1}"}},
        "exactly 1 MiB": {"data": {"k": f"@repeat:x:{MIB}"}},
    },
    "secrets": {
        "valid": {"data": {"a": b64("b")}},
        "key with slash": {"data": {"a/b": b64("x")}},
        "too big": {"data": {"k": f"@b64repeat:x:{MIB + 1}"}},
        "stringData key invalid": {"stringData": {"a b": "x"}},
        "tls without keys": {"type": "kubernetes.io/tls"},
        "tls without key": {"type": "kubernetes.io/tls", "data": {"tls.crt": b64("c")}},
        "dockerconfigjson missing": {"type": "kubernetes.io/dockerconfigjson"},
        "dockerconfigjson not JSON": {
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": b64("notjson")},
        },
        "dockerconfigjson array": {
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": b64("[]")},
        },
        "dockerconfigjson empty": {
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": ""},
        },
        "dockerconfigjson truncated": {
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": b64('{"auths":')},
        },
        "dockerconfigjson valid": {
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": b64('{"auths":{}}')},
        },
        "dockercfg missing": {"type": "kubernetes.io/dockercfg"},
        "dockercfg not JSON": {
            "type": "kubernetes.io/dockercfg",
            "data": {".dockercfg": b64("{x")},
        },
        "basic-auth empty": {"type": "kubernetes.io/basic-auth"},
        "basic-auth username only": {"type": "kubernetes.io/basic-auth", "data": {"username": ""}},
        "ssh-auth empty": {"type": "kubernetes.io/ssh-auth"},
        "ssh-auth empty key": {"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}},
        "service-account-token without annotation": {"type": "kubernetes.io/service-account-token"},
        "custom type": {"type": "example.com/custom"},
    },
    "endpoints": {
        "valid": ep({**ADDR, "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}),
        "no addresses": ep({"ports": [{"port": 80}]}),
        "ip not an IP": ep({"addresses": [{"ip": "nope"}]}),
        "ip loopback": ep({"addresses": [{"ip": "127.0.0.1"}]}),
        "ip unspecified": ep({"addresses": [{"ip": "0.0.0.0"}]}),
        "ip link-local": ep({"notReadyAddresses": [{"ip": "169.254.1.1"}]}),
        "ip link-local multicast": ep({"addresses": [{"ip": "224.0.0.5"}]}),
        "hostname invalid": ep({"addresses": [{"ip": "10.1.2.3", "hostname": "A_B"}]}),
        "nodeName invalid": ep({"addresses": [{"ip": "10.1.2.3", "nodeName": "Node_1"}]}),
        "two unnamed ports": ep({**ADDR, "ports": [{"port": 80}, {"port": 81}]}),
        "port 0": ep({**ADDR, "ports": [{"port": 0}]}),
        "protocol bogus": ep({**ADDR, "ports": [{"port": 80, "protocol": "HTTP"}]}),
    },
}

UPDATES = {
    "services": {
        ("svcspec-svc", "type bogus"): {"spec": {"type": "Bogus"}},
        ("svcspec-svc", "second unnamed port"): {"spec": {"ports": [{"port": 80}, {"port": 81}]}},
        ("svcspec-svc", "to NodePort"): {"spec": {"type": "NodePort"}},
        ("svcspec-svc", "selector invalid"): {"spec": {"selector": {"app": "-x"}}},
        ("svcspec-svc", "to ExternalName"): {
            "spec": {"type": "ExternalName", "externalName": "example.com"}
        },
        ("svcspec-np", "to ClusterIP"): {"spec": {"type": "ClusterIP"}},
        ("svcspec-np", "externalTrafficPolicy bogus"): {"spec": {"externalTrafficPolicy": "Bogus"}},
        ("svcspec-lb", "to ClusterIP"): {"spec": {"type": "ClusterIP"}},
        ("svcspec-lb", "to NodePort"): {"spec": {"type": "NodePort"}},
    },
    "configmaps": {
        ("svcspec-cm", "key invalid"): {"data": {"a b": "c"}},
        ("svcspec-cm", "made immutable"): {"immutable": True},
        ("svcspec-cm-imm", "data changed"): {"data": {"a": "changed"}},
        ("svcspec-cm-imm", "binaryData changed"): {"binaryData": {"c": b64("e")}},
        ("svcspec-cm-imm", "immutable unset"): {"immutable": None},
        ("svcspec-cm-imm", "immutable false"): {"immutable": False},
        ("svcspec-cm-imm", "labels only"): {"metadata": {"labels": {"a": "b"}}},
    },
    "secrets": {
        ("svcspec-sec", "type changed"): {
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": b64("c"), "tls.key": b64("k")},
        },
        ("svcspec-sec", "data changed"): {"data": {"a": b64("c")}},
        ("svcspec-sec-imm", "data changed"): {"data": {"a": b64("c")}},
        ("svcspec-sec-imm", "stringData changed"): {"stringData": {"a": "c"}},
        ("svcspec-sec-imm", "immutable false"): {"immutable": False},
        ("svcspec-sec-tls", "key removed"): {"data": {"tls.key": None}},
    },
    "endpoints": {
        ("svcspec-ep", "ip loopback"): {"subsets": [{"addresses": [{"ip": "127.0.0.1"}]}]},
    },
}


def kept(status, answer):
    if status in (200, 201):
        return {"status": status}
    return {"status": status, **{k: answer.get(k) for k in ("reason", "message", "details")}}


def main():
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    objects = {}
    for kind, named in OBJECTS.items():
        for name, obj in named.items():
            body = {"apiVersion": "v1", "kind": KINDS[kind], "metadata": {"name": name}, **obj}
            call("DELETE", f"{PATHS[kind]}/{name}")
            status, answer = call("POST", PATHS[kind], body)
            assert status == 201, answer
            objects.setdefault(kind, {})[name] = body
    exchanges = []
    for kind, cases in CREATES.items():
        for case, obj in cases.items():
            body = {
                "apiVersion": "v1",
                "kind": KINDS[kind],
                "metadata": {"name": "svcspec-new"},
                **obj,
            }
            status, answer = call("POST", PATHS[kind] + "?dryRun=All", body)
            exchanges.append(
                {
                    "kind": kind,
                    "op": "create",
                    "case": case,
                    "body": body,
                    "answer": kept(status, answer),
                }
            )
    for kind, cases in UPDATES.items():
        for (name, case), patch in cases.items():
            status, answer = call(
                "PATCH", f"{PATHS[kind]}/{name}?dryRun=All", patch, "application/merge-patch+json"
            )
            exchanges.append(
                {
                    "kind": kind,
                    "op": "update",
                    "case": case,
                    "name": name,
                    "patch": patch,
                    "answer": kept(status, answer),
                }
            )
    json.dump(
        {
            "server": "kube-apiserver v1.20.2",
            "namespace": NS,
            "objects": objects,
            "exchanges": exchanges,
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
