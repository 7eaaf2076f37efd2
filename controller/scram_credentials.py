"""SCRAM credentials: AlterUserScramCredentials (51, forwardable) and DescribeUserScramCredentials (50, a read).

The client sends the salted password; the controller keeps it with the salt
and iterations, and describing a user only ever shows mechanism and
iterations. Error codes follow Kafka's ScramControlManager.
"""

from collections import Counter
from typing import Any

from kio.schema.errors import ErrorCode

from authz import Authorizer, Operation, RequestContext
from controller.authorize import AUTHORIZATION_FAILED, cluster_allowed
from controller.image import MetadataImage, StoredScramCredential

MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
MECHANISM_CODES = {name: code for code, name in MECHANISMS.items()}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384


class ScramCredentialHandlers:
    def __init__(self, image: MetadataImage, authorizer: Authorizer) -> None:
        self.image = image
        self.authorizer = authorizer

    def alter_user_scram_credentials(self, body: Any, ctx: RequestContext) -> dict[str, Any]:
        users = list(dict.fromkeys([str(d.name) for d in body.deletions] + [str(u.name) for u in body.upsertions]))
        if not cluster_allowed(self.authorizer, ctx, Operation.ALTER):
            return {
                "throttle_time": 0,
                "results": [{"user": u, "error_code": ErrorCode.cluster_authorization_failed, "error_message": AUTHORIZATION_FAILED} for u in users],
            }
        mentions = Counter([str(d.name) for d in body.deletions] + [str(u.name) for u in body.upsertions])
        problems: dict[str, tuple[int, str]] = {}
        # Kafka's order: a deletion of what is not there, then a user named twice, then each upsertion's values.
        for deletion in body.deletions:
            name, mechanism = str(deletion.name), MECHANISMS.get(int(deletion.mechanism))
            if name in problems:
                continue
            if mechanism is None:
                problems[name] = (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
            elif mechanism not in self.image.scram_credentials.get(name, {}):
                problems[name] = (ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist")
        for user, count in mentions.items():
            if user in problems:
                continue
            if count > 1:
                problems[user] = (ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request")
            elif not user:
                problems[user] = (ErrorCode.unacceptable_credential, "Username must not be empty")
        for upsertion in body.upsertions:
            name, mechanism, iterations = str(upsertion.name), MECHANISMS.get(int(upsertion.mechanism)), int(upsertion.iterations)
            if name in problems:
                continue
            if mechanism is None:
                problems[name] = (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
            elif iterations < MIN_ITERATIONS:
                problems[name] = (ErrorCode.unacceptable_credential, "Too few iterations")
            elif iterations > MAX_ITERATIONS:
                problems[name] = (ErrorCode.unacceptable_credential, "Too many iterations")
            elif not upsertion.salt or not upsertion.salted_password:
                problems[name] = (ErrorCode.unacceptable_credential, "Salt and salted password must not be empty")
        for deletion in body.deletions:
            name = str(deletion.name)
            if name not in problems:
                stored = self.image.scram_credentials[name]
                del stored[MECHANISMS[int(deletion.mechanism)]]
                if not stored:
                    del self.image.scram_credentials[name]
        for upsertion in body.upsertions:
            name = str(upsertion.name)
            if name not in problems:
                self.image.scram_credentials.setdefault(name, {})[MECHANISMS[int(upsertion.mechanism)]] = StoredScramCredential(
                    bytes(upsertion.salt), bytes(upsertion.salted_password), int(upsertion.iterations)
                )
        return {
            "throttle_time": 0,
            "results": [
                {"user": u, "error_code": problems.get(u, (ErrorCode.none, None))[0], "error_message": problems.get(u, (ErrorCode.none, None))[1]} for u in users
            ],
        }

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
