"""Reading Kubernetes manifests (YAML or JSON, multi-document, ``List`` kinds).

Shared by ``ownergc serve --load``, ``preview -f``, ``lint -f`` and ``graph -f``.
Every error names the file and the document so a bad manifest is a one-line
message, not a traceback. YAML needs PyYAML (the ``cli`` extra, which the
``kube`` extra also brings); JSON needs nothing.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ownergc.errors import OwnerGCError

__all__ = [
    "Manifest",
    "ManifestError",
    "apply_order",
    "is_crd",
    "read_manifests",
]

_SUFFIXES = (".yaml", ".yml", ".json")
CRD_API_GROUP = "apiextensions.k8s.io"


class ManifestError(OwnerGCError):
    """A manifest file that cannot be read or does not hold Kubernetes objects."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """One object and where it came from (``file`` or ``file#3`` for the 3rd document)."""

    obj: dict[str, Any]
    source: str


def _files(paths: Sequence[str | os.PathLike[str]]) -> Iterator[Path]:
    for raw in paths:
        path = Path(raw)
        if str(raw) == "-":
            yield path
        elif path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in _SUFFIXES)
            yield from found
        elif path.is_file():
            yield path
        else:
            raise ManifestError(f"{raw}: no such file or directory")


def _load_yaml(text: str, where: str) -> list[Any]:
    try:
        # Imported by name: PyYAML is optional and ships no type stubs.
        yaml: Any = importlib.import_module("yaml")
    except ImportError:
        raise ManifestError(
            f"{where}: reading YAML needs PyYAML: pip install 'ownergc[cli]' "
            "(or give JSON manifests)"
        ) from None
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return list(yaml.load_all(text, Loader=loader))
    except yaml.YAMLError as exc:
        raise ManifestError(f"{where}: not valid YAML: {exc}") from None


def _documents(path: Path) -> list[Any]:
    where = str(path)
    try:
        text = sys.stdin.read() if where == "-" else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{where}: cannot read: {exc}") from None
    if path.suffix == ".json" or (where == "-" and text.lstrip().startswith(("{", "["))):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ManifestError(f"{where}: not valid JSON: {exc}") from None
        return data if isinstance(data, list) else [data]
    return _load_yaml(text, where)


def _flatten(doc: Any, source: str) -> Iterator[Manifest]:
    if doc is None:
        return  # an empty YAML document (e.g. a trailing ---)
    if not isinstance(doc, dict):
        raise ManifestError(f"{source}: expected a Kubernetes object, got {type(doc).__name__}")
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(doc.get("items"), list):
        for i, item in enumerate(doc["items"]):
            yield from _flatten(item, f"{source} items[{i}]")
        return
    for key in ("apiVersion", "kind"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise ManifestError(f"{source}: missing {key}")
    meta = doc.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        raise ManifestError(f"{source}: {doc['kind']} without metadata.name")
    yield Manifest(doc, source)


def read_manifests(paths: Sequence[str | os.PathLike[str]]) -> list[Manifest]:
    """Every object in ``paths`` (files or directories, searched for .yaml/.yml/.json;
    ``-`` is standard input), in file then document order."""
    out: list[Manifest] = []
    for path in _files(paths):
        docs = _documents(path)
        for i, doc in enumerate(docs, 1):
            source = f"{path}#{i}" if len(docs) > 1 else str(path)
            out.extend(_flatten(doc, source))
    return out


def is_crd(obj: dict[str, Any]) -> bool:
    return obj.get("kind") == "CustomResourceDefinition" and str(
        obj.get("apiVersion", "")
    ).startswith(CRD_API_GROUP + "/")


def apply_order(manifests: Iterable[Manifest]) -> list[Manifest]:
    """CRDs first, then Namespaces, then the rest (each group in input order), so
    that every object's kind is served and its namespace exists when it is loaded."""
    items = list(manifests)

    def rank(m: Manifest) -> int:
        if is_crd(m.obj):
            return 0
        if m.obj.get("kind") == "Namespace" and m.obj.get("apiVersion") == "v1":
            return 1
        return 2

    return sorted(items, key=rank)
