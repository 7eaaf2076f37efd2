"""SASL/GSSAPI (Kerberos V5, RFC 4752): its settings, its server side and its client side, on MIT krb5 through
python-gssapi.

- Settings, as on a broker: the listener's Krb5LoginModule JAAS login with its keytab and
  service name (proxy/net/sasl/gssapi_keytab.py) and `sasl.kerberos.principal.to.local.rules`
  (proxy/net/sasl/kerberos_names.py), also under `listener.name.<l>.`.
- Server side, as Kafka's SASL server (the JDK's GssKrb5Server) does it: the GSS context
  with the login's principal as acceptor, then the security-layer negotiation, wrapped:
  the server offers "no security layer" (Kafka's default `sasl.qop=auth`), the client
  picks it and may name an authorization id, which must be its authenticated name.
  The principal is `User:<short name>`; the Kerberos name is kept for the audit
  (`authentication_id`), and the session may last as long as the ticket
  (`credential_expiry_ms`, the context's lifetime).
- Client side: the proxy's own login with the controller listener's Krb5LoginModule
  login (its keytab and principal), to the service `<service name>@<controller host>`.
  Every login acquires its credentials again, from the keytab into a memory cache of
  this process, so krb5 gets a fresh ticket when the one held is past its refresh time
  (half its lifetime) or expired: a link logging in again (KIP-368) never presents an
  expired ticket.

Blocking: accepting a context with a keytab is CPU work plus krb5's replay cache (a local
file); it never asks the KDC, so the server side runs on the event loop. The client side
asks the KDC (a ticket-granting and a service ticket), so `GssapiLogin.exchange` runs its
first step in a worker thread; the later steps are local.

python-gssapi is the optional `kerberos` extra (it has no wheel and builds against MIT krb5's
headers, so the container images leave it out): without it this module still loads, and a
listener or login that enables GSSAPI is a configuration error saying what to install.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import trio

try:
    import gssapi
    from gssapi.raw.misc import GSSError
except ImportError:  # the optional [kerberos] extra; Gssapi.server and .client refuse to configure without it
    gssapi = None  # type: ignore[assignment]
    GSSError = OSError  # type: ignore[misc,assignment]  # never raised: nothing here runs without python-gssapi

from proxy.net.sasl.client import ClientExchange, LoginFailed
from proxy.net.sasl.gssapi_keytab import NAME, KeytabLogin, keytab_login, setting
from proxy.net.sasl.kerberos_names import RULES_KEY, KerberosName, KerberosShortNamer, NoMatchingRule, split_rules
from proxy.net.sasl.mechanisms import STARTED_UNWATCHED, AuthenticationFailed, ServerMechanism, TaskStarted, jaas_login
from proxy.properties import ConfigError, Properties

log = logging.getLogger(__name__)

# RFC 4752 section 3.1: the security layers, one bit each in the first octet of the negotiation.
NO_SECURITY_LAYER = 0x01
_LAYER_MESSAGE_SIZE = 4

KRB5_ERROR_TABLE_BASE = -1765328384
"""MIT krb5's ERROR_TABLE_BASE_krb5: a minor status of base + n is Kerberos protocol error n."""
KRB5_ERROR_TABLE_SIZE = 128
RETRIABLE_KERBEROS_ERRORS = frozenset({21, 33, 34})
"""Kafka's KerberosError values with retriable=true: CLIENT_NOT_YET_VALID, TICKET_NOT_YET_VALID, REPLAY."""

_FAILED = f"Authentication failed during authentication due to invalid credentials with SASL mechanism {NAME}"
"""Kafka's message to the client for a failed GSSAPI login (the reason goes only to the log)."""


def default_realm() -> str:
    """krb5's default realm (krb5.conf `default_realm`), as the DEFAULT rule reads it; "" when there is none, as in
    Kafka."""
    try:
        name = gssapi.Name("default-realm-probe", gssapi.NameType.user).canonicalize(gssapi.MechType.kerberos)
    except GSSError:
        return ""
    _, _, realm = str(name).partition("@")
    return realm



