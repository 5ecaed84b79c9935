"""Record networking spec validation answers from the real kube-apiserver 1.20.2.

Creates (``dryRun=All``) of invalid (and some valid) Ingresses (networking.k8s.io/v1),
IngressClasses and NetworkPolicies, and merge-patch updates (``dryRun=All``) of valid
stored ones, saved to tests/data/real-apiserver-1.20/networking-validation.json for
tests/facade/test_networking_validation_real.py.

Run: cd tools && python record_networking_validation.py
A string ``@repeat:<c>:<n>`` in a body stands for ``<c>`` repeated n times; the test
expands it alike.
"""

import copy
import json
import sys
from pathlib import Path

from _real_apiserver import call  # tools/

NS = "netval"

BACKEND = {"service": {"name": "web", "port": {"number": 80}}}
PATH = {"path": "/", "pathType": "Prefix", "backend": BACKEND}


def rules(*paths, host="netval.example.com"):
    rule = {"http": {"paths": list(paths)}}
    if host is not None:
        rule["host"] = host
    return {"rules": [rule]}


def path(**fields):
    return {**PATH, **fields}


def backend(value):
    return rules(path(backend=value))


#: kind -> (path on the server, a valid object)
KINDS = {
    "ingresses": (
        f"/apis/networking.k8s.io/v1/namespaces/{NS}/ingresses",
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "spec": {
                **rules(PATH),
                "tls": [{"hosts": ["netval.example.com"], "secretName": "tls"}],
            },
        },
    ),
    "ingressclasses": (
        "/apis/networking.k8s.io/v1/ingressclasses",
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "IngressClass",
            "spec": {"controller": "example.com/ingress-controller"},
        },
    ),
    "networkpolicies": (
        f"/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies",
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "spec": {
                "podSelector": {"matchLabels": {"app": "web"}},
                "ingress": [
                    {
                        "from": [{"podSelector": {"matchLabels": {"role": "client"}}}],
                        "ports": [{"protocol": "TCP", "port": 80}],
                    }
                ],
            },
        },
    ),
}

