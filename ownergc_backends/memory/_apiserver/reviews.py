"""POST of a review kind (access reviews, SelfSubjectReview): answered, never stored."""

from __future__ import annotations

from ownergc.errors import BadRequest

from .._negotiation import _json_response, object_body
from .._reviews import answer_review
from .context import Reply, RequestContext, ResourceRoute

__all__ = ["ReviewHandler"]


class ReviewHandler:
    """Answers the review in the request body as an allow-all server would (201, as
    kube-apiserver answers a create); the user is the one authentication found."""

    async def __call__(self, ctx: RequestContext, route: ResourceRoute) -> Reply:
        resource = route.resource
        body = object_body(ctx.request, f"the {resource.kind}")
        if not isinstance(body, dict):
            raise BadRequest(f"the {resource.kind} is not a JSON object", reason="BadRequest")
        user = ctx.user
        user_info = {"username": user.name, "groups": list(user.groups)}
        if user.uid:
            user_info["uid"] = user.uid
        answer = answer_review(resource.group, resource.version, resource.resource, body, user_info)
        if route.namespace is not None:
            answer["metadata"].setdefault("namespace", route.namespace)
        return _json_response(201, answer)
