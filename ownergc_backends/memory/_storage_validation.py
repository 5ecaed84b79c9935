"""The rules kube-apiserver 1.30 checks on PersistentVolumeClaims, PersistentVolumes and
StorageClasses, on a create and on an update, worded as a real server words them.

Run on the defaulted object (a claim's and a volume's ``volumeMode`` set, a claim's
``dataSource`` mirrored to ``dataSourceRef``, quantities in canonical form, a
StorageClass's ``reclaimPolicy`` and ``volumeBindingMode`` set). A quantity that does
not parse is the decoder's 400, before any of these.

A claim: at least one access mode, each a supported one (1.29+: ``ReadWriteOncePod``
too, alone); a storage request above zero; a class name that is a DNS subdomain; a
known ``volumeMode``; a label selector; a data source (and its mirror) naming a kind,
a name, and a group but for a claim. An update leaves the spec as it was but for
``volumeName`` (set once), a class name set where there was none (1.28+) or where the
beta class annotation (itself fixed) named it, and, once the claim is bound, a larger
storage request; :func:`resize_refusal` is then the resize admission plugin's check.
A generic ephemeral volume's claim template is checked as a claim
(:func:`claim_spec_errors`, called by the PodSpec rules).

A volume: access modes, a capacity of storage only and above zero, one volume source
(hostPath, nfs, local, csi, iSCSI, Fibre Channel and Azure disk checked inside, the
others' required fields), a known reclaim policy and ``volumeMode``, node affinity
(required for a local volume). An update leaves the volume source, ``volumeMode`` and
a set node affinity as they were. Both kinds' updates report the new object's errors
twice, as the registry validates it twice.

A StorageClass: a provisioner (a qualified name), parameters with keys, a known
reclaim policy and binding mode, allowed topologies without repeats. Its provisioner,
parameters, reclaim policy and binding mode do not change.
"""

from __future__ import annotations

import json
import math
import posixpath
import re
from collections.abc import Callable
from typing import Any, Final, TypeGuard

from ownergc.protocols import JSONDict

from ._defaults import quantity_value
from ._patch import json_equal
from ._podspec_scheduling import node_selector_errors
from ._podspec_validation import (
    _DUPLICATE,
    _FORBIDDEN,
    _INVALID,
    _REQUIRED,
    _dict,
    _list,
    _not_supported,
    _parse_quantity,
    _semantic,
    _str,
    spec_diff,
)
from ._quota_validation import go_quantity
from ._selectors import label_selector_errors
from ._validation import (
    FieldError,
    GoValue,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    go_strings,
    qualified_name_errors,
)

__all__ = ["resize_refusal", "storage_errors", "storage_update_errors"]

_TOO_LONG: Final = "FieldValueTooLong"

_CLAIMS: Final = ("", "persistentvolumeclaims")
_VOLUMES: Final = ("", "persistentvolumes")
_CLASSES: Final = ("storage.k8s.io", "storageclasses")

_ONCE_POD: Final = "ReadWriteOncePod"
_ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", _ONCE_POD)
_VOLUME_MODES: Final = ("Block", "Filesystem")
_RECLAIM_POLICIES: Final = ("Delete", "Recycle", "Retain")
_CLASS_RECLAIM_POLICIES: Final = ("Delete", "Retain")
_BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")
_HOST_PATH_TYPES: Final = (
    "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
    "FileOrCreate", "Socket",
)  # fmt: skip
#: A PersistentVolume's sources in the order validation looks at them, with the name
#: its "more than 1 volume type" error gives each (``flexVolume`` is never refused
#: for it, only counted).
_SOURCES: Final = (
    ("hostPath", "hostPath"), ("gcePersistentDisk", "gcePersistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore"), ("glusterfs", "glusterfs"),
    ("flocker", "flocker"), ("nfs", "nfs"), ("rbd", "rbd"), ("quobyte", "quobyte"),
    ("cephfs", "cephFS"), ("iscsi", "iscsi"), ("cinder", "cinder"), ("fc", "fc"),
    ("flexVolume", ""), ("azureFile", "azureFile"), ("vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk"), ("portworxVolume", "portworxVolume"),
    ("azureDisk", "azureDisk"), ("scaleIO", "scaleIO"), ("local", "local"),
    ("storageos", "storageos"), ("csi", "csi"),
)  # fmt: skip
_MAX_PARAMETERS: Final = 512
_MAX_PARAMETER_BYTES: Final = 256 * 1024
_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_CLAIM_UPDATE: Final = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)
_BETA_CLASS: Final = "volume.beta.kubernetes.io/storage-class"


