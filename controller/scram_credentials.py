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
from controller.authorize import AUTHORIZATION_FAILED, cluster_allowed, cluster_denied
from controller.image import MetadataImage, StoredScramCredential
from controller.java_order import string_map_order

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MECHANISM_CODES = {name: code for code, name in MECHANISMS.items()}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
TWICE = "A user credential cannot be altered twice in the same request"

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
        if not cluster_allowed(self.authorizer, ctx, Operation.DESCRIBE):
            return {"throttle_time": 0, "error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED, "results": []}
        asked = [str(u.name) for u in body.users] if body.users else sorted(self.image.scram_credentials)
        counts = Counter(asked)
        results = []
        for user in dict.fromkeys(asked):
            stored = self.image.scram_credentials.get(user)
            if counts[user] > 1:
                code, message = ErrorCode.duplicate_resource, "Cannot describe SCRAM credentials for the same user twice in a single request"
            elif not stored:
                code, message = ErrorCode.resource_not_found, "Attempt to describe a user credential that does not exist"
            else:
                code, message = ErrorCode.none, None
            infos = [{"mechanism": MECHANISM_CODES[m], "iterations": c.iterations} for m, c in sorted((stored or {}).items())]
            results.append({"user": user, "error_code": code, "error_message": message, "credential_infos": infos if code == ErrorCode.none else []})
        return {"throttle_time": 0, "error_code": ErrorCode.none, "error_message": None, "results": results}
