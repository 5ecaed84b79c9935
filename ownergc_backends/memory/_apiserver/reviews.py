"""POSTs of the review kinds (``kubectl auth can-i``, ``auth whoami``): answered, never stored.

The answers come from :mod:`.._reviews` (an allow-all server's, saying so in
their reason); the user a SelfSubjectReview reports is the one the
authentication stage put on the request.
"""

from __future__ import annotations

from ownergc.errors import BadRequest

from .._negotiation import _json_response, object_body
from .._reviews import answer_review
from .context import Reply, RequestContext, ResourceRoute

__all__ = ["ReviewHandler"]


class ReviewHandler:
    """``create`` of SelfSubjectAccessReview, SelfSubjectRulesReview, (Local)SubjectAccessReview
    and SelfSubjectReview: 201 with the review and its status."""

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        body = object_body(ctx.request, "the review")
        if not isinstance(body, dict):
            raise BadRequest("the review must be a JSON object", reason="BadRequest")
        resource = route.resource
        if route.namespace is not None:
            # LocalSubjectAccessReview: the namespace of the URL is the one asked about.
            spec = body.get("spec") or {}
            attributes = spec.get("resourceAttributes") if isinstance(spec, dict) else None
            if isinstance(attributes, dict) and attributes.get("namespace", route.namespace) != (
                route.namespace
            ):
                raise BadRequest(
                    f"spec.resourceAttributes.namespace must match the URL's namespace "
                    f"({route.namespace})",
                    reason="BadRequest",
                )
        user = {"username": ctx.user.name, "groups": list(ctx.user.groups)}
        if ctx.user.uid:
            user["uid"] = ctx.user.uid
        answer = answer_review(resource.group, resource.version, resource.resource, body, user)
        return _json_response(201, answer)