#: (kind, case, spec): each create's spec (the whole spec: it replaces the valid one's)
CREATES = [
    # -- Ingress ---------------------------------------------------------------------
    ("ingresses", "valid", rules(PATH)),
    ("ingresses", "valid defaultBackend only", {"defaultBackend": BACKEND}),
    ("ingresses", "valid rule without http", {"rules": [{"host": "netval.example.com"}]}),
    ("ingresses", "valid wildcard host", rules(PATH, host="*.example.com")),
    ("ingresses", "valid no host", rules(PATH, host=None)),
    (
        "ingresses",
        "valid named port",
        backend({"service": {"name": "web", "port": {"name": "http"}}}),
    ),
    (
        "ingresses",
        "valid resource backend",
        backend({"resource": {"apiGroup": "example.com", "kind": "Bucket", "name": "b"}}),
    ),
    (
        "ingresses",
        "valid ImplementationSpecific empty path",
        rules({"pathType": "ImplementationSpecific", "backend": BACKEND}),
    ),
    ("ingresses", "empty spec", {}),
    ("ingresses", "empty rules", {"rules": []}),
    ("ingresses", "path without pathType", rules({"path": "/", "backend": BACKEND})),
    ("ingresses", "pathType bogus", rules(path(pathType="Regex"))),
    ("ingresses", "pathType lower-case", rules(path(pathType="prefix"))),
    ("ingresses", "Prefix path not absolute", rules(path(path="api"))),
    ("ingresses", "Exact path empty", rules({"pathType": "Exact", "backend": BACKEND})),
    ("ingresses", "Prefix path with //", rules(path(path="/a//b"))),
    ("ingresses", "Exact path with /./ and %2F", rules(path(path="/a/./b%2Fc", pathType="Exact"))),
    ("ingresses", "Prefix path ending /..", rules(path(path="/a/.."))),
    ("ingresses", "Prefix path ending /.", rules(path(path="/a/."))),
    (
        "ingresses",
        "ImplementationSpecific path not absolute",
        rules(path(path="api", pathType="ImplementationSpecific")),
    ),
    (
        "ingresses",
        "ImplementationSpecific path with //",
        rules(path(path="/a//b", pathType="ImplementationSpecific")),
    ),
    ("ingresses", "http without paths", {"rules": [{"host": "netval.example.com", "http": {}}]}),
    ("ingresses", "backend empty", backend({})),
    ("ingresses", "no backend", rules({"path": "/", "pathType": "Prefix"})),
    (
        "ingresses",
        "backend service and resource",
        backend({**BACKEND, "resource": {"kind": "Bucket", "name": "b"}}),
    ),
    ("ingresses", "service without name", backend({"service": {"port": {"number": 80}}})),
    (
        "ingresses",
        "service name not a DNS-1035 label",
        backend({"service": {"name": "1web", "port": {"number": 80}}}),
    ),
    (
        "ingresses",
        "service name with dots",
        backend({"service": {"name": "web.default", "port": {"number": 80}}}),
    ),
    (
        "ingresses",
        "service port name and number",
        backend({"service": {"name": "web", "port": {"name": "http", "number": 80}}}),
    ),
    ("ingresses", "service port empty", backend({"service": {"name": "web", "port": {}}})),
    ("ingresses", "service without port", backend({"service": {"name": "web"}})),
    (
        "ingresses",
        "service port number 70000",
        backend({"service": {"name": "web", "port": {"number": 70000}}}),
    ),
    (
        "ingresses",
        "service port number negative",
        backend({"service": {"name": "web", "port": {"number": -1}}}),
    ),
    (
        "ingresses",
        "service port name upper-case",
        backend({"service": {"name": "web", "port": {"name": "HTTP"}}}),
    ),
    (
        "ingresses",
        "service port name digits",
        backend({"service": {"name": "web", "port": {"name": "8080"}}}),
    ),
    (
        "ingresses",
        "resource without kind and name",
        backend({"resource": {"apiGroup": "example.com"}}),
    ),
    (
        "ingresses",
        "resource bad apiGroup, kind and name",
        backend({"resource": {"apiGroup": "Example_com", "kind": "a/b", "name": ".."}}),
    ),
    ("ingresses", "host an IPv4 address", rules(PATH, host="10.1.2.3")),
    ("ingresses", "host an IPv6 address", rules(PATH, host="::1")),
    ("ingresses", "host upper-case", rules(PATH, host="Netval.Example.com")),
    ("ingresses", "host with port", rules(PATH, host="netval.example.com:8080")),
    ("ingresses", "host wildcard in the middle", rules(PATH, host="foo.*.example.com")),
    ("ingresses", "host wildcard alone", rules(PATH, host="*")),
    ("ingresses", "host wildcard with bad path", rules(path(path="api"), host="*.example.com")),
    (
        "ingresses",
        "defaultBackend without port",
        {"defaultBackend": {"service": {"name": "web"}}},
    ),
    ("ingresses", "defaultBackend empty", {"defaultBackend": {}}),
    (
        "ingresses",
        "tls bad hosts and secretName",
        {
            **rules(PATH),
            "tls": [
                {
                    "hosts": ["Bad_Host", "*.example.com", "*.*.example.com"],
                    "secretName": "Tls_Secret",
                }
            ],
        },
    ),
    (
        "ingresses",
        "tls without secretName",
        {**rules(PATH), "tls": [{"hosts": ["netval.example.com"]}]},
    ),
    ("ingresses", "Prefix path with /../", rules(path(path="/a/../b"))),
    ("ingresses", "path with %2f", rules(path(path="/a%2fb"))),
    (
        "ingresses",
        "tls host an IP address",
        {**rules(PATH), "tls": [{"hosts": ["10.1.2.3"], "secretName": "tls"}]},
    ),
    (
        "ingresses",
        "defaultBackend resource without name",
        {"defaultBackend": {"resource": {"kind": "Bucket"}}},
    ),
    ("ingresses", "ingressClassName invalid", {**rules(PATH), "ingressClassName": "Nginx_Class"}),
    (
        "ingresses",
        "many mistakes",
        {
            "defaultBackend": {"service": {"name": "web", "port": {}}},
            "rules": [
                {"host": "1.2.3.4", "http": {"paths": [{"path": "x", "backend": BACKEND}]}},
                {
                    "host": "ok.example.com",
                    "http": {"paths": [path(path="x", pathType="Exact", backend={})]},
                },
            ],
            "tls": [{"secretName": "Bad"}],
            "ingressClassName": "Bad",
        },
    ),
    # -- IngressClass ----------------------------------------------------------------
    ("ingressclasses", "valid", {"controller": "example.com/ingress-controller"}),
    (
        "ingressclasses",
        "valid parameters",
        {
            "controller": "example.com/ingress-controller",
            "parameters": {"apiGroup": "example.com", "kind": "Params", "name": "p"},
        },
    ),
    ("ingressclasses", "no controller", {}),
    ("ingressclasses", "controller without domain", {"controller": "nginx"}),
    ("ingressclasses", "controller empty path", {"controller": "example.com/"}),
    ("ingressclasses", "controller empty domain", {"controller": "/nginx"}),
    ("ingressclasses", "controller bad domain", {"controller": "Example_com/nginx"}),
    ("ingressclasses", "controller bad path", {"controller": "example.com/a b"}),
    ("ingressclasses", "controller too long", {"controller": "example.com/@repeat:a:250"}),
    (
        "ingressclasses",
        "parameters without kind and name",
        {"controller": "example.com/c", "parameters": {"apiGroup": "example.com"}},
    ),
    (
        "ingressclasses",
        "parameters bad apiGroup, kind and name",
        {
            "controller": "example.com/c",
            "parameters": {"apiGroup": "Example_com", "kind": "a/b", "name": "a%b"},
        },
    ),
    (
        "ingressclasses",
        "parameters scope bogus",
        {"controller": "example.com/c", "parameters": {"kind": "K", "name": "n", "scope": "Bogus"}},
    ),
    (
        "ingressclasses",
        "parameters scope Namespace without namespace",
        {
            "controller": "example.com/c",
            "parameters": {"kind": "K", "name": "n", "scope": "Namespace"},
        },
    ),
    (
        "ingressclasses",
        "parameters scope Namespace bad namespace",
        {
            "controller": "example.com/c",
            "parameters": {"kind": "K", "name": "n", "scope": "Namespace", "namespace": "Bad_NS"},
        },
    ),
    (
        "ingressclasses",
        "parameters scope Cluster with namespace",
        {
            "controller": "example.com/c",
            "parameters": {"kind": "K", "name": "n", "scope": "Cluster", "namespace": "default"},
        },
    ),
    # -- NetworkPolicy ---------------------------------------------------------------
    ("networkpolicies", "valid", KINDS["networkpolicies"][1]["spec"]),
    ("networkpolicies", "valid empty spec", {}),
    ("networkpolicies", "valid deny all egress", {"podSelector": {}, "policyTypes": ["Egress"]}),
    (
        "networkpolicies",
        "valid named port and UDP",
        {"podSelector": {}, "ingress": [{"ports": [{"protocol": "UDP", "port": "dns"}]}]},
    ),
    (
        "networkpolicies",
        "valid ipBlock with except",
        {
            "podSelector": {},
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]}],
        },
    ),
    (
        "networkpolicies",
        "valid IPv6 ipBlock",
        {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "fd00::/8"}}]}]},
    ),
    (
        "networkpolicies",
        "valid pod and namespace selectors",
        {
            "podSelector": {},
            "ingress": [
                {"from": [{"podSelector": {}, "namespaceSelector": {"matchLabels": {"team": "a"}}}]}
            ],
        },
    ),
    (
        "networkpolicies",
        "valid endPort",
        {"podSelector": {}, "egress": [{"ports": [{"port": 32000, "endPort": 32768}]}]},
    ),
    (
        "networkpolicies",
        "protocol ICMP",
        {"podSelector": {}, "ingress": [{"ports": [{"protocol": "ICMP"}]}]},
    ),
    (
        "networkpolicies",
        "protocol lower-case",
        {"podSelector": {}, "egress": [{"ports": [{"protocol": "tcp", "port": 53}]}]},
    ),
    ("networkpolicies", "port 0", {"podSelector": {}, "ingress": [{"ports": [{"port": 0}]}]}),
    (
        "networkpolicies",
        "port 70000",
        {"podSelector": {}, "ingress": [{"ports": [{"port": 70000}]}]},
    ),
    (
        "networkpolicies",
        "port name upper-case",
        {"podSelector": {}, "ingress": [{"ports": [{"port": "HTTP"}]}]},
    ),
    (
        "networkpolicies",
        "port name digits",
        {"podSelector": {}, "ingress": [{"ports": [{"port": "8080"}]}]},
    ),
    (
        "networkpolicies",
        "port name too long",
        {"podSelector": {}, "ingress": [{"ports": [{"port": "a-very-long-port-name"}]}]},
    ),
    (
        "networkpolicies",
        "endPort below port",
        {"podSelector": {}, "egress": [{"ports": [{"port": 32000, "endPort": 31000}]}]},
    ),
    (
        "networkpolicies",
        "endPort 70000",
        {"podSelector": {}, "egress": [{"ports": [{"port": 32000, "endPort": 70000}]}]},
    ),
    (
        "networkpolicies",
        "endPort with named port",
        {"podSelector": {}, "egress": [{"ports": [{"port": "http", "endPort": 90}]}]},
    ),
    (
        "networkpolicies",
        "endPort without port",
        {"podSelector": {}, "egress": [{"ports": [{"endPort": 90}]}]},
    ),
    ("networkpolicies", "empty peer", {"podSelector": {}, "ingress": [{"from": [{}]}]}),
    ("networkpolicies", "empty egress peer", {"podSelector": {}, "egress": [{"to": [{}]}]}),
    (
        "networkpolicies",
        "ipBlock without cidr",
        {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"except": ["10.0.0.0/24"]}}]}]},
    ),
    (
        "networkpolicies",
        "ipBlock cidr an address",
        {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.1"}}]}]},
    ),
    (
        "networkpolicies",
        "ipBlock cidr prefix 33",
        {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]},
    ),
    (
        "networkpolicies",
        "ipBlock cidr with host bits",
        {"podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.1/8"}}]}]},
    ),
    (
        "networkpolicies",
        "ipBlock except outside cidr",
        {
            "podSelector": {},
            "egress": [
                {
                    "to": [
                        {
                            "ipBlock": {
                                "cidr": "10.0.0.0/16",
                                "except": ["192.168.0.0/24", "10.0.0.0/16", "10.0.0.0/8"],
                            }
                        }
                    ]
                }
            ],
        },
    ),
    (
        "networkpolicies",
        "ipBlock except not a CIDR",
        {
            "podSelector": {},
            "egress": [
                {"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.2.3", "300.0.0.0/8"]}}]}
            ],
        },
    ),
    (
        "networkpolicies",
        "ipBlock with podSelector",
        {
            "podSelector": {},
            "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}, "podSelector": {}}]}],
        },
    ),
    (
        "networkpolicies",
        "peer with bad selectors",
        {
            "podSelector": {},
            "ingress": [
                {
                    "from": [
                        {
                            "podSelector": {
                                "matchExpressions": [{"key": "a", "operator": "Equals"}]
                            },
                            "namespaceSelector": {"matchLabels": {"bad key!": "x"}},
                        }
                    ]
                }
            ],
        },
    ),
    (
        "networkpolicies",
        "protocol empty",
        {"podSelector": {}, "ingress": [{"ports": [{"protocol": "", "port": 80}]}]},
    ),
    (
        "networkpolicies",
        "ipBlock IPv6 except in IPv4 cidr",
        {
            "podSelector": {},
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["fd00::/64"]}}]}],
        },
    ),
    (
        "networkpolicies",
        "ipBlock with namespaceSelector and bad cidr",
        {
            "podSelector": {},
            "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/40"}, "namespaceSelector": {}}]}],
        },
    ),
    ("networkpolicies", "policyTypes bogus", {"podSelector": {}, "policyTypes": ["Inbound"]}),
    (
        "networkpolicies",
        "policyTypes lower-case",
        {"podSelector": {}, "policyTypes": ["ingress", "Egress"]},
    ),
    (
        "networkpolicies",
        "policyTypes three",
        {"podSelector": {}, "policyTypes": ["Ingress", "Egress", "Ingress"]},
    ),
    (
        "networkpolicies",
        "many mistakes",
        {
            "podSelector": {"matchLabels": {"app": "-bad-"}},
            "ingress": [
                {
                    "ports": [{"protocol": "ICMP", "port": 0}],
                    "from": [{}, {"ipBlock": {"cidr": "x"}}],
                }
            ],
            "egress": [
                {
                    "ports": [{"port": "HTTP"}],
                    "to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}],
                }
            ],
            "policyTypes": ["Ingress", "Sideways"],
        },
    ),
]