# -- shared pieces ---------------------------------------------------------------


def _access_modes_required(modes: Any, field: str, detail: str) -> list[FieldError]:
    return [] if _list(modes) else [FieldError(field, _REQUIRED, detail)]


def _access_mode_errors(modes: Any, field: str) -> list[FieldError]:
    """Each access mode supported, and ``ReadWriteOncePod`` alone (1.29+)."""
    modes = _list(modes)
    errors = [_not_supported(field, m, _ACCESS_MODES) for m in modes if m not in _ACCESS_MODES]
    if _ONCE_POD in modes and any(m != _ONCE_POD and m in _ACCESS_MODES for m in modes):
        errors.append(
            FieldError(field, _FORBIDDEN, "may not use ReadWriteOncePod with other access modes")
        )
    return errors


def _class_name_errors(name: Any, field: str) -> list[FieldError]:
    if not isinstance(name, str) or not name:
        return []
    return [FieldError(field, _INVALID, m, name) for m in dns1123_subdomain_errors(name)]


def _volume_mode_errors(mode: Any, field: str) -> list[FieldError]:
    if mode is None or mode in _VOLUME_MODES:
        return []
    return [_not_supported(field, mode, _VOLUME_MODES)]


def _positive_errors(quantity: Any, field: str) -> list[FieldError]:
    value = quantity_value(quantity)
    if value is None or value > 0:
        return []
    return [FieldError(field, _INVALID, "must be greater than zero", str(quantity))]


def _go_quantity(text: Any) -> str:
    """Go's ``%#v`` of the ``resource.Quantity`` written ``text`` (binary or decimal)."""
    text = str(text)
    suffix = text[-2:]
    if suffix not in _BINARY:
        return go_quantity(text)
    value = quantity_value(text)
    whole = int(value) if value is not None else 0
    return (
        f"resource.Quantity{{i:resource.int64Amount{{value:{whole}, scale:0}}, "
        f'd:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:"{text}", Format:"BinarySI"}}'
    )


def _go_resource_list(resources: Any) -> GoValue:
    if not resources:
        return GoValue("core.ResourceList(nil)")
    entries = ", ".join(
        f"{json.dumps(name)}:{_go_quantity(resources[name])}" for name in sorted(resources)
    )
    return GoValue(f"core.ResourceList{{{entries}}}")


# -- PersistentVolumeClaim -------------------------------------------------------------


def _data_source_errors(source: Any, field: str) -> list[FieldError]:
    if not isinstance(source, dict):
        return []
    errors = []
    if not _str(source.get("name")):
        errors.append(FieldError(f"{field}.name", _REQUIRED, ""))
    kind = _str(source.get("kind"))
    if not kind:
        errors.append(FieldError(f"{field}.kind", _REQUIRED, ""))
    group = _str(source.get("apiGroup"))
    if not group and kind != "PersistentVolumeClaim":
        errors.append(
            FieldError(
                field,
                _INVALID,
                "must be 'PersistentVolumeClaim' when referencing the default apiGroup",
                kind,
            )
        )
    if group:
        errors += [
            FieldError(f"{field}.apiGroup", _INVALID, m, group)
            for m in dns1123_subdomain_errors(group)
        ]
    return errors


