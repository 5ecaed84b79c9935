"""The whole ServiceAccount admission plugin (``service_accounts=True``, what ``ownergc
serve`` runs), as a Kubernetes 1.21+ kube-apiserver applies it to a Pod create.

The facts, from plugin/pkg/admission/serviceaccount/admission.go with the bound token
volume (the default since 1.21) and real 1.2x clusters' Pods:

- a Pod whose service account does not exist is refused: 403, ``pods "NAME" is
  forbidden: error looking up service account NS/SA: serviceaccount "SA" not found``
  (``default`` is looked up again, 10 times 100-200 ms apart, before that);
- unless ``automountServiceAccountToken`` is false on the Pod (or, unset there, on the
  ServiceAccount), a projected volume ``kube-api-access-`` + 5 generated characters,
  ``defaultMode: 420``, sources: ``serviceAccountToken {expirationSeconds: 3607, path:
  token}``, ``configMap kube-root-ca.crt [ca.crt -> ca.crt]``, ``downwardAPI
  [namespace <- metadata.namespace]``;
- mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every container
  and init container with nothing mounted there already (ephemeral containers are not
  touched); an existing ``kube-api-access-*`` volume is used instead of a new one;
- the ServiceAccount's ``imagePullSecrets`` go to a Pod that has none.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from ownergc.errors import Forbidden
from ownergc.protocols import APIResource
from ownergc_backends.memory import InMemoryStore
from ownergc_backends.memory._apiserver.admission import AdmissionAttributes
from ownergc_backends.memory._apiserver.context import UserInfo
from ownergc_backends.memory._apiserver.podadmission import PodAdmission
from ownergc_backends.memory.http import KubeAPIServer, run_in_thread
from tests.facade.test_field_validation_cases import send
from tests.facade.test_pod_admission import PODS, create_pod

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
PROJECTED = {
    "defaultMode": 420,
    "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {
            "downwardAPI": {
                "items": [
                    {
                        "path": "namespace",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                    }
                ]
            }
        },
    ],
}
VOLUME_NAME = re.compile(r"kube-api-access-[a-z0-9]{5}")


def account(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": "default"},
        **fields,
    }


@pytest.fixture
def server() -> Iterator[KubeAPIServer]:
    store = InMemoryStore()
    store.load_objects(
        [
            account("default"),
            account("robot", automountServiceAccountToken=False),
            account("puller", imagePullSecrets=[{"name": "regcred"}]),
        ]
    )
    with run_in_thread(store, service_accounts=True) as running:
        yield running


def token_volume(pod: dict[str, Any]) -> dict[str, Any]:
    [volume] = [v for v in pod["spec"].get("volumes", []) if "projected" in v]
    return volume


def test_a_pod_gets_the_token_volume_and_every_container_mounts_it(
    server: KubeAPIServer,
) -> None:
    status, pod = create_pod(
        server,
        "p",
        initContainers=[{"name": "init", "image": "busybox"}],
        containers=[
            {"name": "a", "image": "nginx", "volumeMounts": [{"name": "x", "mountPath": "/x"}]},
            {"name": "b", "image": "nginx"},
        ],
        volumes=[{"name": "x", "emptyDir": {}}],
    )
    assert status == 201, pod
    spec = pod["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    volume = token_volume(pod)
    assert VOLUME_NAME.fullmatch(volume["name"]), volume["name"]
    assert volume["projected"] == PROJECTED
    assert [v["name"] for v in spec["volumes"]] == ["x", volume["name"]]
    mount = {"name": volume["name"], "readOnly": True, "mountPath": MOUNT_PATH}
    assert spec["initContainers"][0]["volumeMounts"] == [mount]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "x", "mountPath": "/x"}, mount]
    assert spec["containers"][1]["volumeMounts"] == [mount]


def test_each_pod_gets_a_name_of_its_own(server: KubeAPIServer) -> None:
    names = set()
    for i in range(5):
        status, pod = create_pod(server, f"p{i}")
        assert status == 201, pod
        names.add(token_volume(pod)["name"])
    assert len(names) == 5  # 27**5 choices: a repeat would be a bug, not luck


def test_a_container_with_something_at_the_path_keeps_it(server: KubeAPIServer) -> None:
    own = {"name": "mine", "mountPath": MOUNT_PATH}
    status, pod = create_pod(
        server,
        "p",
        containers=[{"name": "a", "image": "nginx", "volumeMounts": [own]}],
        volumes=[{"name": "mine", "emptyDir": {}}],
    )
    assert status == 201, pod
    assert pod["spec"]["containers"][0]["volumeMounts"] == [own]
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["mine"]  # no one needs the volume


def test_an_existing_kube_api_access_volume_is_used(server: KubeAPIServer) -> None:
    given = {"name": "kube-api-access-mine", "emptyDir": {}}
    status, pod = create_pod(server, "p", volumes=[given])
    assert status == 201, pod
    assert pod["spec"]["volumes"] == [given]
    assert pod["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "kube-api-access-mine", "readOnly": True, "mountPath": MOUNT_PATH}
    ]


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ({"automountServiceAccountToken": False}, "the Pod says no"),
        ({"serviceAccountName": "robot"}, "its ServiceAccount says no"),
    ],
)
def test_automount_false_skips_volume_and_mounts(
    server: KubeAPIServer, spec: dict[str, Any], why: str
) -> None:
    status, pod = create_pod(server, "p", **spec)
    assert status == 201, pod
    assert "volumes" not in pod["spec"], why
    assert "volumeMounts" not in pod["spec"]["containers"][0], why


def test_the_pods_true_wins_over_the_accounts_false(server: KubeAPIServer) -> None:
    status, pod = create_pod(
        server, "p", serviceAccountName="robot", automountServiceAccountToken=True
    )
    assert status == 201, pod
    assert VOLUME_NAME.fullmatch(token_volume(pod)["name"])


def test_a_missing_service_account_is_refused(server: KubeAPIServer) -> None:
    status, answer = create_pod(server, "p", serviceAccountName="ghost")
    assert status == 403
    assert answer["reason"] == "Forbidden"
    assert answer["message"] == (
        'pods "p" is forbidden: error looking up service account default/ghost: '
        'serviceaccount "ghost" not found'
    )
    assert answer["details"] == {"name": "p", "kind": "pods"}
    status, _, _ = send(server, "GET", f"{PODS}/p", "")
    assert status == 404


def test_the_accounts_image_pull_secrets_go_to_a_pod_without_any(server: KubeAPIServer) -> None:
    status, pod = create_pod(server, "p", serviceAccountName="puller")
    assert status == 201, pod
    assert pod["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
    status, pod = create_pod(
        server, "q", serviceAccountName="puller", imagePullSecrets=[{"name": "own"}]
    )
    assert status == 201, pod
    assert pod["spec"]["imagePullSecrets"] == [{"name": "own"}]


def _attrs(pod: dict[str, Any]) -> AdmissionAttributes:
    return AdmissionAttributes(
        operation="CREATE",
        resource=APIResource(group="", version="v1", resource="pods", kind="Pod", namespaced=True),
        namespace="default",
        name=pod["metadata"]["name"],
        subresource=None,
        obj=pod,
        old_obj=None,
        dry_run=False,
        user=UserInfo("test"),
    )


@pytest.mark.anyio
async def test_a_missing_default_account_is_waited_for_then_refused() -> None:
    store = InMemoryStore()
    admission = PodAdmission(store, service_accounts=True, retry=(0.01, 0.01))
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    with pytest.raises(Forbidden, match=r'serviceaccount "default" not found$'):
        await admission.admit(_attrs(pod))

    async def create_it_soon() -> None:
        await anyio.sleep(0.03)
        store.load_objects([account("default")])

    async with anyio.create_task_group() as tg:
        tg.start_soon(create_it_soon)
        admitted = await admission.admit(_attrs(pod))
    assert admitted is not None and "volumes" in admitted["spec"]


@pytest.mark.anyio
async def test_off_by_default_only_the_name_is_set() -> None:
    admission = PodAdmission(InMemoryStore())
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    admitted = await admission.admit(_attrs(pod))
    assert admitted is not None
    assert admitted["spec"]["serviceAccountName"] == "default"
    assert "volumes" not in admitted["spec"]
    assert "volumeMounts" not in admitted["spec"]["containers"][0]


@pytest.mark.anyio
async def test_mirror_pods_and_ephemeral_containers_are_left_alone() -> None:
    store = InMemoryStore()
    store.load_objects([account("default")])
    admission = PodAdmission(store, service_accounts=True)
    mirror = {
        "metadata": {"name": "m", "annotations": {"kubernetes.io/config.mirror": "x"}},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }
    admitted = await admission.admit(_attrs(mirror))
    assert admitted is not None
    assert "serviceAccountName" not in admitted["spec"] and "volumes" not in admitted["spec"]
    pod = {
        "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "ephemeralContainers": [{"name": "e", "image": "i"}],
        },
    }
    admitted = await admission.admit(_attrs(pod))
    assert admitted is not None
    assert admitted["spec"]["ephemeralContainers"] == [{"name": "e", "image": "i"}]


@pytest.mark.parametrize("namespace", ["nowhere", "leaving"])
def test_namespace_lifecycle_answers_first(namespace: str) -> None:
    """A missing or terminating namespace is what the Pod is refused for (the
    NamespaceLifecycle plugin runs before ServiceAccount), at once."""
    store = InMemoryStore(terminating_namespaces=True)
    store.load_objects(
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "leaving", "finalizers": ["example.com/hold"]},
            }
        ]
    )
    with run_in_thread(store, service_accounts=True) as server:
        ns = store.get_object("v1", "Namespace", "leaving")
        assert ns is not None
        status, _, _ = send(server, "DELETE", "/api/v1/namespaces/leaving", "")
        assert status == 200
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
        status, _, answer = send(
            server, "POST", f"/api/v1/namespaces/{namespace}/pods", json.dumps(body)
        )
    if namespace == "nowhere":
        assert status == 404, answer
        assert answer["message"] == 'namespaces "nowhere" not found'
    else:
        assert status == 403, answer
        assert "because it is being terminated" in answer["message"]


MIRROR = {"kubernetes.io/config.mirror": "0123abcd"}
SECRET = "a mirror pod may not reference secrets"
#: Mirror Pods the plugin refuses (spec fields beside one container), and why.
MIRROR_REFUSALS = [
    ({"serviceAccountName": "default"}, "a mirror pod may not reference service accounts"),
    ({"imagePullSecrets": [{"name": "regcred"}]}, SECRET),
    ({"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}, SECRET),
    ({"volumes": [{"name": "v", "projected": {"sources": [{"secret": {"name": "s"}}]}}]}, SECRET),
    (
        {
            "volumes": [
                {"name": "v", "azureFile": {"secretName": "s", "shareName": "x"}},
            ]
        },
        SECRET,
    ),
    (
        {"volumes": [{"name": "v", "cephfs": {"monitors": ["m"], "secretRef": {"name": "s"}}}]},
        SECRET,
    ),
    (
        {
            "volumes": [
                {"name": "v", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "s"}}},
            ]
        },
        SECRET,
    ),
    (
        {
            "initContainers": [
                {"name": "i", "image": "i", "envFrom": [{"secretRef": {"name": "s"}}]},
            ]
        },
        SECRET,
    ),
    (
        {
            "volumes": [
                {
                    "name": "v",
                    "projected": {
                        "sources": [{"serviceAccountToken": {"path": "token"}}],
                    },
                }
            ]
        },
        "a mirror pod may not use ServiceAccountToken volume projections",
    ),
]


@pytest.mark.parametrize(("spec", "why"), MIRROR_REFUSALS)
def test_a_mirror_pod_may_not_reference_accounts_secrets_or_tokens(
    server: KubeAPIServer, spec: dict[str, Any], why: str
) -> None:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "static-web-node1", "annotations": MIRROR},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}], **spec},
    }
    status, _, answer = send(server, "POST", PODS, json.dumps(body))
    assert status == 403, answer
    assert answer["reason"] == "Forbidden"
    assert answer["message"] == f'pods "static-web-node1" is forbidden: {why}'


def test_a_mirror_pod_without_them_is_created_as_it_is(server: KubeAPIServer) -> None:
    env = [
        {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}},
        {"name": "B", "value": "b"},
    ]
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "static-web-node1", "annotations": MIRROR},
        "spec": {
            "containers": [{"name": "c", "image": "nginx:1.25", "env": env}],
            "volumes": [
                {"name": "v", "configMap": {"name": "cm"}},
                {"name": "a", "azureFile": {"secretName": "", "shareName": "x"}},
            ],
        },
    }
    status, _, pod = send(server, "POST", PODS, json.dumps(body))
    assert status == 201, pod
    assert "serviceAccountName" not in pod["spec"]
    assert [v["name"] for v in pod["spec"]["volumes"]] == ["v", "a"]


@pytest.mark.anyio
async def test_off_a_mirror_pod_is_neither_named_nor_refused() -> None:
    admission = PodAdmission(InMemoryStore())
    mirror = {
        "metadata": {"name": "m", "annotations": MIRROR},
        "spec": {
            "containers": [{"name": "c", "image": "i"}],
            "imagePullSecrets": [{"name": "regcred"}],
        },
    }
    admitted = await admission.admit(_attrs(mirror))
    assert admitted is not None
    assert "serviceAccountName" not in admitted["spec"]