#: (kind, case, merge patch of the stored valid object)
UPDATES = [
    (
        "ingresses",
        "valid host change",
        {"spec": {"rules": rules(PATH, host="other.example.com")["rules"]}},
    ),
    (
        "ingresses",
        "pathType removed",
        {"spec": {"rules": rules({"path": "/", "backend": BACKEND})["rules"]}},
    ),
    ("ingresses", "pathType bogus", {"spec": {"rules": rules(path(pathType="Bogus"))["rules"]}}),
    ("ingresses", "rules removed", {"spec": {"rules": None}}),
    ("ingresses", "tls secretName invalid", {"spec": {"tls": [{"secretName": "Bad_Name"}]}}),
    (
        "ingresses",
        "class annotation with ingressClassName",
        {
            "metadata": {"annotations": {"kubernetes.io/ingress.class": "nginx"}},
            "spec": {"ingressClassName": "nginx"},
        },
    ),
    (
        "ingresses",
        "valid pathType Exact",
        {"spec": {"rules": rules(path(pathType="Exact"))["rules"]}},
    ),
    (
        "ingressclasses",
        "valid parameters added",
        {"spec": {"parameters": {"kind": "K", "name": "n"}}},
    ),
    ("ingressclasses", "controller changed", {"spec": {"controller": "example.com/other"}}),
    ("ingressclasses", "controller removed", {"spec": {"controller": None}}),
    ("ingressclasses", "parameters without name", {"spec": {"parameters": {"kind": "K"}}}),
    ("networkpolicies", "valid policyTypes", {"spec": {"policyTypes": ["Ingress", "Egress"]}}),
    ("networkpolicies", "policyTypes bogus", {"spec": {"policyTypes": ["Bogus"]}}),
    (
        "networkpolicies",
        "protocol bogus",
        {"spec": {"ingress": [{"ports": [{"protocol": "HTTP", "port": 80}]}]}},
    ),
    ("networkpolicies", "empty peer", {"spec": {"egress": [{"to": [{}]}]}}),
    (
        "networkpolicies",
        "podSelector bad",
        {"spec": {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}},
    ),
]

