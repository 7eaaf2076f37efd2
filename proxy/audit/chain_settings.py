"""`audit.chain.*`: how often the audit chain is checkpointed, and the key that signs the checkpoints.

The chain attributes (`chainseq`, `chainprev`) are always written. Checkpoints are written only when
`audit.chain.signing.key.file` names a key: an unsigned checkpoint would prove nothing that the chain does not.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from proxy.properties import ConfigError, Properties

KEY_FILE_KEY = "audit.chain.signing.key.file"
CHECKPOINT_RECORDS_KEY = "audit.chain.checkpoint.records"
CHECKPOINT_MS_KEY = "audit.chain.checkpoint.ms"
DEFAULT_CHECKPOINT_RECORDS = 1000
DEFAULT_CHECKPOINT_MS = 60_000
_MS_PER_SECOND = 1000
_MAX_KEY_FILE_BYTES = 64 * 1024
"""A PEM Ed25519 key is about 120 bytes: anything far bigger is the wrong file, not read whole."""


@dataclass(frozen=True)
class ChainSettings:
    checkpoint_records: int = DEFAULT_CHECKPOINT_RECORDS
    """`audit.chain.checkpoint.records`: a checkpoint after this many records since the last one."""
    checkpoint_seconds: float = DEFAULT_CHECKPOINT_MS / _MS_PER_SECOND
    """`audit.chain.checkpoint.ms` in seconds: a checkpoint this long after the first record it does not cover yet."""
    key_file: Path | None = None
    """`audit.chain.signing.key.file`: PEM PKCS#8 Ed25519 private key; None = no checkpoints."""
    signing_key: Ed25519PrivateKey | None = None

    def effective(self) -> dict[str, Any]:
        return {
            "chain.signing.key.file": str(self.key_file) if self.key_file else None,
            "chain.checkpoint.records": self.checkpoint_records,
            "chain.checkpoint.ms": int(self.checkpoint_seconds * _MS_PER_SECOND),
        }


def load_signing_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 private key in `path` (PEM, PKCS#8, unencrypted), or a ConfigError naming the key file and why."""
    try:
        with open(path, "rb") as handle:
            pem = handle.read(_MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(KEY_FILE_KEY, str(path), f"cannot read it: {exc.strerror or exc}") from None
    if len(pem) > _MAX_KEY_FILE_BYTES:
        raise ConfigError(KEY_FILE_KEY, str(path), f"over {_MAX_KEY_FILE_BYTES} bytes: not a PEM Ed25519 key")
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError) as exc:
        # TypeError: the key is encrypted; ValueError: not PEM, or not a key cryptography reads.
        raise ConfigError(KEY_FILE_KEY, str(path), f"not an unencrypted PEM PKCS#8 private key ({exc})") from None
    except Exception as exc:  # cryptography's UnsupportedAlgorithm and the like: still the operator's file
        raise ConfigError(KEY_FILE_KEY, str(path), f"not a private key this proxy can use ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(KEY_FILE_KEY, str(path), f"a {type(key).__name__.removeprefix('_')} key, not Ed25519")
    return key


def parse_chain_settings(props: Properties) -> ChainSettings:
    text = props.get(KEY_FILE_KEY)
    key_file = Path(text) if text else None
    return ChainSettings(
        checkpoint_records=props.int(CHECKPOINT_RECORDS_KEY, DEFAULT_CHECKPOINT_RECORDS, minimum=1),
        checkpoint_seconds=props.int(CHECKPOINT_MS_KEY, DEFAULT_CHECKPOINT_MS, minimum=1) / _MS_PER_SECOND,
        key_file=key_file,
        signing_key=load_signing_key(key_file) if key_file is not None else None,
    )
