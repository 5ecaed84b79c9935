"""Record what the real kube-apiserver 1.20 answers to invalid PersistentVolumeClaims,
PersistentVolumes and StorageClasses (creates with ``dryRun=All``; merge-patch updates
of stored objects with ``dryRun=All``), for tests/facade/test_storage_validation_real.py.

Run: python tools/record_storage_validation.py \
    > tests/data/real-apiserver-1.20/storage-validation.json

The stored objects are made first (names start with ``storval``; a claim made "Bound"
through its status, of a class that allows expansion, so that the resize admission
plugin lets its resize through to validation); the claim left Pending has no
``storageClassName``.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _real_apiserver import call

NS = "storval-storage"
PATHS = {
    "persistentvolumeclaims": f"/api/v1/namespaces/{NS}/persistentvolumeclaims",
    "persistentvolumes": "/api/v1/persistentvolumes",
    "storageclasses": "/apis/storage.k8s.io/v1/storageclasses",
    "pods": f"/api/v1/namespaces/{NS}/pods",
}
KINDS = {
    "persistentvolumeclaims": ("v1", "PersistentVolumeClaim"),
    "persistentvolumes": ("v1", "PersistentVolume"),
    "storageclasses": ("storage.k8s.io/v1", "StorageClass"),
    "pods": ("v1", "Pod"),
}
NEW = "storval-new"


def claim(**spec: Any) -> dict[str, Any]:
    base = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    return {"spec": {**base, **spec}}


def volume(**spec: Any) -> dict[str, Any]:
    base = {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "hostPath": {"path": "/tmp/storval"},
    }
    return {"spec": {k: v for k, v in {**base, **spec}.items() if v is not None}}


def term(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(expressions)}


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"required": {"nodeSelectorTerms": list(terms)}}


HOST = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}
LOCAL = {"local": {"path": "/mnt/disk"}, "hostPath": None, "nodeAffinity": affinity(term(HOST))}


def sc(**fields: Any) -> dict[str, Any]:
    base = {"provisioner": "example.com/storval"}
    return {k: v for k, v in {**base, **fields}.items() if v is not None}


#: The stored objects the updates patch (and, for the claim, the status it is given).
OBJECTS = {
    "persistentvolumeclaims": {
        "storval-pvc": claim(),
        "storval-pvc-sc": claim(storageClassName="fast"),
        "storval-pvc-bound": claim(storageClassName="storval-expand"),
        "storval-pvc-fixed": claim(storageClassName="storval-sc"),
        "storval-pvc-missing-class": claim(storageClassName="storval-missing"),
        "storval-pvc-no-class": claim(),
        "storval-pvc-beta": {
            "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}},
            **claim(),
        },
    },
    "persistentvolumes": {
        "storval-pv": volume(),
        "storval-pv-local": volume(**LOCAL),
    },
    "storageclasses": {
        "storval-sc": sc(
            parameters={"type": "ssd"},
            reclaimPolicy="Retain",
            volumeBindingMode="WaitForFirstConsumer",
        ),
        # (what a bound claim's resize needs: the resize admission plugin looks it up)
        "storval-expand": sc(allowVolumeExpansion=True),
    },
}
BOUND = {
    name: {"status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}
    for name in (
        "storval-pvc-bound",
        "storval-pvc-fixed",
        "storval-pvc-missing-class",
        "storval-pvc-no-class",
    )
}
#: A bound claim's resize, refused by the resize admission plugin but for a class that
#: allows expansion.
RAISED = {"spec": {"resources": {"requests": {"storage": "2Gi"}}}}

CREATES = {
    "persistentvolumeclaims": {
        "valid": claim(),
        "valid Block with selector": claim(
            volumeMode="Block", selector={"matchLabels": {"tier": "db"}}
        ),
        "no accessModes": claim(accessModes=None),
        "empty accessModes": claim(accessModes=[]),
        "accessMode bogus": claim(accessModes=["ReadWriteSometimes"]),
        "accessMode lower case": claim(accessModes=["readwriteonce"]),
        "accessMode ReadWriteOncePod": claim(accessModes=["ReadWriteOncePod"]),
        "ReadWriteOncePod with another": claim(accessModes=["ReadWriteOncePod", "ReadWriteOnce"]),
        "no resources": claim(resources=None),
        "no storage request": claim(resources={"requests": {}}),
        "only a limit": claim(resources={"limits": {"storage": "1Gi"}}),
        "storage zero": claim(resources={"requests": {"storage": "0"}}),
        "storage negative": claim(resources={"requests": {"storage": "-1Gi"}}),
        "storage fraction": claim(resources={"requests": {"storage": "500m"}}),
        "storageClassName invalid": claim(storageClassName="Fast_SC"),
        "storageClassName empty": claim(storageClassName=""),
        "volumeMode bogus": claim(volumeMode="Raw"),
        "selector invalid value": claim(selector={"matchLabels": {"tier": "a b"}}),
        "selector bad operator": claim(
            selector={"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]}
        ),
        "dataSource PVC": claim(dataSource={"kind": "PersistentVolumeClaim", "name": "src"}),
        "dataSource without name": claim(dataSource={"kind": "PersistentVolumeClaim"}),
        "dataSource Pod": claim(dataSource={"kind": "Pod", "name": "p"}),
        "dataSource snapshot": claim(
            dataSource={
                "apiGroup": "snapshot.storage.k8s.io",
                "kind": "VolumeSnapshot",
                "name": "snap",
            }
        ),
        "storage not a quantity": claim(resources={"requests": {"storage": "lots"}}),
        "many errors": claim(
            accessModes=["Bogus"], resources={"requests": {"storage": "0"}}, volumeMode="Raw"
        ),
    },
    "persistentvolumes": {
        "valid": volume(),
        "valid local": volume(**LOCAL),
        "valid nfs Recycle": volume(
            hostPath=None,
            nfs={"server": "nfs.example.com", "path": "/exports"},
            persistentVolumeReclaimPolicy="Recycle",
        ),
        "no capacity": volume(capacity=None),
        "capacity without storage": volume(capacity={"cpu": "1"}),
        "capacity storage and more": volume(capacity={"storage": "1Gi", "cpu": "1"}),
        "capacity zero": volume(capacity={"storage": "0"}),
        "capacity negative": volume(capacity={"storage": "-1Gi"}),
        "no accessModes": volume(accessModes=None),
        "accessMode bogus": volume(accessModes=["ReadWriteSometimes"]),
        "accessMode ReadWriteOncePod": volume(accessModes=["ReadWriteOncePod"]),
        "no source": volume(hostPath=None),
        "two sources": volume(nfs={"server": "nfs.example.com", "path": "/exports"}),
        "three sources": volume(
            nfs={"server": "nfs.example.com", "path": "/exports"},
            csi={"driver": "example.com", "volumeHandle": "v"},
        ),
        "reclaimPolicy bogus": volume(persistentVolumeReclaimPolicy="Remove"),
        "Recycle hostPath root": volume(
            hostPath={"path": "/"}, persistentVolumeReclaimPolicy="Recycle"
        ),
        "volumeMode bogus": volume(volumeMode="Raw"),
        "storageClassName invalid": volume(storageClassName="Fast_SC"),
        "hostPath without path": volume(hostPath={"path": ""}),
        "hostPath with ..": volume(hostPath={"path": "/tmp/../etc"}),
        "hostPath type bogus": volume(hostPath={"path": "/tmp/x", "type": "Folder"}),
        "nfs without server": volume(hostPath=None, nfs={"path": "/exports"}),
        "nfs relative path": volume(hostPath=None, nfs={"server": "nfs", "path": "exports"}),
        "local without nodeAffinity": volume(hostPath=None, local={"path": "/mnt/disk"}),
        "local without path": volume(**{**LOCAL, "local": {"path": ""}}),
        "nodeAffinity without required": volume(nodeAffinity={}),
        "nodeAffinity no terms": volume(nodeAffinity=affinity()),
        "nodeAffinity bad operator": volume(
            nodeAffinity=affinity(term({"key": "a", "operator": "Equals", "values": ["b"]}))
        ),
        "nodeAffinity In without values": volume(
            nodeAffinity=affinity(term({"key": "a", "operator": "In"}))
        ),
        "nodeAffinity bad key": volume(
            nodeAffinity=affinity(term({"key": "a b", "operator": "Exists"}))
        ),
        "nodeAffinity Exists with values": volume(
            nodeAffinity=affinity(term({"key": "a", "operator": "Exists", "values": ["b"]}))
        ),
        "nodeAffinity Gt two values": volume(
            nodeAffinity=affinity(term({"key": "a", "operator": "Gt", "values": ["1", "2"]}))
        ),
        "nodeAffinity matchFields valid": volume(
            nodeAffinity=affinity(
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
            )
        ),
        "nodeAffinity matchFields bad": volume(
            nodeAffinity=affinity(
                {
                    "matchFields": [
                        {"key": "metadata.uid", "operator": "In", "values": ["a", "b"]},
                        {"key": "metadata.name", "operator": "Exists", "values": ["N_1"]},
                    ]
                }
            )
        ),
        "capacity not a quantity": volume(capacity={"storage": "lots"}),
        "gcePersistentDisk without pdName": volume(
            hostPath=None, gcePersistentDisk={"fsType": "ext4"}
        ),
        "gcePersistentDisk partition 300": volume(
            hostPath=None, gcePersistentDisk={"pdName": "d", "partition": 300}
        ),
        "awsElasticBlockStore without volumeID": volume(
            hostPath=None, awsElasticBlockStore={"fsType": "ext4"}
        ),
        "glusterfs empty": volume(hostPath=None, glusterfs={"readOnly": True}),
        "rbd empty": volume(hostPath=None, rbd={"pool": "p"}),
        "cephfs without monitors": volume(hostPath=None, cephfs={"path": "/"}),
        "cinder without volumeID": volume(hostPath=None, cinder={"fsType": "ext4"}),
        "flexVolume without driver": volume(hostPath=None, flexVolume={"fsType": "ext4"}),
        "azureFile empty": volume(hostPath=None, azureFile={"readOnly": True}),
        "vsphereVolume without volumePath": volume(hostPath=None, vsphereVolume={"fsType": "x"}),
        "azureDisk empty": volume(hostPath=None, azureDisk={"readOnly": True}),
        "azureDisk bad kind and caching": volume(
            hostPath=None,
            azureDisk={
                "diskName": "d",
                "diskURI": "https://a/b.vhd",
                "kind": "Big",
                "cachingMode": "All",
            },
        ),
        "azureDisk managed with blob URI": volume(
            hostPath=None,
            azureDisk={"diskName": "d", "diskURI": "https://a/b.vhd", "kind": "Managed"},
        ),
        "iscsi empty": volume(hostPath=None, iscsi={"lun": 0}),
        "iscsi bad iqn and lun": volume(
            hostPath=None, iscsi={"targetPortal": "10.0.0.1:3260", "iqn": "foo", "lun": 300}
        ),
        "iscsi valid": volume(
            hostPath=None,
            iscsi={
                "targetPortal": "10.0.0.1:3260",
                "iqn": "iqn.2001-04.com.example:storage.disk1",
                "lun": 0,
            },
        ),
        "iscsi chap without secret": volume(
            hostPath=None,
            iscsi={
                "targetPortal": "10.0.0.1:3260",
                "iqn": "eui.02004567A425678D",
                "lun": 1,
                "chapAuthSession": True,
            },
        ),
        "fc empty": volume(hostPath=None, fc={"fsType": "ext4"}),
        "fc both and no lun": volume(
            hostPath=None, fc={"targetWWNs": ["500a0982991b8dc5"], "wwids": ["x"]}
        ),
        "fc lun 300": volume(hostPath=None, fc={"targetWWNs": ["500a0982991b8dc5"], "lun": 300}),
        "csi without driver": volume(hostPath=None, csi={"volumeHandle": "v"}),
        "csi driver invalid": volume(
            hostPath=None, csi={"driver": "Bad_Driver", "volumeHandle": "v"}
        ),
        "csi without volumeHandle": volume(hostPath=None, csi={"driver": "example.com"}),
        "claimRef partial": volume(claimRef={"name": "x"}),
    },
    "storageclasses": {
        "valid": sc(),
        "valid full": sc(
            parameters={"type": "ssd"},
            reclaimPolicy="Retain",
            volumeBindingMode="WaitForFirstConsumer",
            allowVolumeExpansion=True,
            mountOptions=["ro"],
            allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}],
        ),
        "no provisioner": sc(provisioner=None),
        "provisioner with space": sc(provisioner="example.com/my storval"),
        "provisioner two slashes": sc(provisioner="a/b/c"),
        "provisioner upper case": sc(provisioner="Example.COM/Storval"),
        "provisioner too long": sc(provisioner="example.com/" + "a" * 64),
        "reclaimPolicy Recycle": sc(reclaimPolicy="Recycle"),
        "reclaimPolicy bogus": sc(reclaimPolicy="Keep"),
        "volumeBindingMode bogus": sc(volumeBindingMode="Later"),
        "parameters empty key": sc(parameters={"": "x"}),
        "allowedTopologies without values": sc(
            allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": []}]}]
        ),
        "allowedTopologies bad key": sc(
            allowedTopologies=[{"matchLabelExpressions": [{"key": "a b", "values": ["x"]}]}]
        ),
        "allowedTopologies duplicate value": sc(
            allowedTopologies=[{"matchLabelExpressions": [{"key": "zone", "values": ["a", "a"]}]}]
        ),
        "allowedTopologies duplicate key": sc(
            allowedTopologies=[
                {
                    "matchLabelExpressions": [
                        {"key": "zone", "values": ["a"]},
                        {"key": "zone", "values": ["b"]},
                    ]
                }
            ]
        ),
        "allowedTopologies duplicate term": sc(
            allowedTopologies=[
                {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
                {"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]},
            ]
        ),
    },
}


def pod_with(volume: dict[str, Any]) -> dict[str, Any]:
    containers = [{"name": "c", "image": "nginx"}]
    return {"spec": {"containers": containers, "volumes": [{"name": "data", **volume}]}}


#: Pods with a generic ephemeral volume (1.20 drops the field, its gate off; 1.23+
#: validates the claim template).
CREATES["pods"] = {
    "ephemeral valid": pod_with({"ephemeral": {"volumeClaimTemplate": {"spec": claim()["spec"]}}}),
    "ephemeral without template": pod_with({"ephemeral": {}}),
    "ephemeral template without spec": pod_with(
        {"ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
    ),
    "ephemeral template bad access mode": pod_with(
        {"ephemeral": {"volumeClaimTemplate": {"spec": claim(accessModes=["Bogus"])["spec"]}}}
    ),
}

UPDATES = {
    "persistentvolumeclaims": {
        ("storval-pvc", "labels only"): {"metadata": {"labels": {"a": "b"}}},
        ("storval-pvc", "accessModes changed"): {"spec": {"accessModes": ["ReadWriteMany"]}},
        ("storval-pvc", "storage raised while pending"): {
            "spec": {"resources": {"requests": {"storage": "2Gi"}}}
        },
        ("storval-pvc", "storageClassName set from unset"): {"spec": {"storageClassName": "fast"}},
        ("storval-pvc", "volumeName set"): {"spec": {"volumeName": "storval-pv"}},
        ("storval-pvc", "volumeMode changed"): {"spec": {"volumeMode": "Block"}},
        ("storval-pvc", "accessMode bogus"): {"spec": {"accessModes": ["Bogus"]}},
        ("storval-pvc", "storage zero"): {"spec": {"resources": {"requests": {"storage": "0"}}}},
        ("storval-pvc-beta", "beta annotation changed"): {
            "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "slow"}}
        },
        ("storval-pvc-beta", "beta annotation removed"): {
            "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": None}}
        },
        ("storval-pvc-beta", "storageClassName from the annotation"): {
            "spec": {"storageClassName": "fast"}
        },
        ("storval-pvc-beta", "storageClassName other than the annotation"): {
            "spec": {"storageClassName": "slow"}
        },
        ("storval-pvc-beta", "both moved to another class"): {
            "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "slow"}},
            "spec": {"storageClassName": "slow"},
        },
        ("storval-pvc-sc", "beta annotation added"): {
            "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "fast"}}
        },
        ("storval-pvc-sc", "storageClassName changed"): {"spec": {"storageClassName": "slow"}},
        ("storval-pvc-bound", "storage raised"): {
            "spec": {"resources": {"requests": {"storage": "2Gi"}}}
        },
        ("storval-pvc-fixed", "storage raised, class without expansion"): RAISED,
        ("storval-pvc-missing-class", "storage raised, class missing"): RAISED,
        ("storval-pvc-no-class", "storage raised, no class"): RAISED,
        ("storval-pvc-fixed", "storage raised and accessModes changed"): {
            "spec": {**RAISED["spec"], "accessModes": ["ReadWriteMany"]}
        },
        ("storval-pvc-bound", "storage lowered"): {
            "spec": {"resources": {"requests": {"storage": "500Mi"}}}
        },
        ("storval-pvc-bound", "accessModes changed"): {"spec": {"accessModes": ["ReadOnlyMany"]}},
        ("storval-pvc-bound", "limit added"): {
            "spec": {"resources": {"limits": {"storage": "5Gi"}}}
        },
    },
    "persistentvolumes": {
        ("storval-pv", "labels only"): {"metadata": {"labels": {"a": "b"}}},
        ("storval-pv", "capacity raised"): {"spec": {"capacity": {"storage": "5Gi"}}},
        ("storval-pv", "reclaimPolicy changed"): {
            "spec": {"persistentVolumeReclaimPolicy": "Delete"}
        },
        ("storval-pv", "accessModes changed"): {"spec": {"accessModes": ["ReadWriteMany"]}},
        ("storval-pv", "storageClassName set"): {"spec": {"storageClassName": "fast"}},
        ("storval-pv", "claimRef set"): {
            "spec": {"claimRef": {"namespace": NS, "name": "storval-pvc"}}
        },
        ("storval-pv", "nodeAffinity set"): {"spec": {"nodeAffinity": affinity(term(HOST))}},
        ("storval-pv", "hostPath changed"): {"spec": {"hostPath": {"path": "/tmp/other"}}},
        ("storval-pv", "volumeMode changed"): {"spec": {"volumeMode": "Block"}},
        ("storval-pv", "capacity zero"): {"spec": {"capacity": {"storage": "0"}}},
        ("storval-pv", "reclaimPolicy bogus"): {"spec": {"persistentVolumeReclaimPolicy": "X"}},
        ("storval-pv-local", "nodeAffinity changed"): {
            "spec": {
                "nodeAffinity": affinity(
                    term({"key": "kubernetes.io/hostname", "operator": "In", "values": ["n-2"]})
                )
            }
        },
    },
    "storageclasses": {
        ("storval-sc", "labels only"): {"metadata": {"labels": {"a": "b"}}},
        ("storval-sc", "allowVolumeExpansion set"): {"allowVolumeExpansion": True},
        ("storval-sc", "mountOptions set"): {"mountOptions": ["ro"]},
        ("storval-sc", "provisioner changed"): {"provisioner": "example.com/other"},
        ("storval-sc", "parameters changed"): {"parameters": {"type": "hdd"}},
        ("storval-sc", "parameters added"): {"parameters": {"zone": "a"}},
        ("storval-sc", "reclaimPolicy changed"): {"reclaimPolicy": "Delete"},
        ("storval-sc", "volumeBindingMode changed"): {"volumeBindingMode": "Immediate"},
        ("storval-sc", "allowedTopologies set"): {
            "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a"]}]}]
        },
        ("storval-sc", "everything changed"): {
            "provisioner": "example.com/other",
            "parameters": None,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
        },
    },
}


def kept(status: int | None, answer: Any) -> dict[str, Any]:
    if status in (200, 201):
        return {"status": status}
    return {"status": status, **{k: answer.get(k) for k in ("reason", "message", "details")}}


def body_of(kind: str, name: str, obj: dict[str, Any]) -> dict[str, Any]:
    api_version, kind_name = KINDS[kind]
    meta = {"name": name, **obj.get("metadata", {})}
    rest = {k: v for k, v in obj.items() if k != "metadata"}
    return {"apiVersion": api_version, "kind": kind_name, "metadata": meta, **rest}


def remove(path: str) -> None:
    """Delete a stored object of an earlier run, its protection finalizer taken off
    first (no controller runs on the server to take it off)."""
    call("PATCH", path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    call("DELETE", path)
    for _ in range(50):
        if call("GET", path)[0] == 404:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{path} not deleted")


def main() -> None:
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
    )
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    account["automountServiceAccountToken"] = False  # (no controller makes it here)
    call("POST", f"/api/v1/namespaces/{NS}/serviceaccounts", account)
    objects: dict[str, dict[str, Any]] = {}
    for kind, named in OBJECTS.items():
        for name, obj in named.items():
            body = body_of(kind, name, obj)
            remove(f"{PATHS[kind]}/{name}")
            status, answer = call("POST", PATHS[kind], body)
            assert status == 201, answer
            objects.setdefault(kind, {})[name] = body
    statuses = {}
    for name, patch in BOUND.items():
        path = f"{PATHS['persistentvolumeclaims']}/{name}/status"
        status, answer = call("PATCH", path, patch, "application/merge-patch+json")
        assert status == 200, answer
        statuses[name] = patch["status"]
    exchanges = []
    for kind, cases in CREATES.items():
        for case, obj in cases.items():
            body = body_of(kind, NEW, obj)
            status, answer = call("POST", PATHS[kind] + "?dryRun=All", body)
            exchanges.append(
                {"kind": kind, "op": "create", "case": case, "body": body,
                 "answer": kept(status, answer)}
            )  # fmt: skip
    for kind, updates in UPDATES.items():
        for (name, case), patch in updates.items():
            status, answer = call(
                "PATCH", f"{PATHS[kind]}/{name}?dryRun=All", patch, "application/merge-patch+json"
            )
            exchanges.append(
                {"kind": kind, "op": "update", "case": case, "name": name, "patch": patch,
                 "answer": kept(status, answer)}
            )  # fmt: skip
    json.dump(
        {
            "server": "kube-apiserver v1.20.2",
            "namespace": NS,
            "objects": objects,
            "statuses": statuses,
            "exchanges": exchanges,
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
