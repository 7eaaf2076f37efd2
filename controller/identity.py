"""The embedded controller's cluster id: set in its configuration, or made once and kept with its metadata.

As `kafka-storage format` does, the id lives in `meta.properties` in the metadata directory, beside
the node id, so a restart answers with the same id. A configured `cluster.id` that differs from the
stored one is refused, as Kafka refuses to start on a log directory of another cluster.
"""

import io
import logging
from pathlib import Path

import javaproperties

from envelope import kafka_uuid
from proxy.files import write_atomically
from proxy.properties import ConfigError

log = logging.getLogger(__name__)

CLUSTER_ID_KEY = "cluster.id"
META_PROPERTIES = "meta.properties"
META_VERSION = "1"  # Kafka's meta.properties version for KRaft


def cluster_id_for(node_id: int, configured: str | None, metadata_dir: Path | None, *, voters: int = 1) -> str:
    """The id this controller answers with: the stored one, else the configured one, else a new one (then stored).

    A new id for one voter of several is worth a warning: Kafka formats every voter with one id, and a
    proxy refuses the controllers that report another id than the first it met."""
    if configured is None and voters > 1 and (metadata_dir is None or not (metadata_dir / META_PROPERTIES).exists()):
        log.warning(
            "%s is not set and %d voters are configured: this node makes a cluster id of its own, which the other voters "
            "will not share. Give every voter the same %s (kafka-storage random-uuid)",
            CLUSTER_ID_KEY,
            voters,
            CLUSTER_ID_KEY,
        )
    if metadata_dir is None:
        return configured or kafka_uuid.random_text()
    path = metadata_dir / META_PROPERTIES
    stored = _stored_cluster_id(path)
    if stored is not None:
        if configured is not None and configured != stored:
            raise ConfigError(CLUSTER_ID_KEY, configured, f"{path} holds cluster id {stored}: that metadata belongs to another cluster")
        return stored
    cluster_id = configured or kafka_uuid.random_text()
    metadata_dir.mkdir(parents=True, exist_ok=True)
    text = io.StringIO()
    javaproperties.dump({"version": META_VERSION, "node.id": str(node_id), CLUSTER_ID_KEY: cluster_id}, text, timestamp=False)
    write_atomically(path, text.getvalue().encode("utf-8"))
    return cluster_id


def _stored_cluster_id(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8") as handle:
            stored = javaproperties.load(handle).get(CLUSTER_ID_KEY)
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError("metadata.log.dir", str(path.parent), f"{path} cannot be read: {exc}") from exc
    problem = kafka_uuid.parse_problem(stored) if stored is not None else f"it has no {CLUSTER_ID_KEY}"
    if problem is not None:
        raise ConfigError("metadata.log.dir", str(path.parent), f"{path}: {CLUSTER_ID_KEY} {stored!r} is not valid: {problem}")
    return stored


__all__ = ["CLUSTER_ID_KEY", "META_PROPERTIES", "cluster_id_for"]