#: (case, merge patch of the stored Ingress's status, through /status)
STATUS_UPDATES = [
    (
        "valid",
        {
            "status": {
                "loadBalancer": {"ingress": [{"ip": "10.0.0.1"}, {"hostname": "lb.example.com"}]}
            }
        },
    ),
    ("ip not an IP", {"status": {"loadBalancer": {"ingress": [{"ip": "lb.example.com"}]}}}),
    ("hostname an IP", {"status": {"loadBalancer": {"ingress": [{"hostname": "10.0.0.1"}]}}}),
    (
        "hostname not a DNS name",
        {"status": {"loadBalancer": {"ingress": [{"hostname": "Bad_Host"}]}}},
    ),
    (
        "second entry bad ip and hostname",
        {
            "status": {
                "loadBalancer": {
                    "ingress": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.256", "hostname": "-x"}]
                }
            }
        },
    ),
]


#: Creates with the ``kubernetes.io/ingress.class`` annotation and ``ingressClassName``
#: (a rule of creates only): (case, annotation, class name).
ANNOTATED = [
    ("class annotation with ingressClassName", "nginx", "nginx"),
    ("class annotation other than ingressClassName", "nginx", "haproxy"),
]


def expand(value):
    if isinstance(value, dict):
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    if isinstance(value, str) and "@repeat:" in value:
        head, _, spec = value.partition("@repeat:")
        char, count = spec.split(":")
        return head + char * int(count)
    return value