def claim_spec_errors(spec: JSONDict, path: str) -> list[FieldError]:
    """A PersistentVolumeClaimSpec's problems (a claim's, at ``spec``)."""
    modes, where = spec.get("accessModes"), f"{path}.accessModes"
    errors = _access_modes_required(modes, where, "at least 1 access mode is required")
    errors += label_selector_errors(spec.get("selector"), f"{path}.selector")
    errors += _access_mode_errors(modes, where)
    requests = _dict(_dict(spec.get("resources")).get("requests"))
    where = f"{path}.resources[storage]"
    if "storage" not in requests:
        errors.append(FieldError(where, _REQUIRED, ""))
    else:
        errors += _positive_errors(requests["storage"], where)
    errors += _class_name_errors(spec.get("storageClassName"), f"{path}.storageClassName")
    errors += _volume_mode_errors(spec.get("volumeMode"), f"{path}.volumeMode")
    errors += _data_source_errors(spec.get("dataSource"), f"{path}.dataSource")
    ref = spec.get("dataSourceRef")
    errors += _data_source_errors(ref, f"{path}.dataSourceRef")
    namespace = _str(_dict(ref).get("namespace"))
    if namespace:
        errors += [
            FieldError(f"{path}.dataSourceRef.namespace", _INVALID, m, namespace)
            for m in dns1123_label_errors(namespace)
        ]
        if spec.get("dataSource") is not None:
            errors.append(
                FieldError(
                    path,
                    _INVALID,
                    "may not be specified when dataSourceRef.namespace is specified",
                    f"{path}.dataSource",
                )
            )
    elif isinstance(spec.get("dataSource"), dict) and isinstance(ref, dict):
        source = spec["dataSource"]
        if any(source.get(k) != ref.get(k) for k in ("apiGroup", "kind", "name")):
            errors.append(
                FieldError(path, _INVALID, "must match dataSourceRef", f"{path}.dataSource")
            )
    return errors


def _claim_update_errors(new: JSONDict, old: JSONDict) -> list[FieldError]:
    new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    # (twice: the registry validates the new claim, then the update, which does again)
    errors = claim_spec_errors(new_spec, "spec") * 2
    mine, theirs = json.loads(json.dumps(new_spec)), json.loads(json.dumps(old_spec))
    if not _str(old_spec.get("volumeName")):  # (set once, by the binder)
        theirs.pop("volumeName", None)
        mine.pop("volumeName", None)
    old_annotation = _dict(_dict(old.get("metadata")).get("annotations")).get(_BETA_CLASS)
    new_annotation = _dict(_dict(new.get("metadata")).get("annotations")).get(_BETA_CLASS)
    new_class = new_spec.get("storageClassName")
    unset = new_class is not None and old_spec.get("storageClassName") is None
    # (the beta annotation's class moved to the field, the annotation left as it was)
    from_annotation = (
        unset
        and old_annotation is not None
        and new_class == old_annotation
        and new_annotation in (None, old_annotation)
    )
    if not from_annotation and (new_annotation or "") != (old_annotation or ""):
        errors.append(
            FieldError(
                f"metadata.annotations.{_BETA_CLASS}",
                _INVALID,
                "field is immutable",
                new_annotation or "",
            )
        )
    # (1.28+: a class set where there was none, unless a beta annotation says another)
    if from_annotation or (unset and old_annotation is None):
        mine.pop("storageClassName", None)
    bound = _dict(old.get("status")).get("phase") == "Bound"
    old_requests = _dict(_dict(old_spec.get("resources")).get("requests"))
    new_requests = _dict(_dict(new_spec.get("resources")).get("requests"))
    if bound and "requests" in _dict(mine.get("resources")):
        if "storage" in old_requests:
            mine["resources"]["requests"]["storage"] = old_requests["storage"]
        else:
            mine["resources"]["requests"].pop("storage", None)
    for spec in (mine, theirs):
        spec.pop("volumeAttributesClassName", None)
    if _semantic(mine) != _semantic(theirs):
        diff = spec_diff(_semantic(theirs), _semantic(mine), "PersistentVolumeClaimSpec")
        errors.append(FieldError("spec", _FORBIDDEN, f"{_CLAIM_UPDATE}\n{diff}"))
    old_size = quantity_value(old_requests.get("storage", "0")) or 0
    new_size = quantity_value(new_requests.get("storage", "0")) or 0
    if new_size < old_size:
        errors.append(
            FieldError(
                "spec.resources.requests.storage",
                _FORBIDDEN,
                "field can not be less than previous value",
            )
        )
    mode = new_spec.get("volumeMode")
    if mode != old_spec.get("volumeMode"):
        errors.append(FieldError("volumeMode", _INVALID, "field is immutable", mode))
    return errors