# -- the server side ---------------------------------------------------------------------


class GssapiExchange:
    """One login: the GSS context, then the wrapped security-layer negotiation (RFC 4752 section 3.1)."""

    def __init__(self, acceptor: gssapi.Credentials, namer: KerberosShortNamer) -> None:
        self._context = gssapi.SecurityContext(creds=acceptor, usage="accept")
        self._namer = namer
        self._stage: Literal["context", "established", "offered", "done"] = "context"
        self.user: str | None = None
        self.authentication_id: str | None = None
        """The client's Kerberos name (alice/admin@REALM) once its context is established."""
        self.credential_expiry_ms: int | None = None
        self.token_authenticated = False  # a ticket is no delegation token

    @property
    def complete(self) -> bool:
        return self._stage == "done"

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._stage == "context":
                return self._accept(token)
            if self._stage == "established":
                if token:
                    raise AuthenticationFailed(_FAILED, "the client sent data where the security-layer negotiation starts")
                return self._offer()
            if self._stage == "offered":
                return self._choose(token)
        except GSSError as exc:
            # Kafka's SaslServerAuthenticator treats a retriable Kerberos error (KerberosError.retriable: a replay, a
            # ticket or client not yet valid) as an I/O error: the connection closes with no answer, so the client
            # may log in again. Every other failure is SASL_AUTHENTICATION_FAILED.
            retriable = _kerberos_code(exc) in RETRIABLE_KERBEROS_ERRORS
            raise AuthenticationFailed(_FAILED, f"GSSAPI: {_describe(exc)}", answered=not retriable) from None
        raise AuthenticationFailed(_FAILED, "GSSAPI takes no token after the login completed")

    def _accept(self, token: bytes) -> bytes:
        # Kafka 4.3.1 (the JDK's GssKrb5Server) fails a login whose first token is empty: SASL_AUTHENTICATION_FAILED
        # with its generic message, then the connection closes. MIT krb5 would answer it as a step ("continue
        # needed"), so it is refused before krb5 sees it.
        if not token:
            raise AuthenticationFailed(_FAILED, "the client's first GSSAPI token is empty")
        reply = self._context.step(token)
        if not self._context.complete:
            # The acceptor is Kerberos V5 alone (acceptor_credentials), whose context is made by the first token.
            raise AuthenticationFailed(_FAILED, "the client's first token did not establish a Kerberos context")
        self.authentication_id = str(self._context.initiator_name)
        lifetime = self._context.lifetime  # seconds the client's ticket is still valid
        self.credential_expiry_ms = int((time.time() + lifetime) * 1000)
        self._stage = "established"
        if not reply:
            return self._offer()  # no mutual-authentication token to send first: the offer goes now, as in the JDK
        return bytes(reply)

    def _offer(self) -> bytes:
        # Only "no security layer" is offered, so the maximum message size is 0 (RFC 4752: nothing would be wrapped).
        offer = bytes([NO_SECURITY_LAYER, 0, 0, 0])
        self._stage = "offered"
        return bytes(self._context.wrap(offer, encrypt=False).message)

    def _choose(self, token: bytes) -> bytes:
        answer = bytes(self._context.unwrap(token).message)
        if len(answer) < _LAYER_MESSAGE_SIZE:
            raise AuthenticationFailed(_FAILED, "the client's security-layer answer is shorter than 4 octets")
        if answer[0] != NO_SECURITY_LAYER:
            raise AuthenticationFailed(_FAILED, f"the client chose security layer {answer[0]:#04x}; only 0x01 (none) is offered")
        authenticated = self.authentication_id
        assert authenticated is not None
        try:
            authzid = answer[_LAYER_MESSAGE_SIZE:].decode("utf-8")
        except UnicodeDecodeError:
            raise AuthenticationFailed(_FAILED, "the authorization id is not UTF-8") from None
        if authzid and authzid != authenticated:
            message = "Authentication failed: Client requested an authorization id that is different from the authenticated one"
            raise AuthenticationFailed(message, f"{authenticated} asked to be authorized as {authzid[:256]!r}")
        try:
            self.user = self._namer.short_name(KerberosName.parse(authenticated))
        except (NoMatchingRule, ValueError) as exc:
            raise AuthenticationFailed(_FAILED, f"{RULES_KEY}: {exc}") from None
        self._stage = "done"
        log.debug("GSSAPI login of %s as User:%s", authenticated, self.user)
        return b""


