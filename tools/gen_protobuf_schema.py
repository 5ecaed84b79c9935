"""Build ``ownergc_backends/memory/_protobuf_schema.json.gz`` from upstream's API sources.

The facade decodes protobuf request bodies (what kubectl 1.32+ sends for its
``create`` generators) from a schema, not from hand-kept tables. The schema is
read off two public repositories, as facts of the wire format:

- each ``generated.proto`` of k8s.io/api and k8s.io/apimachinery gives every
  message's fields: number, type, ``repeated`` / ``map``;
- each package's Go types (``types.go`` and friends) give what the JSON form
  of the same field is: its JSON name, whether it is a pointer (written only
  when set), ``omitempty`` / ``omitzero``, and embedded structs whose fields
  JSON inlines (``VolumeSource`` in ``Volume``);
- ``doc.go`` / ``register.go`` give each package's API group.

Usage (the two checkouts can be bare mirrors; ``HEAD`` is read)::

    python tools/gen_protobuf_schema.py /path/to/kubernetes/api /path/to/kubernetes/apimachinery

The output records both commits. Re-run it when a new Kubernetes release adds
kinds or fields; the decoder refuses (415) a field number it does not know.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "ownergc_backends/memory/_protobuf_schema.json.gz"

_MESSAGE = re.compile(r"^message (\w+) \{$")
_FIELD = re.compile(r"^\s+(optional|repeated) ([\w.]+) (\w+) = (\d+);")
_MAP = re.compile(r"^\s+map<(\w+), ([\w.]+)> (\w+) = (\d+);")
_PACKAGE = re.compile(r"^package ([\w.]+);")
_STRUCT = re.compile(r"^type (\w+) struct \{")
_NAMED = re.compile(r"^type (\w+) (\[\]|map\[)")
# A struct field: `Name Type `tags`` or an embedded `Type `tags``.
_GO_FIELD = re.compile(r"^\t(?:(\w+)\s+)?(\*?[\w.\[\]]+(?:\[[\w.]+\][\w.*]+)?)\s+`([^`]*)`")
_TAG = re.compile(r'(\w+):"([^"]*)"')
_GROUP_DOC = re.compile(r"^// \+groupName=(\S*)", re.M)
_GROUP_REGISTER = re.compile(r'GroupName\s*=\s*"([^"]*)"')

SCALARS = {"string", "bytes", "int32", "int64", "uint32", "uint64", "bool", "double", "float"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


def git_dir(path: Path) -> Path:
    for candidate in (path / ".git", path / "repo", path):
        if (candidate / "HEAD").exists() and (candidate / "objects").exists():
            return candidate
    sys.exit(f"{path}: not a git checkout or mirror")


def parse_proto(text: str) -> tuple[str, dict[str, dict[str, list[Any]]]]:
    package = ""
    messages: dict[str, dict[str, list[Any]]] = {}
    current: dict[str, list[Any]] | None = None
    for line in text.splitlines():
        if m := _PACKAGE.match(line):
            package = m.group(1)
        elif m := _MESSAGE.match(line):
            current = messages.setdefault(m.group(1), {})
        elif line == "}":
            current = None
        elif current is not None and (m := _FIELD.match(line)):
            label, typ, name, number = m.groups()
            current[number] = [name, typ, "many" if label == "repeated" else "one"]
        elif current is not None and (m := _MAP.match(line)):
            _key, value, name, number = m.groups()
            current[number] = [name, value, "map"]
    return package, messages


def qualify(package: str, typ: str) -> str:
    if typ in SCALARS:
        return typ
    return typ[1:] if typ.startswith(".") else f"{package}.{typ}"


def parse_go(text: str, structs: dict[str, dict[int, dict[str, Any]]], lists: set[str]) -> None:
    """Each struct's protobuf-numbered fields, with the JSON facts of each."""
    current: dict[int, dict[str, Any]] | None = None
    for line in text.splitlines():
        if m := _STRUCT.match(line):
            current = structs.setdefault(m.group(1), {})
            continue
        if m := _NAMED.match(line):
            if m.group(2) == "[]":
                lists.add(m.group(1))
            continue
        if current is None:
            continue
        if line.startswith("}"):
            current = None
            continue
        m = _GO_FIELD.match(line)
        if not m:
            continue
        field_name, go_type, tags = m.groups()
        tag = dict(_TAG.findall(tags))
        if "protobuf" not in tag:
            continue
        parts = tag["protobuf"].split(",")
        if len(parts) < 2 or not parts[1].isdigit():
            continue
        number = int(parts[1])
        json_tag = tag.get("json", "").split(",")
        json_name, options = json_tag[0], set(json_tag[1:])
        embedded = field_name is None
        if json_name == "-":
            continue
        current[number] = {
            "json": json_name or (field_name or ""),
            "inline": embedded and (json_name == "" or "inline" in options),
            "pointer": go_type.startswith("*"),
            "omitempty": "omitempty" in options,
            "omitzero": "omitzero" in options,
        }