def kept(status, answer):
    if status in (200, 201):
        return {"status": status, "kind": answer.get("kind")}
    return {"status": status, **{k: answer.get(k) for k in ("reason", "message", "details")}}


def new_object(kind, spec, meta=None):
    _, obj = KINDS[kind]
    body = copy.deepcopy(obj)
    body["metadata"] = {"name": f"netval-{kind}-new", **(meta or {})}
    body["spec"] = spec
    return body


def main():
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    objects = {}
    for kind, (where, obj) in KINDS.items():
        body = {**copy.deepcopy(obj), "metadata": {"name": f"netval-{kind}"}}
        call("DELETE", f"{where}/netval-{kind}")
        status, answer = call("POST", where, body)
        if status != 201:
            sys.exit(f"{kind}: {status} {answer}")
        objects[kind] = body
    exchanges = []
    for kind, case, spec in CREATES:
        where, _ = KINDS[kind]
        body = new_object(kind, spec)
        status, answer = call("POST", where + "?dryRun=All", expand(body))
        exchanges.append(
            {
                "op": "create",
                "kind": kind,
                "case": case,
                "body": body,
                "answer": kept(status, answer),
            }
        )
    for case, annotation, name in ANNOTATED:
        meta = {"annotations": {"kubernetes.io/ingress.class": annotation}}
        body = new_object("ingresses", {**rules(PATH), "ingressClassName": name}, meta)
        status, answer = call("POST", KINDS["ingresses"][0] + "?dryRun=All", body)
        exchanges.append(
            {
                "op": "create",
                "kind": "ingresses",
                "case": case,
                "body": body,
                "answer": kept(status, answer),
            }
        )
    for kind, case, patch in UPDATES:
        where, _ = KINDS[kind]
        status, answer = call(
            "PATCH", f"{where}/netval-{kind}?dryRun=All", patch, "application/merge-patch+json"
        )
        exchanges.append(
            {
                "op": "update",
                "kind": kind,
                "case": case,
                "name": f"netval-{kind}",
                "patch": patch,
                "answer": kept(status, answer),
            }
        )
    for case, patch in STATUS_UPDATES:
        where = f"{KINDS['ingresses'][0]}/netval-ingresses/status?dryRun=All"
        status, answer = call("PATCH", where, patch, "application/merge-patch+json")
        exchanges.append(
            {
                "op": "status",
                "kind": "ingresses",
                "case": case,
                "name": "netval-ingresses",
                "patch": patch,
                "answer": kept(status, answer),
            }
        )
    out = {
        "server": "kube-apiserver v1.20.2",
        "namespace": NS,
        "objects": objects,
        "exchanges": exchanges,
    }
    target = (
        Path(__file__).parent.parent / "tests/data/real-apiserver-1.20/networking-validation.json"
    )
    target.write_text(json.dumps(out, indent=1) + "\n")
    print(f"{len(exchanges)} exchanges -> {target}")


if __name__ == "__main__":
    main()