# -- PersistentVolume ------------------------------------------------------------------


def _no_backsteps(target: str, field: str) -> list[FieldError]:
    if ".." in target.replace("\\", "/").split("/"):
        return [FieldError(field, _INVALID, "must not contain '..'", target)]
    return []


def _csi_driver_errors(driver: str, field: str) -> list[FieldError]:
    errors = [] if driver else [FieldError(field, _REQUIRED, "")]
    if len(driver) > 63:
        errors.append(FieldError(field, _TOO_LONG, "must have at most 63 bytes", driver))
    errors += [
        FieldError(field, _INVALID, m, driver) for m in dns1123_subdomain_errors(driver.lower())
    ]
    return errors


#: The fields a volume source requires (and the name its errors give the source:
#: a GCE disk's are reported at ``persistentDisk``), checked in this order.
_REQUIRED_FIELDS: Final = {
    "gcePersistentDisk": ("persistentDisk", ("pdName",)),
    "awsElasticBlockStore": ("awsElasticBlockStore", ("volumeID",)),
    "glusterfs": ("glusterfs", ("endpoints", "path")),
    "rbd": ("rbd", ("monitors", "image")),
    "cephfs": ("cephfs", ("monitors",)),
    "cinder": ("cinder", ("volumeID",)),
    "flexVolume": ("flexVolume", ("driver",)),
    "azureFile": ("azureFile", ("secretName", "shareName")),
    "vsphereVolume": ("vsphereVolume", ("volumePath",)),
    "azureDisk": ("azureDisk", ("diskName", "diskURI")),
    "iscsi": ("iscsi", ("targetPortal",)),
}
_AZURE_CACHING: Final = ("None", "ReadOnly", "ReadWrite")
_AZURE_KINDS: Final = ("Dedicated", "Managed", "Shared")
_AZURE_MANAGED_URI: Final = (
    "/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/"
    "{disk-id}",
)
_AZURE_BLOB_URI: Final = (
    "https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd",
)
_IQN: Final = re.compile(r"iqn\.\d{4}-\d{2}\.([-.A-Za-z0-9]+)(:[^,;*&$|\s]+)$")
_EUI: Final = re.compile(r"eui.[A-Za-z0-9]{16}")
_NAA: Final = re.compile(r"naa.[A-Za-z0-9]{32}")


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _iscsi_errors(source: JSONDict, where: str) -> list[FieldError]:
    """An iSCSI volume's target (``iqn``: an iqn, eui or naa name) and LUN."""
    errors = []
    iqn = _str(source.get("iqn"))
    if not iqn:
        errors.append(FieldError(f"{where}.iqn", _REQUIRED, ""))
    elif not (
        (iqn.startswith("iqn") and _IQN.search(iqn))
        or (iqn.startswith("eui") and _EUI.fullmatch(iqn))
        or (iqn.startswith("naa") and _NAA.fullmatch(iqn))
    ):
        errors.append(FieldError(f"{where}.iqn", _INVALID, "must be valid format", iqn))
    lun = source.get("lun")
    if _is_int(lun) and not 0 <= lun <= 255:
        errors.append(
            FieldError(f"{where}.lun", _INVALID, "must be between 0 and 255, inclusive", lun)
        )
    chap = source.get("chapAuthDiscovery") is True or source.get("chapAuthSession") is True
    if chap and source.get("secretRef") is None:
        errors.append(FieldError(f"{where}.secretRef", _REQUIRED, ""))
    return errors


