"""GSSAPI tokens that are not steps of a login, fed to the SASL machine with the session's KDC's service key: each fails
as Kafka 4.3.1 fails it (SASL_AUTHENTICATION_FAILED with its generic message, then the connection closes after the
failed-login delay), as tests/interop/test_hostile_sasl_kafka.py compares with a real node."""

from pathlib import Path
from typing import Any

import pytest

from devkit import wire
from envelope.apis import ApiKey
from envelope.codec import decode_response_body
from proxy.net.refusals import CAUSE_AUTHENTICATION_FAILED
from proxy.net.sasl import gssapi_mechanism
from proxy.net.sasl.machine import Close, LoginFailed, Reply, SaslMachine
from proxy.net.settings import ListenerConfig, parse_listeners
from proxy.properties import Properties
from tests.conftest import SERVICE, Realm

GENERIC = "Authentication failed during authentication due to invalid credentials with SASL mechanism GSSAPI"

pytestmark = pytest.mark.skipif(gssapi_mechanism.gssapi is None, reason="python-gssapi is not installed")


def _listener(realm: Realm) -> ListenerConfig:
    jaas = (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        f'keyTab="{realm.service_keytab}" principal="{realm.service_principal}";'
    )
    props = Properties(
        {
            "listeners": "CLIENT://127.0.0.1:0",
            "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "GSSAPI",
            "listener.name.client.gssapi.sasl.jaas.config": jaas,
            "sasl.kerberos.service.name": SERVICE,
        }
    )
    (listener,) = parse_listeners(props)
    return listener


def _failed_with_kafkas_answer(events: list[Any]) -> tuple[Any, ...]:
    assert [type(e) for e in events] == [LoginFailed, Reply, Close], events
    _, body = decode_response_body(36, 2, events[1].data)
    return int(body.error_code), body.error_message, bytes(body.auth_bytes), events[-1]


@pytest.mark.parametrize(
    "token",
    [b"", b"\x60", b"\x00alice\x00alice-secret", b"n,,n=alice,r=abc", b"n,,\x01auth=Bearer abc\x01\x01"],
    ids=["empty", "one byte of a GSS header", "PLAIN", "SCRAM client-first", "OAUTHBEARER client-first"],
)
def test_a_first_token_that_is_no_ap_req_fails_the_login(kerberos_realm: Realm, tmp_path: Path, token: bytes) -> None:
    machine = SaslMachine(_listener(kerberos_realm))
    machine.receive(wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"}))
    events = machine.receive(wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}))
    # The empty token used to be taken as a step (error 0, and the exchange waiting): krb5's acceptor answers it
    # with a SPNEGO hint and "continue needed", where the JDK's fails.
    assert _failed_with_kafkas_answer(events) == (58, GENERIC, b"", Close(CAUSE_AUTHENTICATION_FAILED, delayed=True))
    assert machine.done


def test_a_spnego_token_fails_the_login_as_the_jdks_kerberos_acceptor_fails_it(kerberos_realm: Realm, tmp_path: Path) -> None:
    """A SPNEGO-wrapped AP-REQ for the right service and from a real user: Kafka's GssKrb5Server takes Kerberos V5
    tokens only. The proxy's acceptor used to take SPNEGO too (krb5 offers every mechanism by default)."""
    import gssapi

    realm = kerberos_realm
    store = {"client_keytab": str(realm.keytabs["alice"]), "ccache": f"MEMORY:spnego-{tmp_path.name}"}
    creds = gssapi.Credentials(name=gssapi.Name(realm.principals["alice"], gssapi.NameType.kerberos_principal), usage="initiate", store=store)
    target = gssapi.Name(f"{SERVICE}@localhost", gssapi.NameType.hostbased_service)
    spnego = gssapi.Mechanism.from_sasl_name("SPNEGO")
    token = gssapi.SecurityContext(name=target, creds=creds, usage="initiate", mech=spnego).step()
    machine = SaslMachine(_listener(realm))
    machine.receive(wire.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"}))
    events = machine.receive(wire.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}))
    assert _failed_with_kafkas_answer(events) == (58, GENERIC, b"", Close(CAUSE_AUTHENTICATION_FAILED, delayed=True))
    assert (events[0].failure.reason or "").startswith("GSSAPI: ")  # krb5 finds no SPNEGO credentials to accept with
