"""The embedded controller's metadata image on disk: topics, configs, ACLs, quotas, SCRAM credentials, features and
delegation tokens survive a crash.

After every request that changed something, and before its response is sent,
the whole image is written to a temporary file, fsynced, renamed over
`metadata.json` and the directory fsynced. A crash at any instant leaves
either the old or the new image, never a mix, and every acknowledged change
is on disk. The server encodes the image on its event loop and writes it in a
worker thread, one write at a time (controller/server.py). Rewriting
everything per change is linear in the image size; that suits a reference
controller with thousands of entries, not millions.
"""

import base64
import json
import logging
import uuid
from pathlib import Path
from typing import Any

from authz import AclBinding
from authz.acl_file import binding_from_dict, binding_to_dict
from controller.image import DelegationToken, MetadataImage, StoredScramCredential, Topic
from envelope.principal import Principal
from proxy.files import write_atomically

log = logging.getLogger(__name__)

FILE_NAME = "metadata.json"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)  # 1 had no quotas, SCRAM credentials, features or reassignments; group and client-metrics configs and tokens are optional in 2


def _principal(text: str) -> Principal:
    """`Type:name`, as stored (a name may hold ':'; a type may not)."""
    kind, sep, name = str(text).partition(":")
    if not sep:
        raise ValueError(f"not a principal: {text!r}")
    return Principal(kind, name)


class MetadataStoreError(Exception):
    """The stored image cannot be read; the message names the file and the problem."""


def image_state(image: MetadataImage, acls: list[AclBinding]) -> dict[str, Any]:
    return {
        "version": FORMAT_VERSION,
        "topics": {
            name: {
                "id": str(topic.topic_id),
                "partitions": topic.partitions,
                "replicationFactor": topic.replication_factor,
                "configs": dict(sorted(topic.configs.items())),
                "assignments": {str(p): replicas for p, replicas in sorted(topic.assignments.items())},
            }
            for name, topic in sorted(image.topics.items())
        },
        "brokerConfigs": {name: dict(sorted(configs.items())) for name, configs in sorted(image.broker_configs.items())},
        "groupConfigs": {name: dict(sorted(configs.items())) for name, configs in sorted(image.group_configs.items())},
        "clientMetricsConfigs": {name: dict(sorted(configs.items())) for name, configs in sorted(image.client_metrics_configs.items())},
        "quotas": [
            {"entity": [{"type": kind, "name": name} for kind, name in entity], "values": dict(sorted(values.items()))}
            for entity, values in sorted(image.quotas.items(), key=lambda item: str(item[0]))
        ],
        "scramCredentials": {
            user: {
                mechanism: {
                    "salt": base64.b64encode(c.salt).decode(),
                    "saltedPassword": base64.b64encode(c.salted_password).decode(),
                    "iterations": c.iterations,
                }
                for mechanism, c in sorted(credentials.items())
            }
            for user, credentials in sorted(image.scram_credentials.items())
        },
        "finalizedFeatures": dict(sorted(image.finalized_features.items())),
        # Kafka's DelegationTokenRecord: no HMAC (the secret key's HMAC of the id)
        "delegationTokens": {
            token_id: {
                "owner": str(token.owner),
                "requester": str(token.requester),
                "renewers": [str(r) for r in token.renewers],
                "issueTimestampMs": token.issue_ms,
                "maxTimestampMs": token.max_ms,
                "expiryTimestampMs": token.expiry_ms,
            }
            for token_id, token in sorted(image.delegation_tokens.items())
        },
        "acls": sorted((binding_to_dict(b) for b in acls), key=lambda acl: json.dumps(acl, sort_keys=True)),
    }


class MetadataStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME
        self._written: bytes | None = None

    def load(self, image: MetadataImage) -> list[AclBinding]:
        """Fill `image` from disk and return the stored ACLs; nothing stored yet leaves it empty."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MetadataStoreError(f"{self.directory}: cannot create: {exc.strerror}") from exc
        for leftover in self.directory.glob(f".{FILE_NAME}.*.tmp"):
            leftover.unlink(missing_ok=True)  # a crash between write and rename: never acknowledged
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise MetadataStoreError(f"{self.path}: cannot read: {exc.strerror}") from exc
        try:
            state = json.loads(raw)
            if state.get("version") not in READABLE_VERSIONS:
                raise MetadataStoreError(f"{self.path}: unsupported format version {state.get('version')!r}")
            for name, item in state["topics"].items():
                image.topics[name] = Topic(
                    name,
                    uuid.UUID(item["id"]),
                    int(item["partitions"]),
                    int(item["replicationFactor"]),
                    dict(item["configs"]),
                    {int(p): [int(r) for r in replicas] for p, replicas in item.get("assignments", {}).items()},
                )
            image.broker_configs.update({name: dict(configs) for name, configs in state["brokerConfigs"].items()})
            image.group_configs.update({name: dict(configs) for name, configs in state.get("groupConfigs", {}).items()})
            image.client_metrics_configs.update({name: dict(configs) for name, configs in state.get("clientMetricsConfigs", {}).items()})
            for quota in state.get("quotas", []):
                entity = tuple(sorted((str(e["type"]), None if e["name"] is None else str(e["name"])) for e in quota["entity"]))
                image.quotas[entity] = {str(k): float(v) for k, v in quota["values"].items()}
            for user, credentials in state.get("scramCredentials", {}).items():
                image.scram_credentials[user] = {
                    mechanism: StoredScramCredential(
                        base64.b64decode(c["salt"]), base64.b64decode(c["saltedPassword"]), int(c["iterations"])
                    )
                    for mechanism, c in credentials.items()
                }
            if "finalizedFeatures" in state:
                image.finalized_features = {str(k): int(v) for k, v in state["finalizedFeatures"].items()}
            for token_id, token in state.get("delegationTokens", {}).items():
                image.delegation_tokens[str(token_id)] = DelegationToken(
                    str(token_id),
                    _principal(token["owner"]),
                    _principal(token["requester"]),
                    tuple(_principal(r) for r in token["renewers"]),
                    int(token["issueTimestampMs"]),
                    int(token["maxTimestampMs"]),
                    int(token["expiryTimestampMs"]),
                )
            acls = [binding_from_dict(a) for a in state["acls"]]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise MetadataStoreError(f"{self.path}: not a metadata image: {exc!r}") from exc
        self._written = raw
        log.info("controller: loaded %d topics and %d ACLs from %s", len(image.topics), len(acls), self.path)
        return acls

    def save(self, image: MetadataImage, acls: list[AclBinding]) -> None:
        """Write the image if it changed; returns once it is durable."""
        self.write(self.encode(image, acls))

    def encode(self, image: MetadataImage, acls: list[AclBinding]) -> bytes:
        """The image as stored: a snapshot that later changes to `image` cannot touch (taken on the event loop)."""
        return json.dumps(image_state(image, acls), indent=1).encode()

    def write(self, data: bytes) -> None:
        """Store `data` from `encode` unless it is what is stored; blocks until durable (runs in a worker thread).

        Not safe to call concurrently: the caller serializes writes.
        """
        if data == self._written:
            return
        write_atomically(self.path, data)
        self._written = data
