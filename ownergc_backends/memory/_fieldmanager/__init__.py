"""Server-side apply and managedFields for the in-memory apiserver.

A self-contained, pure engine (no I/O, no clock): the REST facade calls
:func:`apply` for ``application/apply-patch+yaml`` and
:func:`update_managed_fields` for every other write, and stores what they
return. Merge facts come from :mod:`.schema` (the recorded OpenAPI v2
document for built-in kinds, a CRD's ``openAPIV3Schema`` for custom
resources); :func:`strategic_list_facts` exposes the same facts for
strategic merge patch.
"""

from __future__ import annotations

from .conflicts import ApplyConflict
from .engine import STRIPPED_FIELDS, ApplyError, ApplyResult, apply, update_managed_fields
from .fieldpath import (
    FieldSet,
    FieldsV1Error,
    Path,
    decode_fields_v1,
    encode_fields_v1,
    path_string,
)
from .lastapplied import apply_after_client_side
from .managers import (
    Entry,
    EntryKey,
    ManagedFieldsError,
    decode_managed_fields,
    encode_managed_fields,
    manager_from_user_agent,
)
from .merge import MergeError
from .schema import (
    Node,
    SchemaError,
    builtin_schema,
    crd_schema,
    crd_version_schema,
    strategic_list_facts,
    strategic_merge_keys,
    untyped,
)

__all__ = [
    "STRIPPED_FIELDS",
    "ApplyConflict",
    "ApplyError",
    "ApplyResult",
    "Entry",
    "EntryKey",
    "FieldSet",
    "FieldsV1Error",
    "ManagedFieldsError",
    "MergeError",
    "Node",
    "Path",
    "SchemaError",
    "apply",
    "apply_after_client_side",
    "builtin_schema",
    "crd_schema",
    "crd_version_schema",
    "decode_fields_v1",
    "decode_managed_fields",
    "encode_fields_v1",
    "encode_managed_fields",
    "manager_from_user_agent",
    "path_string",
    "strategic_list_facts",
    "strategic_merge_keys",
    "untyped",
    "update_managed_fields",
]
