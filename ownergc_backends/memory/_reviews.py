"""The review kinds a client creates to ask a question: answered, never stored.

``kubectl auth can-i`` creates a SelfSubjectAccessReview (``--list``: a
SelfSubjectRulesReview), ``kubectl auth whoami`` a SelfSubjectReview, and an
operator or webhook may create (Local)SubjectAccessReviews. kube-apiserver
answers each from its authorizer and authenticator and keeps nothing.
``ownergc serve`` has no authentication or authorization, so it answers as an
allow-all server would, and says so in the reason, so nobody mistakes the
answer for an RBAC decision.
"""

from __future__ import annotations

import copy
from typing import Final

from ownergc.errors import BadRequest
from ownergc.protocols import JSONDict

__all__ = ["ALLOW_ALL_REASON", "REVIEWS", "answer_review", "is_review"]

ALLOW_ALL_REASON: Final = (
    "ownergc serve has no authorization: every request is allowed (this is not an RBAC decision)"
)

#: (group, resource) -> kind of every review the server answers.
REVIEWS: Final[dict[tuple[str, str], str]] = {
    ("authorization.k8s.io", "selfsubjectaccessreviews"): "SelfSubjectAccessReview",
    ("authorization.k8s.io", "selfsubjectrulesreviews"): "SelfSubjectRulesReview",
    ("authorization.k8s.io", "subjectaccessreviews"): "SubjectAccessReview",
    ("authorization.k8s.io", "localsubjectaccessreviews"): "LocalSubjectAccessReview",
    ("authentication.k8s.io", "selfsubjectreviews"): "SelfSubjectReview",
}


def is_review(group: str, resource: str) -> bool:
    return (group, resource) in REVIEWS


def answer_review(
    group: str, version: str, resource: str, body: JSONDict, user_info: JSONDict
) -> JSONDict:
    """The created review with its ``status`` filled in, as the answer to a POST."""
    kind = REVIEWS[(group, resource)]
    if body.get("kind") not in (None, kind):
        raise BadRequest(f"the body is a {body.get('kind')}, not a {kind}", reason="BadRequest")
    answer = copy.deepcopy(body)
    answer["apiVersion"] = f"{group}/{version}"
    answer["kind"] = kind
    # An ObjectMeta never stored: its zero creationTimestamp is written as null.
    given = answer.get("metadata")
    meta: JSONDict = given if isinstance(given, dict) else {}
    answer["metadata"] = {**meta, "creationTimestamp": meta.get("creationTimestamp")}
    spec = answer.get("spec") or {}
    if kind == "SelfSubjectReview":
        answer["status"] = {"userInfo": copy.deepcopy(user_info)}
    elif kind == "SelfSubjectRulesReview":
        if not spec.get("namespace"):
            raise BadRequest(
                "SelfSubjectRulesReview.authorization.k8s.io is invalid: spec.namespace: "
                "Required value: no namespace on request",
                reason="Invalid",
            )
        answer["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
            "evaluationError": ALLOW_ALL_REASON,
        }
    else:
        attributes = spec.get("resourceAttributes") or spec.get("nonResourceAttributes")
        if not attributes:
            raise BadRequest(
                f"{kind}.authorization.k8s.io is invalid: spec.resourceAttributes: Invalid "
                "value: null: exactly one of nonResourceAttributes or resourceAttributes "
                "must be specified",
                reason="Invalid",
            )
        answer["status"] = {"allowed": True, "reason": ALLOW_ALL_REASON}
    return answer
