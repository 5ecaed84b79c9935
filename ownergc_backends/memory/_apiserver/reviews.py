"""POSTs of the review kinds (``kubectl auth can-i``, ``auth whoami``): answered, never stored.

The answers come from :mod:`.._reviews` (an allow-all server's, saying so in
their reason); the user a SelfSubjectReview reports is the one the
authentication stage put on the request. With a field manager, the answer
carries the writer's ``Update`` entry in managedFields, as kube-apiserver's
create handler records it for any created kind.
"""

from __future__ import annotations

from ownergc.errors import BadRequest

from .._negotiation import _json_response, object_body
from .._reviews import answer_review
from .admission import AdmissionAttributes
from .context import Reply, RequestContext, ResourceRoute
from .fieldmanager import FieldManager, manager_name

__all__ = ["ReviewHandler"]


class ReviewHandler:
    """``create`` of SelfSubjectAccessReview, SelfSubjectRulesReview, (Local)SubjectAccessReview
    and SelfSubjectReview: 201 with the review and its status."""

    def __init__(self, fields: FieldManager | None = None) -> None:
        self.fields = fields

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
        if self.fields is not None:
            # (the status is the server's: the field manager leaves it out of the entry)
            attrs = AdmissionAttributes(
                "CREATE", resource, route.namespace, None, None, answer, None, False, ctx.user
            )
            answer = self.fields.on_write(attrs, manager_name(ctx.request)) or answer
        return _json_response(201, answer)
