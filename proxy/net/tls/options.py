"""Kafka's ``ssl.*`` keys: TlsSettings, read with Kafka's validation (stores: stores.py, contexts: context.py).

Keystores and truststores are read with ``cryptography`` (PEM or PKCS12; JKS is not
supported) and handed to the stdlib ``ssl`` module.  Every problem is a
:class:`~proxy.properties.ConfigError` naming the full key (with the listener
prefix), the value (passwords and inline keys as ``[hidden]``) and the reason.

Differences from Kafka's DefaultSslEngineFactory, all deliberate:

* Unset store types mean PKCS12 (Kafka: JKS, which modern JDKs also use to read PKCS12 files).
* An unknown ``ssl.client.auth`` is an error (Kafka logs a warning and uses ``none``).
* TLSv1/TLSv1.1 are refused.  ``ssl.cipher.suites`` takes IANA (Java) names; with
  TLSv1.3 enabled the TLS 1.3 suites cannot be narrowed (Python's ``ssl`` has no API
  for it), so listing only TLS 1.2 suites does not turn TLS 1.3 suites off.
* A PEM keystore's encrypted key is decrypted with ``ssl.key.password`` and, failing
  that, ``ssl.keystore.password`` (Kafka rejects a keystore password for PEM).
  Traditional (non-PKCS#8) PEM keys are accepted too.
* Without a truststore the system CA bundle is used (Kafka: the JDK's cacerts).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, cast

from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa

from proxy.properties import ConfigError

__all__ = ["HIDDEN", "PrivateKey", "TlsSettings", "parse_tls_settings"]

HIDDEN = "[hidden]"  # what Kafka prints for PASSWORD-type values

KEYSTORE_TYPE = "ssl.keystore.type"
KEYSTORE_LOCATION = "ssl.keystore.location"
KEYSTORE_PASSWORD = "ssl.keystore.password"
KEY_PASSWORD = "ssl.key.password"
KEYSTORE_CERTIFICATE_CHAIN = "ssl.keystore.certificate.chain"
KEYSTORE_KEY = "ssl.keystore.key"
TRUSTSTORE_TYPE = "ssl.truststore.type"
TRUSTSTORE_LOCATION = "ssl.truststore.location"
TRUSTSTORE_PASSWORD = "ssl.truststore.password"
TRUSTSTORE_CERTIFICATES = "ssl.truststore.certificates"
CLIENT_AUTH = "ssl.client.auth"
ENABLED_PROTOCOLS = "ssl.enabled.protocols"
CIPHER_SUITES = "ssl.cipher.suites"
ENDPOINT_IDENTIFICATION = "ssl.endpoint.identification.algorithm"

StoreType = Literal["PEM", "PKCS12"]
ClientAuth = Literal["none", "requested", "required"]

_PROTOCOLS = {"TLSV1.2": "TLSv1.2", "TLSV1.3": "TLSv1.3"}
_INSECURE_PROTOCOLS = frozenset({"SSLV2", "SSLV2HELLO", "SSLV3", "TLSV1", "TLSV1.1"})
_TLS_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH_MODES: dict[str, ssl.VerifyMode] = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}

# IANA (Java) names of TLS 1.2 suites -> OpenSSL names (checked with `openssl ciphers -stdname`).
_TLS12_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
}
_TLS13_SUITES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"})

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | dsa.DSAPrivateKey | ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey


@dataclass(frozen=True)
class TlsSettings:
    """Validated ``ssl.*`` settings of one listener (or of the proxy's upstream client)."""

    keystore_type: StoreType = "PKCS12"
    keystore_location: str | None = None
    keystore_password: str | None = field(default=None, repr=False)
    key_password: str | None = field(default=None, repr=False)
    keystore_certificate_chain: str | None = field(default=None, repr=False)
    keystore_key: str | None = field(default=None, repr=False)
    truststore_type: StoreType = "PKCS12"
    truststore_location: str | None = None
    truststore_password: str | None = field(default=None, repr=False)
    truststore_certificates: str | None = field(default=None, repr=False)
    client_auth: ClientAuth = "none"
    enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    cipher_suites: tuple[str, ...] = ()  # empty: the library's defaults
    endpoint_identification: bool = True
    key_prefix: str = ""  # e.g. "listener.name.client.", only used to name keys in errors

    def key(self, name: str) -> str:
        return self.key_prefix + name

    def masked(self) -> dict[str, str | None]:
        """Kafka key -> effective value for display; secrets shown as ``[hidden]``."""

        def secret(value: str | None) -> str | None:
            return None if value is None else HIDDEN

        return {
            self.key(KEYSTORE_TYPE): self.keystore_type,
            self.key(KEYSTORE_LOCATION): self.keystore_location,
            self.key(KEYSTORE_PASSWORD): secret(self.keystore_password),
            self.key(KEY_PASSWORD): secret(self.key_password),
            self.key(KEYSTORE_CERTIFICATE_CHAIN): secret(self.keystore_certificate_chain),
            self.key(KEYSTORE_KEY): secret(self.keystore_key),
            self.key(TRUSTSTORE_TYPE): self.truststore_type,
            self.key(TRUSTSTORE_LOCATION): self.truststore_location,
            self.key(TRUSTSTORE_PASSWORD): secret(self.truststore_password),
            self.key(TRUSTSTORE_CERTIFICATES): secret(self.truststore_certificates),
            self.key(CLIENT_AUTH): self.client_auth,
            self.key(ENABLED_PROTOCOLS): ",".join(self.enabled_protocols),
            self.key(CIPHER_SUITES): ",".join(self.cipher_suites),
            self.key(ENDPOINT_IDENTIFICATION): "https" if self.endpoint_identification else "",
        }

    effective = masked

    def watched_files(self) -> tuple[tuple[str, str], ...]:
        """(full key, path) of the store files a reload should watch."""
        files = []
        if self.keystore_location is not None:
            files.append((self.key(KEYSTORE_LOCATION), self.keystore_location))
        if self.truststore_location is not None:
            files.append((self.key(TRUSTSTORE_LOCATION), self.truststore_location))
        return tuple(files)


# --- parsing ------------------------------------------------------------------------------


def parse_tls_settings(get: Callable[[str], str | None], *, key_prefix: str = "", for_server: bool = True) -> TlsSettings:
    """Validate the ``ssl.*`` keys; ``get(key)`` returns the effective value or None.

    ``for_server`` requires a keystore (a TLS listener needs a certificate); the proxy's
    own upstream client may go without one.
    """

    def key(name: str) -> str:
        return key_prefix + name

    def text(name: str) -> str | None:  # Kafka trims STRING values; "" counts as unset
        value = get(name)
        if value is None:
            return None
        value = value.strip()
        return value or None

    def password(name: str) -> str | None:  # PASSWORD values are not trimmed
        value = get(name)
        return value if value else None

    def store_type(name: str) -> StoreType:
        value = text(name)
        if value is None:
            return "PKCS12"
        upper = value.upper()
        if upper in ("PEM", "PKCS12"):
            return cast(StoreType, upper)
        if upper in ("JKS", "JCEKS"):
            reason = f"{upper} stores are not supported; convert with `keytool -importkeystore -deststoretype PKCS12` or use PEM"
        else:
            reason = "unknown store type; supported are PEM and PKCS12"
        raise ConfigError(key(name), value, reason)

    keystore_type = store_type(KEYSTORE_TYPE)
    keystore_location = text(KEYSTORE_LOCATION)
    keystore_password = password(KEYSTORE_PASSWORD)
    key_password = password(KEY_PASSWORD)
    chain = password(KEYSTORE_CERTIFICATE_CHAIN)
    inline_key = password(KEYSTORE_KEY)
    # Kafka's consistency rules for the keystore keys.
    if inline_key is not None:
        if keystore_type != "PEM":
            raise ConfigError(key(KEYSTORE_KEY), HIDDEN, f"an inline private key needs {key(KEYSTORE_TYPE)}=PEM, not {keystore_type}")
        if chain is None:
            raise ConfigError(key(KEYSTORE_CERTIFICATE_CHAIN), None, f"required when {key(KEYSTORE_KEY)} is set")
        if keystore_location is not None:
            raise ConfigError(key(KEYSTORE_LOCATION), keystore_location, f"cannot be combined with {key(KEYSTORE_KEY)}")
        if keystore_password is not None:
            raise ConfigError(
                key(KEYSTORE_PASSWORD), HIDDEN, f"not used with an inline PEM key; set {key(KEY_PASSWORD)} for an encrypted key"
            )
    elif chain is not None:
        raise ConfigError(key(KEYSTORE_KEY), None, f"required when {key(KEYSTORE_CERTIFICATE_CHAIN)} is set")
    elif keystore_type == "PKCS12":
        if keystore_location is None and keystore_password is not None:
            raise ConfigError(key(KEYSTORE_LOCATION), None, f"required when {key(KEYSTORE_PASSWORD)} is set")
        if keystore_location is not None and keystore_password is None:
            raise ConfigError(key(KEYSTORE_PASSWORD), None, f"a PKCS12 keystore ({keystore_location}) needs its password")
    if for_server and keystore_location is None and inline_key is None:
        raise ConfigError(
            key(KEYSTORE_LOCATION),
            None,
            f"a TLS server needs a keystore ({key(KEYSTORE_LOCATION)}, or {key(KEYSTORE_KEY)} with {key(KEYSTORE_CERTIFICATE_CHAIN)})",
        )

    truststore_type = store_type(TRUSTSTORE_TYPE)
    truststore_location = text(TRUSTSTORE_LOCATION)
    truststore_password = password(TRUSTSTORE_PASSWORD)
    trusted = password(TRUSTSTORE_CERTIFICATES)
    if trusted is not None:
        if truststore_type != "PEM":
            raise ConfigError(
                key(TRUSTSTORE_CERTIFICATES), HIDDEN, f"inline certificates need {key(TRUSTSTORE_TYPE)}=PEM, not {truststore_type}"
            )
        if truststore_location is not None:
            raise ConfigError(key(TRUSTSTORE_LOCATION), truststore_location, f"cannot be combined with {key(TRUSTSTORE_CERTIFICATES)}")
    if truststore_password is not None:
        if truststore_type == "PEM":
            raise ConfigError(key(TRUSTSTORE_PASSWORD), HIDDEN, "a PEM truststore has no password")
        if truststore_location is None:
            raise ConfigError(key(TRUSTSTORE_LOCATION), None, f"required when {key(TRUSTSTORE_PASSWORD)} is set")

    raw_auth = text(CLIENT_AUTH)
    client_auth = (raw_auth or "none").lower()
    if client_auth not in _CLIENT_AUTH_MODES:
        raise ConfigError(key(CLIENT_AUTH), raw_auth, "unknown client authentication mode; expected none, requested or required")

    protocols = _parse_protocols(key(ENABLED_PROTOCOLS), get(ENABLED_PROTOCOLS))
    suites = _parse_cipher_suites(key(CIPHER_SUITES), get(CIPHER_SUITES), protocols)

    endpoint = get(ENDPOINT_IDENTIFICATION)
    if endpoint is None or endpoint.strip().lower() == "https":
        endpoint_identification = True
    elif not endpoint.strip():
        endpoint_identification = False
    else:
        raise ConfigError(
            key(ENDPOINT_IDENTIFICATION), endpoint, "unsupported algorithm; use https, or an empty value to turn host name verification off"
        )

    return TlsSettings(
        keystore_type=keystore_type,
        keystore_location=keystore_location,
        keystore_password=keystore_password,
        key_password=key_password,
        keystore_certificate_chain=chain,
        keystore_key=inline_key,
        truststore_type=truststore_type,
        truststore_location=truststore_location,
        truststore_password=truststore_password,
        truststore_certificates=trusted,
        client_auth=cast(ClientAuth, client_auth),
        enabled_protocols=protocols,
        cipher_suites=suites,
        endpoint_identification=endpoint_identification,
        key_prefix=key_prefix,
    )


def _split_list(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def _parse_protocols(key: str, value: str | None) -> tuple[str, ...]:
    names = _split_list(value)
    if not names:
        return TlsSettings.enabled_protocols
    protocols: list[str] = []
    for name in names:
        upper = name.upper()
        if upper in _INSECURE_PROTOCOLS:
            raise ConfigError(key, value, f"{name} is insecure and unsupported; use TLSv1.2 and/or TLSv1.3")
        if upper not in _PROTOCOLS:
            raise ConfigError(key, value, f"unknown protocol {name!r}; supported are TLSv1.2 and TLSv1.3")
        if _PROTOCOLS[upper] not in protocols:
            protocols.append(_PROTOCOLS[upper])
    return tuple(protocols)


def _parse_cipher_suites(key: str, value: str | None, protocols: tuple[str, ...]) -> tuple[str, ...]:
    suites = tuple(dict.fromkeys(_split_list(value)))
    if not suites:
        return ()
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    for suite in suites:
        if suite in _TLS13_SUITES:
            continue
        if suite not in _TLS12_SUITES:
            raise ConfigError(
                key, value, f"unknown or unsupported cipher suite {suite!r}; use IANA names such as TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
            )
        try:
            probe.set_ciphers(_TLS12_SUITES[suite])
        except ssl.SSLError:
            raise ConfigError(key, value, f"cipher suite {suite} is not available in this OpenSSL build ({ssl.OPENSSL_VERSION})") from None
    has12 = any(s in _TLS12_SUITES for s in suites)
    has13 = any(s in _TLS13_SUITES for s in suites)
    if not ((has12 and "TLSv1.2" in protocols) or (has13 and "TLSv1.3" in protocols)):
        raise ConfigError(key, value, f"none of these cipher suites can be used with the enabled protocols {', '.join(protocols)}")
    return suites