def _fc_errors(source: JSONDict, where: str) -> list[FieldError]:
    wwns, wwids = _list(source.get("targetWWNs")), _list(source.get("wwids"))
    errors = []
    if not wwns and not wwids:
        detail = "must specify either targetWWNs or wwids, but not both"
        errors.append(FieldError(f"{where}.targetWWNs", _REQUIRED, detail))
    if wwns and wwids:
        detail = "targetWWNs and wwids can not be specified simultaneously"
        errors.append(FieldError(f"{where}.targetWWNs", _INVALID, detail, go_strings(wwns)))
    if wwns:
        lun = source.get("lun")
        if lun is None:
            errors.append(
                FieldError(f"{where}.lun", _REQUIRED, "lun is required if targetWWNs is specified")
            )
        elif _is_int(lun) and not 0 <= lun <= 255:
            errors.append(
                FieldError(f"{where}.lun", _INVALID, "must be between 0 and 255, inclusive", lun)
            )
    return errors


def _required_field_errors(key: str, source: JSONDict, path: str) -> list[FieldError]:
    name, fields = _REQUIRED_FIELDS[key]
    where = f"{path}.{name}"
    errors = [FieldError(f"{where}.{f}", _REQUIRED, "") for f in fields if not source.get(f)]
    partition = source.get("partition")
    disk = key in ("gcePersistentDisk", "awsElasticBlockStore")
    if disk and _is_int(partition) and not 0 <= partition <= 255:
        detail = "must be between 1 and 255, inclusive"
        errors.append(FieldError(f"{where}.partition", _INVALID, detail, partition))
    if key == "iscsi":
        errors += _iscsi_errors(source, where)
    if key == "azureDisk":
        errors += _azure_disk_errors(source, where)
    return errors


def _azure_disk_errors(source: JSONDict, where: str) -> list[FieldError]:
    """An Azure disk's caching mode and kind (defaulted ReadWrite and Shared), and a URI
    of the kind's form."""
    errors = []
    caching = source.get("cachingMode", "ReadWrite")
    if caching not in _AZURE_CACHING:
        errors.append(_not_supported(f"{where}.cachingMode", caching, _AZURE_CACHING))
    kind = source.get("kind", "Shared")
    if kind not in _AZURE_KINDS:
        errors.append(_not_supported(f"{where}.kind", kind, _AZURE_KINDS))
    uri = _str(source.get("diskURI"))
    if kind == "Managed" and not uri.startswith("/subscriptions/"):
        errors.append(_not_supported(f"{where}.diskURI", uri, _AZURE_MANAGED_URI))
    if kind != "Managed" and not uri.startswith("https://"):
        errors.append(_not_supported(f"{where}.diskURI", uri, _AZURE_BLOB_URI))
    return errors


def _source_errors(key: str, source: JSONDict, path: str) -> list[FieldError]:
    """The checks of the sources' own fields: hostPath, nfs, local and csi in full, the
    required fields of most others, an iSCSI target and a Fibre Channel one."""
    where = f"{path}.{key}"
    errors: list[FieldError] = []
    if key in _REQUIRED_FIELDS:
        return _required_field_errors(key, source, path)
    if key == "fc":
        return _fc_errors(source, where)
    if key in ("hostPath", "local"):
        target = _str(source.get("path"))
        if not target:
            return [FieldError(f"{where}.path", _REQUIRED, "")]
        errors += _no_backsteps(target, f"{where}.path")
        kind = source.get("type")
        if key == "hostPath" and kind is not None and kind not in _HOST_PATH_TYPES:
            errors.append(_not_supported(f"{where}.type", kind, _HOST_PATH_TYPES))
    elif key == "nfs":
        if not _str(source.get("server")):
            errors.append(FieldError(f"{where}.server", _REQUIRED, ""))
        target = _str(source.get("path"))
        if not target:
            errors.append(FieldError(f"{where}.path", _REQUIRED, ""))
        if not target.startswith("/"):
            errors.append(FieldError(f"{where}.path", _INVALID, "must be an absolute path", target))
    elif key == "csi":
        errors += _csi_driver_errors(_str(source.get("driver")), f"{where}.driver")
        if not _str(source.get("volumeHandle")):
            errors.append(FieldError(f"{where}.volumeHandle", _REQUIRED, ""))
    return errors


