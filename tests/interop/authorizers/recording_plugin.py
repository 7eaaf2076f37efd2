"""A Python authorizer plug-in for the embedded controller that keeps ACLs (the built-in ACL authorizer) and
records the context of every decision: the Python counterpart of RecordingAuthorizer.java."""

from collections.abc import Sequence

from authz import AclAuthorizer
from authz.model import Action, Decision, RequestContext

SEEN: list[tuple[RequestContext, Action, Decision]] = []
"""Every decision since the process started: (context, action, decision)."""


class RecordingAcls(AclAuthorizer):
    def __init__(self, properties: dict[str, str]) -> None:
        super().__init__([user for user in properties.get("super.users", "").split(";") if user])

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[Decision]:
        decisions = super().authorize(context, actions)
        SEEN.extend((context, action, decision) for action, decision in zip(actions, decisions, strict=True))
        return decisions