def _kerberos_code(exc: GSSError) -> int | None:
    """The Kerberos error number (RFC 4120 section 7.5.9) behind a GSS failure, from MIT krb5's minor status."""
    minor = int(getattr(exc, "min_code", 0) or 0)
    minor -= 2**32 if minor >= 2**31 else 0  # python-gssapi gives OM_uint32; krb5's table is signed
    code = minor - KRB5_ERROR_TABLE_BASE
    return code if 0 <= code < KRB5_ERROR_TABLE_SIZE else None


def _describe(exc: GSSError) -> str:
    try:
        return str(exc.gen_message())
    except Exception:  # a message we cannot render must not hide the failure
        return type(exc).__name__


@dataclass(frozen=True, eq=False)
class GssapiServer:
    login: KeytabLogin
    namer: KerberosShortNamer
    acceptor: gssapi.Credentials = field(repr=False)

    def exchange(self, mechanism: str) -> GssapiExchange:
        return GssapiExchange(self.acceptor, self.namer)

    def attempted_user(self, mechanism: str, first_token: bytes) -> str | None:
        return None  # the client's name travels encrypted in the first token

    def effective(self) -> dict[str, object]:
        return {
            **{f"gssapi.{key}": value for key, value in self.login.effective().items()},
            f"gssapi.{RULES_KEY}": str(self.namer),
        }

    async def run(self, *, task_status: TaskStarted = STARTED_UNWATCHED) -> None:
        task_status.started()


def acceptor_credentials(login: KeytabLogin, key: str) -> gssapi.Credentials:
    """The service's key from its keytab, for the Kerberos V5 mechanism alone; ConfigError (naming `key`) when krb5
    cannot read it.

    Kafka's GSSAPI server (the JDK's GssKrb5Server) accepts Kerberos V5 tokens only: a SPNEGO token fails the login.
    With every mechanism krb5 offers, the acceptor would take SPNEGO too (and answer an empty token with a SPNEGO
    hint), so the credentials name Kerberos alone."""
    try:
        name = gssapi.Name(login.principal, gssapi.NameType.kerberos_principal)
        return gssapi.Credentials(name=name, usage="accept", store={"keytab": login.keytab}, mechs=[gssapi.MechType.kerberos])
    except GSSError as exc:
        raise ConfigError(key, login.keytab, f"{login.source}: no key for {login.principal} in keyTab: {_describe(exc)}") from None


# -- the client side: the proxy's own login -------------------------------------------------


class GssapiClient:
    """The client's side of one login, after its first token was made (`GssapiLogin.exchange`)."""

    def __init__(self, context: gssapi.SecurityContext, initial: bytes, authzid: str) -> None:
        self._context = context
        self._initial = initial
        self._authzid = authzid
        self._stage: Literal["context", "negotiating", "done"] = "context"

    def initial(self) -> bytes:
        return self._initial

    def respond(self, challenge: bytes) -> bytes | None:
        try:
            if self._stage == "context":
                if not self._context.complete:
                    token = self._context.step(challenge)
                    if not self._context.complete:
                        return token or b""
                self._stage = "negotiating"
                return b""  # the server speaks next: its security-layer offer
            if self._stage == "negotiating":
                offer = bytes(self._context.unwrap(challenge).message)
                if len(offer) < _LAYER_MESSAGE_SIZE or not offer[0] & NO_SECURITY_LAYER:
                    raise LoginFailed("the server does not offer to go without a security layer")
                self._stage = "done"
                answer = bytes([NO_SECURITY_LAYER, 0, 0, 0]) + self._authzid.encode()
                return bytes(self._context.wrap(answer, encrypt=False).message)
        except GSSError as exc:
            raise LoginFailed(f"GSSAPI: {_describe(exc)}") from None
        return None