def _capacity_errors(capacity: Any, path: str) -> list[FieldError]:
    capacity = _dict(capacity)
    where = f"{path}.capacity"
    errors = [] if capacity else [FieldError(where, _REQUIRED, "")]
    if "storage" not in capacity or len(capacity) > 1:
        errors.append(_not_supported(where, _go_resource_list(capacity), ("storage",)))
    for name in sorted(capacity):
        value = quantity_value(capacity[name])
        if value is not None and value < 0:
            errors.append(
                FieldError(
                    f"{where}[{name}]",
                    _INVALID,
                    "must be a valid resource quantity",
                    math.ceil(value),
                )
            )
        errors += _positive_errors(capacity[name], f"{where}[{name}]")
    return errors


def volume_spec_errors(spec: JSONDict, path: str = "spec") -> list[FieldError]:
    """A PersistentVolumeSpec's problems."""
    modes, where = spec.get("accessModes"), f"{path}.accessModes"
    errors = _access_modes_required(modes, where, "") + _access_mode_errors(modes, where)
    errors += _capacity_errors(spec.get("capacity"), path)
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in _RECLAIM_POLICIES:
        errors.append(
            _not_supported(f"{path}.persistentVolumeReclaimPolicy", policy, _RECLAIM_POLICIES)
        )
    affinity = spec.get("nodeAffinity")
    if isinstance(affinity, dict):
        required = affinity.get("required")
        if isinstance(required, dict):
            errors += node_selector_errors(required, f"{path}.nodeAffinity.required")
        else:
            errors.append(
                FieldError(
                    f"{path}.nodeAffinity.required",
                    _REQUIRED,
                    "must specify required node constraints",
                )
            )
    count = 0
    for key, name in _SOURCES:
        source = spec.get(key)
        if source is None:
            continue
        if count and name:
            errors.append(
                FieldError(f"{path}.{name}", _FORBIDDEN, "may not specify more than 1 volume type")
            )
            continue
        count += 1
        errors += _source_errors(key, _dict(source), path)
        if key == "local" and not isinstance(affinity, dict):
            errors.append(
                FieldError(f"{path}.nodeAffinity", _REQUIRED, "Local volume requires node affinity")
            )
    if count == 0:
        errors.append(FieldError(path, _REQUIRED, "must specify a volume type"))
    host = spec.get("hostPath")
    if (
        isinstance(host, dict)
        and posixpath.normpath(_str(host.get("path")) or ".") in ("/", "//")
        and policy == "Recycle"
    ):
        errors.append(
            FieldError(
                f"{path}.persistentVolumeReclaimPolicy",
                _FORBIDDEN,
                "may not be 'recycle' for a hostPath mount of '/'",
            )
        )
    errors += _class_name_errors(spec.get("storageClassName"), f"{path}.storageClassName")
    errors += _volume_mode_errors(spec.get("volumeMode"), f"{path}.volumeMode")
    return errors


def _sources_of(spec: JSONDict) -> JSONDict:
    return {key: spec[key] for key, _ in _SOURCES if spec.get(key) is not None}


def _go_affinity(affinity: Any) -> GoValue | str:
    if not isinstance(affinity, dict):
        return "null"
    inner = "(*core.NodeSelector)(nil)"
    if isinstance(affinity.get("required"), dict):
        inner = "(*core.NodeSelector)(0xc000a1b2c0)"  # (a pointer: Go prints its address)
    return GoValue(f"core.VolumeNodeAffinity{{Required:{inner}}}")


