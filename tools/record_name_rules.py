"""Record how the real kube-apiserver 1.20 checks ``metadata.name`` (and
``metadata.generateName``) for every built-in kind it lets clients create, for
tests/facade/test_name_rules_real.py.

Each kind is sent a bare object (``apiVersion``, ``kind``, ``metadata``) with
``?dryRun=All`` under each of a set of names; the answer's status and its causes
about ``metadata.name`` / ``metadata.generateName`` are kept (a bare object breaks
other rules too: those causes are the kinds' own, recorded elsewhere).

Run: python tools/record_name_rules.py > tests/data/real-apiserver-1.20/name-rules.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

from _real_apiserver import call  # tools/

NS = "lead-names"
#: name -> why it is in the set
NAMES = {
    "ok-name": "valid everywhere",
    "Bad_Name": "upper case and underscore",
    "a.b": "a dot (a label's rules refuse it)",
    "1abc": "starts with a digit (DNS-1035 refuses it)",
    "abc-": "ends with a dash",
    "-abc": "starts with a dash",
    "a" * 53: "53 characters (CronJob's limit is 52)",
    "a" * 64: "64 characters (a label's limit is 63)",
    "a" * 254: "254 characters (a subdomain's limit is 253)",
    "B" * 254: "254 characters, upper case (both errors)",
    "..": "a path segment's forbidden name",
    "a%b": "a percent sign",
    "a:b": "a colon",
    "system:x": "RBAC's system names",
}
#: generateName prefixes (the generated suffix is five characters)
PREFIXES = {"gen-": "valid", "Gen_": "upper case", "a.b-": "a dot", "1a-": "digit first"}
#: Creation is not persisted (reviews) or not a plain create
SKIP = {
    "bindings",
    "componentstatuses",
    "localsubjectaccessreviews",
    "selfsubjectaccessreviews",
    "selfsubjectrulesreviews",
    "subjectaccessreviews",
    "tokenreviews",
    "serviceaccounts/token",
    "pods/eviction",
}


def _csr_request() -> str:
    """A PEM certificate request (a valid one: the kind's other checks pass)."""
    import base64

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    request = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lead-names")]))
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode()


#: What a kind whose own checks would hide the name rule's (the generic path-segment
#: check runs only once they pass) is sent besides its metadata.
VALID_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("", "events"): {
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": NS},
        "reason": "Test",
        "type": "Normal",
        "source": {"component": "lead-names"},
    },
    ("certificates.k8s.io", "certificatesigningrequests"): {
        "spec": {
            "request": "@csr",
            "signerName": "example.com/lead-names",
            "usages": ["digital signature"],
        }
    },
    ("apiextensions.k8s.io", "customresourcedefinitions"): {
        "spec": {
            "group": "lead.example.com",
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "listKind": "WidgetList",
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                }
            ],
        }
    },
}


def kinds() -> list[dict[str, Any]]:
    out = []
    group_versions = [("", "v1")]
    _, groups = call("GET", "/apis")
    for group in groups["groups"]:
        group_versions.append((group["name"], group["preferredVersion"]["version"]))
    for group, version in group_versions:
        base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
        _, listing = call("GET", base)
        for res in listing["resources"]:
            if "/" in res["name"] or res["name"] in SKIP or "create" not in res["verbs"]:
                continue
            out.append(
                {
                    "group": group,
                    "version": version,
                    "resource": res["name"],
                    "kind": res["kind"],
                    "namespaced": res["namespaced"],
                }
            )
    return out


def name_causes(answer: Any) -> list[dict[str, Any]]:
    causes = ((answer or {}).get("details") or {}).get("causes") or []
    return [c for c in causes if c.get("field") in ("metadata.name", "metadata.generateName")]


def main() -> None:
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    exchanges = []
    csr = _csr_request()
    for k in kinds():
        extra = json.loads(
            json.dumps(VALID_BODIES.get((k["group"], k["resource"]), {})).replace(
                '"@csr"', json.dumps(csr)
            )
        )
        base = f"/api/{k['version']}" if not k["group"] else f"/apis/{k['group']}/{k['version']}"
        path = (
            f"{base}/namespaces/{NS}/{k['resource']}"
            if k["namespaced"]
            else f"{base}/{k['resource']}"
        )
        api_version = k["version"] if not k["group"] else f"{k['group']}/{k['version']}"
        cases = [("name", n) for n in NAMES] + [("generateName", p) for p in PREFIXES]
        for field, value in cases:
            body = {
                "apiVersion": api_version,
                "kind": k["kind"],
                "metadata": {field: value},
                **extra,
            }
            status, answer = call("POST", path + "?dryRun=All", body)
            exchanges.append(
                {
                    "group": k["group"],
                    "resource": k["resource"],
                    "kind": k["kind"],
                    "field": field,
                    "value": value,
                    "status": status,
                    "reason": (answer or {}).get("reason"),
                    "causes": name_causes(answer),
                    **({"body": extra} if extra else {}),
                }
            )
    json.dump(
        {"namespace": NS, "names": NAMES, "prefixes": PREFIXES, "exchanges": exchanges},
        sys.stdout,
        indent=1,
    )
    print()


if __name__ == "__main__":
    main()