@dataclass(frozen=True)
class GssapiLogin:
    """The proxy's login to the controllers with its keytab and principal."""

    login: KeytabLogin
    short_name: str | None = None
    """The proxy's name by the configured principal.to.local rules: what the controllers call it if theirs are the same
    (their own rules decide); None when no rule applies."""
    mechanism: str = NAME

    @property
    def user(self) -> str | None:
        return self.short_name

    def effective(self) -> dict[str, object]:
        return {f"gssapi.{key}": value for key, value in self.login.effective().items()}

    def _start(self, server_host: str) -> GssapiClient:
        login = self.login
        store: dict[bytes | str, bytes | str] = {"client_keytab": login.keytab, "ccache": f"MEMORY:envelope-proxy-{os.getpid()}-{login.principal}"}
        creds = gssapi.Credentials(name=gssapi.Name(login.principal, gssapi.NameType.kerberos_principal), usage="initiate", store=store)
        target = gssapi.Name(f"{login.service_name}@{server_host}", gssapi.NameType.hostbased_service)
        flags = gssapi.RequirementFlag.mutual_authentication | gssapi.RequirementFlag.out_of_sequence_detection
        context = gssapi.SecurityContext(name=target, creds=creds, usage="initiate", flags=flags)
        initial = context.step()
        return GssapiClient(context, initial or b"", str(creds.name))

    async def exchange(self, server_host: str) -> ClientExchange:
        try:
            # asks the KDC for tickets (from the keytab) when the ones held are old: off the event loop
            return await trio.to_thread.run_sync(self._start, server_host)
        except GSSError as exc:
            raise LoginFailed(f"GSSAPI login of {self.login.principal} to {self.login.service_name}@{server_host}: {_describe(exc)}") from None


# -- the settings ---------------------------------------------------------------------------


def short_namer(props: Properties, listener: str) -> KerberosShortNamer:
    key, text = setting(props, listener, RULES_KEY)
    try:
        return KerberosShortNamer.from_rules(split_rules(text), default_realm())
    except ValueError as exc:
        raise ConfigError(key, text, str(exc)) from None


class Gssapi:
    names = (NAME,)

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = environ

    def server(self, props: Properties, listener: str, enabled: tuple[str, ...]) -> GssapiServer:
        _require_gssapi(props.listener_key(listener, "sasl.enabled.mechanisms"))
        jaas = jaas_login(props, listener, NAME, role="server", environ=self._environ)
        login = keytab_login(props, listener, jaas, role="server")
        namer = short_namer(props, listener)
        return GssapiServer(login, namer, acceptor_credentials(login, jaas.key))

    def client(self, props: Properties, listener: str, mechanism: str) -> GssapiLogin:
        _require_gssapi("sasl.mechanism.controller.protocol")
        jaas = jaas_login(props, listener, NAME, role="client", environ=self._environ)
        login = keytab_login(props, listener, jaas, role="client")
        try:
            short_name: str | None = short_namer(props, listener).short_name(KerberosName.parse(login.principal))
        except NoMatchingRule:
            short_name = None
        return GssapiLogin(login, short_name)


def _require_gssapi(key: str) -> None:
    if gssapi is None:
        raise ConfigError(key, NAME, "python-gssapi is not installed: pip install 'kafka-envelope-proxy[kerberos]' (it builds against MIT krb5's libkrb5-dev)")


GSSAPI = Gssapi()

_CHECK_SERVER: type[ServerMechanism] = GssapiServer  # the registry's contract, checked by mypy

__all__ = [
    "GSSAPI",
    "NO_SECURITY_LAYER",
    "Gssapi",
    "GssapiClient",
    "GssapiExchange",
    "GssapiLogin",
    "GssapiServer",
    "acceptor_credentials",
    "default_realm",
    "short_namer",
]