def _volume_update_errors(new: JSONDict, old: JSONDict) -> list[FieldError]:
    new_spec, old_spec = _dict(new.get("spec")), _dict(old.get("spec"))
    errors = volume_spec_errors(new_spec) * 2  # (twice, as for a claim)
    mine, theirs = _sources_of(new_spec), _sources_of(old_spec)
    csi, old_csi = _dict(mine.get("csi")), _dict(theirs.get("csi"))
    if csi and old_csi and "controllerExpandSecretRef" not in old_csi:
        mine["csi"] = {k: v for k, v in csi.items() if k != "controllerExpandSecretRef"}
    if _semantic(mine) != _semantic(theirs):
        diff = spec_diff(_semantic(theirs), _semantic(mine), "PersistentVolumeSource")
        errors.append(
            FieldError(
                "spec.persistentvolumesource",
                _FORBIDDEN,
                f"spec.persistentvolumesource is immutable after creation\n{diff}",
            )
        )
    mode = new_spec.get("volumeMode")
    if mode != old_spec.get("volumeMode"):
        errors.append(FieldError("volumeMode", _INVALID, "field is immutable", mode))
    old_affinity = old_spec.get("nodeAffinity")
    if old_affinity is not None and not json_equal(new_spec.get("nodeAffinity"), old_affinity):
        shown = _go_affinity(new_spec.get("nodeAffinity"))
        errors.append(FieldError("nodeAffinity", _INVALID, "field is immutable", shown))
    return errors


# -- StorageClass ----------------------------------------------------------------------


