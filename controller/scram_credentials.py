"""SCRAM credentials: AlterUserScramCredentials (51, forwardable) and DescribeUserScramCredentials (50, a read).

The client sends the salted password; the controller keeps it with the salt
and iterations, and describing a user only ever shows mechanism and
iterations. AlterUserScramCredentials follows Kafka's ScramControlManager: the
deletions, then the upsertions, one by one (a user met a second time is a
DUPLICATE_RESOURCE, a user already refused is not looked at again), and the
answer lists the deletions, the upsertions and the refusals, each group in the
order of Kafka's HashMap (controller/java_order.py).
"""

from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext
from controller.authorize import cluster_allowed, cluster_denied
from controller.image import MetadataImage, StoredScramCredential
from controller.java_order import string_map_order

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MECHANISM_CODES = {name: code for code, name in MECHANISMS.items()}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
TWICE = "A user credential cannot be altered twice in the same request"
UNSET_MESSAGE = ""  # what Kafka's generated message classes hold in a string nobody set

Problem = tuple[int, str | None]


class ScramCredentialHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer) -> None:
        self.image = image
        self.authorizer = authorizer

    def _name_problem(self, name: str, mechanism: str | None) -> Problem | None:
        """validateScramUsernameAndMechanism."""
        if not name:
            return ErrorCode.unacceptable_credential, "Username must not be empty"
        if mechanism is None:
            return ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"
        return None

    def alter_user_scram_credentials(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            # AlterUserScramCredentialsRequest.getErrorResponse: each user named once, sorted.
            users = sorted({str(d.name) for d in body.deletions} | {str(u.name) for u in body.upsertions})
            denied = cluster_denied(ctx, Operation.ALTER)
            return {"throttle_time": 0, "results": [{"user": u, "error_code": ErrorCode.cluster_authorization_failed, "error_message": denied} for u in users]}
        deletions: dict[str, str] = {}  # user -> mechanism
        upsertions: dict[str, Any] = {}
        errors: dict[str, Problem] = {}
        for deletion in body.deletions:
            name, mechanism = str(deletion.name), MECHANISMS.get(int(deletion.mechanism))
            if name in errors:
                continue
            if deletions.pop(name, None) is not None:
                errors[name] = (ErrorCode.duplicate_resource, TWICE)
                continue
            problem = self._name_problem(name, mechanism)
            if problem is None and mechanism not in self.image.scram_credentials.get(name, {}):
                problem = ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist"
            if problem is not None:
                errors[name] = problem
            elif mechanism is not None:
                deletions[name] = mechanism
        for upsertion in body.upsertions:
            name, mechanism, iterations = str(upsertion.name), MECHANISMS.get(int(upsertion.mechanism)), int(upsertion.iterations)
            if name in errors:
                continue
            if deletions.pop(name, None) is not None or upsertions.pop(name, None) is not None:
                errors[name] = (ErrorCode.duplicate_resource, TWICE)
                continue
            problem = self._name_problem(name, mechanism)
            if problem is None and iterations < MIN_ITERATIONS:
                problem = ErrorCode.unacceptable_credential, "Too few iterations"
            elif problem is None and iterations > MAX_ITERATIONS:
                problem = ErrorCode.unacceptable_credential, "Too many iterations"
            if problem is not None:
                errors[name] = problem
            else:
                upsertions[name] = upsertion
        results = []
        for name in string_map_order(deletions):
            stored = self.image.scram_credentials[name]
            del stored[deletions[name]]
            if not stored:
                del self.image.scram_credentials[name]
            results.append({"user": name, "error_code": ErrorCode.none, "error_message": None})
        for name in string_map_order(upsertions):
            upsertion = upsertions[name]
            if not upsertion.salted_password:
                # Kafka derives the stored and server keys with an HMAC keyed by the salted password: an empty key
                # throws there, an unexpected error, reported without a message.
                errors[name] = (ErrorCode.unknown_server_error, None)
                continue
            self.image.scram_credentials.setdefault(name, {})[MECHANISMS[int(upsertion.mechanism)]] = StoredScramCredential(
                bytes(upsertion.salt), bytes(upsertion.salted_password), int(upsertion.iterations)
            )
            results.append({"user": name, "error_code": ErrorCode.none, "error_message": None})
        for name in string_map_order(errors):
            code, message = errors[name]
            results.append({"user": name, "error_code": code, "error_message": message})
        return {"throttle_time": 0, "results": results}

    def describe_user_scram_credentials(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        """A Kafka broker's answer (KafkaApis, then ScramImage.describe): each user named once, in HashMap order."""
        asked = None if not body.users else [str(u.name) for u in body.users]
        if not cluster_allowed(self.authorizer, ctx, Operation.DESCRIBE):
            # DescribeUserScramCredentialsRequest.getErrorResponse: one nameless result per user asked for.
            failed: dict[str, Any] = {"error_code": ErrorCode.cluster_authorization_failed, "error_message": None, "credential_infos": []}
            return {**failed, "throttle_time": 0, "results": [{**failed, "user": UNSET_MESSAGE} for _ in asked or ()]}
        twice = {user for user, count in Counter(asked).items() if count > 1} if asked else set()
        results = []
        for user in string_map_order(asked if asked is not None else self.image.scram_credentials):
            stored = self.image.scram_credentials.get(user)
            result: dict[str, Any] = {"user": user, "error_code": ErrorCode.none, "error_message": UNSET_MESSAGE, "credential_infos": []}
            if user in twice:
                result.update(error_code=ErrorCode.duplicate_resource, error_message=f"Cannot describe SCRAM credentials for the same user twice in a single request: {user}")
            elif not stored:
                result.update(error_code=ErrorCode.resource_not_found, error_message=f"Attempt to describe a user credential that does not exist: {user}")
            else:
                result["credential_infos"] = [{"mechanism": MECHANISM_CODES[m], "iterations": c.iterations} for m, c in sorted(stored.items())]
            results.append(result)
        return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": UNSET_MESSAGE, "results": results}