def package_files(repo: Path, directory: str) -> list[str]:
    names = git(repo, "ls-tree", "--name-only", f"HEAD:{directory}").split()
    return [
        n
        for n in names
        if n.endswith(".go")
        and not n.endswith("_test.go")
        and not n.startswith(("zz_generated", "generated.pb"))
        and "swagger_doc" not in n
    ]


def group_of(repo: Path, directory: str, files: list[str]) -> str | None:
    for name in ("doc.go", "register.go"):
        if name not in files:
            continue
        text = git(repo, "show", f"HEAD:{directory}/{name}")
        if m := _GROUP_DOC.search(text):
            return m.group(1)
        if m := _GROUP_REGISTER.search(text):
            return m.group(1)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("api", type=Path, help="a checkout or mirror of k8s.io/api")
    parser.add_argument(
        "apimachinery", type=Path, help="a checkout or mirror of k8s.io/apimachinery"
    )
    parser.add_argument("-o", "--output", type=Path, default=OUT)
    args = parser.parse_args()

    messages: dict[str, dict[str, Any]] = {}
    kinds: dict[str, str] = {}
    commits: dict[str, str] = {}
    for label, path in (("k8s.io/api", args.api), ("k8s.io/apimachinery", args.apimachinery)):
        repo = git_dir(path)
        commits[label] = git(repo, "rev-parse", "HEAD").strip()
        protos = [
            p
            for p in git(repo, "ls-tree", "-r", "--name-only", "HEAD").split()
            if p.endswith("/generated.proto") and "testapigroup" not in p
        ]
        for proto in protos:
            directory = proto.rsplit("/", 1)[0]
            package, parsed = parse_proto(git(repo, "show", f"HEAD:{proto}"))
            files = package_files(repo, directory)
            structs: dict[str, dict[int, dict[str, Any]]] = {}
            lists: set[str] = set()
            for name in files:
                parse_go(git(repo, "show", f"HEAD:{directory}/{name}"), structs, lists)
            group = group_of(repo, directory, files) if label == "k8s.io/api" else None
            version = directory.rsplit("/", 1)[-1]
            for message, fields in parsed.items():
                full = f"{package}.{message}"
                go = structs.get(message, {})
                out: dict[str, list[Any]] = {}
                for number, (name, typ, arity) in fields.items():
                    facts = go.get(int(number), {})
                    flags = "".join(
                        flag
                        for flag, on in (
                            ("i", facts.get("inline", False)),
                            ("p", facts.get("pointer", False)),
                            ("e", facts.get("omitempty", False)),
                            ("z", facts.get("omitzero", False)),
                        )
                        if on
                    )
                    if not facts:
                        flags += "?"  # no Go facts: treat as a pointer (written only when set)
                    out[number] = [facts.get("json") or name, qualify(package, typ), arity, flags]
                entry: dict[str, Any] = {"fields": out}
                if message in lists:
                    entry["list"] = True  # a named slice type: JSON is the bare list
                messages[full] = entry
                if group is not None and fields.get("1", [None, ""])[1].endswith(
                    "meta.v1.ObjectMeta"
                ):
                    api_version = f"{group}/{version}" if group else version
                    kinds[f"{api_version}/{message}"] = full
    document = {
        "source": commits,
        "generator": "tools/gen_protobuf_schema.py",
        "kinds": dict(sorted(kinds.items())),
        "messages": dict(sorted(messages.items())),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    data = json.dumps(document, separators=(",", ":"), sort_keys=False).encode()
    args.output.write_bytes(gzip.compress(data, mtime=0))
    print(f"{args.output}: {len(kinds)} kinds, {len(messages)} messages, {len(data)} bytes of JSON")


if __name__ == "__main__":
    main()