def _topology_errors(terms: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    seen: list[Any] = []
    for i, term in enumerate(_list(terms)):
        where = f"allowedTopologies[{i}].matchLabelExpressions"
        keys: dict[str, frozenset[str]] = {}
        for j, requirement in enumerate(_list(_dict(term).get("matchLabelExpressions"))):
            requirement = _dict(requirement)
            values = [v for v in _list(requirement.get("values")) if isinstance(v, str)]
            if not values:
                errors.append(FieldError(f"{where}[{j}].values", _REQUIRED, ""))
            for k, value in enumerate(values):
                if value in values[:k]:
                    errors.append(
                        FieldError(f"{where}[{j}].values[{k}]", _DUPLICATE, json.dumps(value))
                    )
            key = _str(requirement.get("key"))
            errors += [
                FieldError(f"{where}[{j}].key", _INVALID, m, key)
                for m in qualified_name_errors(key)
            ]
            if key in keys:
                errors.append(FieldError(f"{where}[{j}].key", _DUPLICATE, json.dumps(key)))
            keys[key] = frozenset(values)
        errors += [FieldError(where, _DUPLICATE, '""') for earlier in seen if earlier == keys]
        seen.append(keys)
    return errors


def storage_class_errors(obj: JSONDict) -> list[FieldError]:
    """A StorageClass's problems."""
    errors: list[FieldError] = []
    provisioner = _str(obj.get("provisioner"))
    if not provisioner:
        errors.append(FieldError("provisioner", _REQUIRED, ""))
    else:
        errors += [
            FieldError("provisioner", _INVALID, m, provisioner)
            for m in qualified_name_errors(provisioner.lower())
        ]
    parameters = _dict(obj.get("parameters"))
    if len(parameters) > _MAX_PARAMETERS:
        errors.append(
            FieldError(
                "parameters",
                _TOO_LONG,
                f"must have at most {_MAX_PARAMETERS} bytes",
                "Provisioner Parameters exceeded max allowed",
            )
        )
    else:
        errors += [
            FieldError("parameters", _INVALID, "field can not be empty.", key)
            for key in parameters
            if not key
        ]
        size = sum(len(k.encode()) + len(_str(v).encode()) for k, v in parameters.items())
        if size > _MAX_PARAMETER_BYTES:
            errors.append(
                FieldError(
                    "parameters", _TOO_LONG, f"must have at most {_MAX_PARAMETER_BYTES} bytes"
                )
            )
    policy = obj.get("reclaimPolicy")
    if policy and policy not in _CLASS_RECLAIM_POLICIES:
        errors.append(_not_supported("reclaimPolicy", policy, _CLASS_RECLAIM_POLICIES))
    mode = obj.get("volumeBindingMode")
    if mode is None:
        errors.append(FieldError("volumeBindingMode", _REQUIRED, ""))
    elif mode not in _BINDING_MODES:
        errors.append(_not_supported("volumeBindingMode", mode, _BINDING_MODES))
    return errors + _topology_errors(obj.get("allowedTopologies"))


def _class_update_errors(new: JSONDict, old: JSONDict) -> list[FieldError]:
    errors: list[FieldError] = []
    if not json_equal(new.get("parameters") or {}, old.get("parameters") or {}):
        errors.append(FieldError("parameters", _FORBIDDEN, "updates to parameters are forbidden."))
    for key in ("provisioner", "reclaimPolicy"):
        if new.get(key) != old.get(key):
            errors.append(FieldError(key, _FORBIDDEN, f"updates to {key} are forbidden."))
    mode = new.get("volumeBindingMode")
    if mode != old.get("volumeBindingMode"):
        errors.append(FieldError("volumeBindingMode", _INVALID, "field is immutable", mode))
    return errors


# -- entry points ----------------------------------------------------------------------


def _decode_quantities(kind: tuple[str, str], obj: JSONDict) -> None:
    """A quantity that does not parse cannot be decoded: the 400 a real server answers
    before it validates anything."""
    spec = _dict(obj.get("spec"))
    if kind == _CLAIMS:
        resources = _dict(spec.get("resources"))
        lists = [_dict(resources.get("requests")), _dict(resources.get("limits"))]
        name = "PersistentVolumeClaim"
    elif kind == _VOLUMES:
        lists, name = [_dict(spec.get("capacity"))], "PersistentVolume"
    else:
        return
    for quantities in lists:
        for quantity in quantities.values():
            _parse_quantity(quantity, name)


def storage_errors(group: str, resource: str, obj: JSONDict) -> list[FieldError]:
    """The problems of a PersistentVolumeClaim, PersistentVolume or StorageClass to
    create (none for other kinds); a 400 for a quantity that does not parse."""
    kind = (group, resource)
    _decode_quantities(kind, obj)
    if kind == _CLAIMS:
        return claim_spec_errors(_dict(obj.get("spec")), "spec")
    if kind == _VOLUMES:
        return volume_spec_errors(_dict(obj.get("spec")))
    if kind == _CLASSES:
        return storage_class_errors(obj)
    return []


def storage_update_errors(
    group: str, resource: str, new: JSONDict, old: JSONDict
) -> list[FieldError]:
    """The problems of an update from ``old`` to ``new``: the new object's, then what
    it may not change."""
    kind = (group, resource)
    _decode_quantities(kind, new)
    if kind == _CLAIMS:
        return _claim_update_errors(new, old)
    if kind == _VOLUMES:
        return _volume_update_errors(new, old)
    if kind == _CLASSES:
        return storage_class_errors(new) + _class_update_errors(new, old)
    return []


def _claim_class(claim: JSONDict) -> str:
    """A claim's class: the beta annotation's, else ``spec.storageClassName``."""
    annotations = _dict(_dict(claim.get("metadata")).get("annotations"))
    if _BETA_CLASS in annotations:
        return _str(annotations[_BETA_CLASS])
    return _str(_dict(claim.get("spec")).get("storageClassName"))


def resize_refusal(
    new: JSONDict, old: JSONDict, storage_class: Callable[[str], JSONDict | None]
) -> str | None:
    """Why the PersistentVolumeClaimResize admission plugin refuses an update of a claim
    (a 403), or None: a larger storage request needs a bound claim of a class, the same
    before and after, that ``storage_class`` finds with ``allowVolumeExpansion: true``.
    (It runs after validation, which refuses a pending claim's resize first.)"""
    new_size = quantity_value(_requests(new).get("storage", "0")) or 0
    old_size = quantity_value(_requests(old).get("storage", "0")) or 0
    if new_size <= old_size:
        return None
    if _dict(old.get("status")).get("phase") != "Bound":
        return "Only bound persistent volume claims can be expanded"
    name, old_name = _claim_class(new), _claim_class(old)
    found = storage_class(name) if name and name == old_name else None
    if found is None or found.get("allowVolumeExpansion") is not True:
        return (
            "only dynamically provisioned pvc can be resized and the storageclass that "
            "provisions the pvc must support resize"
        )
    return None


def _requests(claim: JSONDict) -> JSONDict:
    return _dict(_dict(_dict(claim.get("spec")).get("resources")).get("requests"))
