"""SASL/GSSAPI end to end against a real MIT KDC (tests/kdc.py, one per session): python-gssapi clients log in to the
proxy's listener with tickets from the KDC, the principal reaching the controller is the rules' short name, and the
audit names both; bad tokens, replays, unknown services and bad settings fail as Kafka fails them. The proxy's own
GSSAPI login is tested against a Kafka node (tests/interop/test_gssapi_kafka.py)."""

import json
import socket
import time
from pathlib import Path
from typing import Any

import gssapi
import pytest
import trio
from kio.schema.errors import ErrorCode

from devkit import wire
from envelope.apis import ApiKey
from envelope_proxy.embedded import EmbeddedStack, proxy_properties, start_stack
from proxy.config import parse_proxy_config
from proxy.net.sasl.client import LoginFailed
from proxy.net.sasl.gssapi_mechanism import GSSAPI, NO_SECURITY_LAYER, GssapiServer
from proxy.properties import ConfigError, Properties
from tests.conftest import BRIEF_TICKET_SECONDS, OTHER_SERVICE, SERVICE, SERVICE_HOST, Realm
from tests.integration.conftest import audit_records

KRB5 = "com.sun.security.auth.module.Krb5LoginModule"
READ_ROUNDING_MS = 1000  # a context's lifetime is given in whole seconds
RULES = "RULE:[2:$1-$2@$0]([^@]*@ENVELOPE\\.TEST)s/@.*//, DEFAULT"
TOPIC = {"num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}


def server_jaas(realm: Realm) -> str:
    return f'{KRB5} required useKeyTab=true storeKey=true keyTab="{realm.service_keytab}" principal="{realm.service_principal}";'


def gssapi_overrides(realm: Realm) -> dict[str, str]:
    return {
        "listener.name.client.sasl.enabled.mechanisms": "GSSAPI,PLAIN",
        "listener.name.client.gssapi.sasl.jaas.config": server_jaas(realm),
        "sasl.kerberos.service.name": SERVICE,
        "sasl.kerberos.principal.to.local.rules": RULES,
    }


@pytest.fixture
async def gssapi_stack(nursery: Any, tmp_path: Path, kerberos_realm: Realm) -> EmbeddedStack:
    return await start_stack(
        nursery,
        tmp_path / "audit",
        proxy_overrides=gssapi_overrides(kerberos_realm),
        controller_overrides={"super.users": "User:proxy;User:admin;User:alice;User:bob-admin"},
    )


def client_context(realm: Realm, who: str, service: str = f"{SERVICE}@{SERVICE_HOST}", *, mutual: bool = True) -> gssapi.SecurityContext:
    store = {"client_keytab": str(realm.keytabs[who]), "ccache": f"MEMORY:test-{who}"}
    creds = gssapi.Credentials(name=gssapi.Name(realm.principals[who], gssapi.NameType.kerberos_principal), usage="initiate", store=store)
    target = gssapi.Name(service, gssapi.NameType.hostbased_service)
    flags = gssapi.RequirementFlag.mutual_authentication if mutual else gssapi.RequirementFlag.out_of_sequence_detection
    return gssapi.SecurityContext(name=target, creds=creds, usage="initiate", flags=flags)


class Login:
    """One client's SASL/GSSAPI exchange over a raw socket, token by token, recording what it sent."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.correlation = 1
        self.sent: list[bytes] = []

    def handshake(self) -> int:
        self.correlation += 1
        return int(wire.call(self.sock, ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"}, self.correlation).error_code)

    def send(self, token: bytes) -> Any:
        self.sent.append(token)
        self.correlation += 1
        return wire.call(self.sock, ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token}, self.correlation)

    def login(self, context: gssapi.SecurityContext, authzid: bytes | None = None) -> Any:
        """The whole exchange as RFC 4752 has it (the context, then the wrapped negotiation); the last answer."""
        assert self.handshake() == 0
        answer = self.send(context.step() or b"")
        while not context.complete and answer.error_code == 0:
            # the last step takes the server's mutual-authentication token; the empty token after it asks for the offer
            answer = self.send(context.step(bytes(answer.auth_bytes)) or b"")
        if answer.error_code != 0:
            return answer
        layers = context.unwrap(bytes(answer.auth_bytes)).message
        assert layers[0] & NO_SECURITY_LAYER
        name = str(context.initiator_name).encode() if authzid is None else authzid
        return self.send(context.wrap(bytes([NO_SECURITY_LAYER, 0, 0, 0]) + name, encrypt=False).message)


def create_topic(sock: socket.socket, name: str, correlation_id: int = 100) -> int:
    body = wire.call(sock, ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": name, **TOPIC}], "timeout": 5000, "validate_only": False}, correlation_id)
    return int(body.topics[0].error_code)


async def test_a_kerberos_client_creates_a_topic_as_its_short_name(gssapi_stack: EmbeddedStack, kerberos_realm: Realm, tmp_path: Path) -> None:
    def work() -> tuple[int, int]:
        with wire.connect(gssapi_stack.sasl_address) as sock:
            answer = Login(sock).login(client_context(kerberos_realm, "alice"))
            return int(answer.error_code), create_topic(sock, "kerberos-topic")

    assert await trio.to_thread.run_sync(work) == (0, 0)
    seen = [(c.api, c.principal, c.resource, c.error_code) for c in gssapi_stack.controller.image.changes]
    assert ("CreateTopics", "User:alice", "topic:kerberos-topic", 0) in seen
    records = audit_records(tmp_path / "audit")
    authenticated = next(r for r in records if r["data"]["stage"] == "authenticated")
    assert authenticated["data"]["authenticationInfo"]["principal"] == "User:alice"
    assert authenticated["data"]["authenticationInfo"]["mechanism"] == "GSSAPI"
    assert authenticated["data"]["authenticationInfo"]["authenticationId"] == kerberos_realm.principals["alice"]


async def test_without_mutual_authentication_the_offer_follows_the_first_token(gssapi_stack: EmbeddedStack, kerberos_realm: Realm) -> None:
    def work() -> tuple[int, int, int]:
        with wire.connect(gssapi_stack.sasl_address) as sock:
            login = Login(sock)
            answer = login.login(client_context(kerberos_realm, "alice", mutual=False))
            return int(answer.error_code), len(login.sent), create_topic(sock, "no-mutual-topic")

    assert await trio.to_thread.run_sync(work) == (0, 2, 0)  # the AP-REQ, then the security-layer answer


async def test_a_principal_the_rules_rename_is_audited_with_both_names(gssapi_stack: EmbeddedStack, kerberos_realm: Realm, tmp_path: Path) -> None:
    def work() -> tuple[int, int]:
        with wire.connect(gssapi_stack.sasl_address) as sock:
            answer = Login(sock).login(client_context(kerberos_realm, "bob-admin"))
            return int(answer.error_code), create_topic(sock, "renamed-topic")

    assert await trio.to_thread.run_sync(work) == (0, 0)
    seen = [(c.api, c.principal, c.resource) for c in gssapi_stack.controller.image.changes]
    assert ("CreateTopics", "User:bob-admin", "topic:renamed-topic") in seen
    intent = next(r for r in audit_records(tmp_path / "audit") if r["subject"] == "topic:renamed-topic" and r["data"]["stage"] == "intent")
    assert intent["data"]["authenticationInfo"]["principal"] == "User:bob-admin"
    assert intent["data"]["authenticationInfo"]["authenticationId"] == "bob/admin@ENVELOPE.TEST"


async def test_the_session_is_capped_by_the_ticket_lifetime(kerberos_realm: Realm) -> None:
    props = {**proxy_properties(9093, Path("/nonexistent")), **gssapi_overrides(kerberos_realm)}
    (listener, *_) = parse_proxy_config(props).listeners
    server = listener.sasl_servers["GSSAPI"]
    assert isinstance(server, GssapiServer)
    exchange = server.exchange("GSSAPI")
    context = client_context(kerberos_realm, "alice")
    exchange.evaluate(context.step() or b"")
    assert exchange.authentication_id == kerberos_realm.principals["alice"]
    expiry = exchange.credential_expiry_ms
    assert expiry is not None
    # the KDC's tickets last an hour (plus krb5's clock-skew allowance, at most 5 minutes)
    assert time.time() * 1000 + 3500_000 < expiry <= time.time() * 1000 + 3900_000 + 1000


def _failed_login(stack: EmbeddedStack, steps: Any) -> tuple[int, bool]:
    with wire.connect(stack.sasl_address) as sock:
        login = Login(sock)
        assert login.handshake() == 0
        answer = steps(login)
        return int(answer.error_code), wire.is_closed(sock)


async def test_garbage_tokens_fail_the_login_and_close(gssapi_stack: EmbeddedStack, tmp_path: Path) -> None:
    code, closed = await trio.to_thread.run_sync(_failed_login, gssapi_stack, lambda login: login.send(b"\x60\x03garbage"))
    assert (code, closed) == (ErrorCode.sasl_authentication_failed, True)
    failed = [r for r in audit_records(tmp_path / "audit") if r["data"]["stage"] == "authentication-failed"]
    assert failed and failed[0]["data"]["authenticationInfo"]["mechanism"] == "GSSAPI"


async def test_a_ticket_for_another_service_fails(gssapi_stack: EmbeddedStack, kerberos_realm: Realm) -> None:
    context = client_context(kerberos_realm, "alice", service=f"{OTHER_SERVICE}@{SERVICE_HOST}")
    code, closed = await trio.to_thread.run_sync(_failed_login, gssapi_stack, lambda login: login.send(context.step() or b""))
    assert (code, closed) == (ErrorCode.sasl_authentication_failed, True)


async def test_an_authorization_id_other_than_the_authenticated_name_is_refused(gssapi_stack: EmbeddedStack, kerberos_realm: Realm) -> None:
    def work() -> int:
        with wire.connect(gssapi_stack.sasl_address) as sock:
            return int(Login(sock).login(client_context(kerberos_realm, "carol"), authzid=b"alice@ENVELOPE.TEST").error_code)

    assert await trio.to_thread.run_sync(work) == ErrorCode.sasl_authentication_failed


async def test_replaying_a_whole_login_fails(gssapi_stack: EmbeddedStack, kerberos_realm: Realm) -> None:
    """krb5's replay cache (KRB5RCACHEDIR) knows the first token: the replayed login fails at once. A replay is one of
    Kafka's retriable Kerberos errors, which its SaslServerAuthenticator handles as an I/O error: the connection
    closes with no answer (not SASL_AUTHENTICATION_FAILED), and the failure is still audited."""

    def work() -> tuple[str, int]:
        with wire.connect(gssapi_stack.sasl_address) as sock:
            original = Login(sock)
            assert int(original.login(client_context(kerberos_realm, "alice")).error_code) == 0
        with wire.connect(gssapi_stack.sasl_address) as sock:
            replay = Login(sock)
            assert replay.handshake() == 0
            for step, token in enumerate(original.sent):
                try:
                    code = int(replay.send(token).error_code)
                except (ConnectionError, OSError):
                    return "closed unanswered", step
                if code != 0:
                    return f"answered {code}", step
            return "logged in", len(original.sent)

    outcome, step = await trio.to_thread.run_sync(work)
    assert (outcome, step) == ("closed unanswered", 0)
    with trio.fail_after(10):  # the record is committed as the connection ends; bounded wait for it
        while not [r for r in audit_records(gssapi_stack.proxy_config.audit_log_dir) if r["data"].get("stage") == "authentication-failed"]:
            await trio.sleep(0.05)


def test_bad_settings_are_configuration_errors_naming_the_key(kerberos_realm: Realm, tmp_path: Path) -> None:
    base = {**proxy_properties(9093, tmp_path), **gssapi_overrides(kerberos_realm)}
    key = "listener.name.client.gssapi.sasl.jaas.config"
    missing = base | {key: server_jaas(kerberos_realm).replace(str(kerberos_realm.service_keytab), str(tmp_path / "none.keytab"))}
    with pytest.raises(ConfigError, match="keyTab is not a readable file") as raised:
        parse_proxy_config(missing)
    assert raised.value.key == key
    wrong_principal = base | {key: server_jaas(kerberos_realm).replace(kerberos_realm.service_principal, "nobody/localhost@ENVELOPE.TEST")}
    with pytest.raises(ConfigError, match=r"no key for nobody/localhost@ENVELOPE\.TEST") as raised:
        parse_proxy_config(wrong_principal)
    assert raised.value.key == key
    with pytest.raises(ConfigError, match="storeKey=true"):
        parse_proxy_config(base | {key: server_jaas(kerberos_realm).replace("storeKey=true", "storeKey=false")})
    with pytest.raises(ConfigError, match="Conflicting serviceName") as raised:
        parse_proxy_config(base | {key: server_jaas(kerberos_realm).replace(";", ' serviceName="other";')})
    assert raised.value.key == "sasl.kerberos.service.name"
    with pytest.raises(ConfigError, match="Invalid rule") as raised:
        parse_proxy_config(base | {"sasl.kerberos.principal.to.local.rules": "RULE:[1:$1]/Q"})
    assert raised.value.key == "sasl.kerberos.principal.to.local.rules"


async def test_the_proxy_logs_in_to_the_controller_with_its_keytab(nursery: Any, tmp_path: Path, kerberos_realm: Realm) -> None:
    """The embedded controller serves GSSAPI with the same module; the proxy asks the KDC for a ticket to kafka@127.0.0.1
    with its own keytab, and the controller sees User:proxy forwarding User:alice."""
    realm = kerberos_realm
    controller_jaas = server_jaas(realm).replace(realm.service_principal, realm.kdc.principal(f"{SERVICE}/127.0.0.1"))
    proxy_jaas = f'{KRB5} required useKeyTab=true keyTab="{realm.keytabs["proxy"]}" principal="{realm.principals["proxy"]}";'
    stack = await start_stack(
        nursery,
        tmp_path / "audit",
        proxy_overrides={
            **gssapi_overrides(realm),
            "sasl.mechanism.controller.protocol": "GSSAPI",
            "listener.name.controller.gssapi.sasl.jaas.config": proxy_jaas,
        },
        controller_overrides={
            "sasl.enabled.mechanisms": "GSSAPI",
            "listener.name.controller.gssapi.sasl.jaas.config": controller_jaas,
            "sasl.kerberos.service.name": SERVICE,
            "super.users": "User:proxy;User:alice",
        },
    )

    def work() -> tuple[int, int]:
        with wire.connect(stack.sasl_address) as sock:
            answer = Login(sock).login(client_context(realm, "alice"))
            return int(answer.error_code), create_topic(sock, "upstream-kerberos")

    assert await trio.to_thread.run_sync(work) == (0, 0)
    seen = [(c.api, c.principal, c.forwarded_by, c.resource) for c in stack.controller.image.changes]
    assert ("CreateTopics", "User:alice", "User:proxy", "topic:upstream-kerberos") in seen


async def test_a_proxy_principal_without_a_key_fails_its_upstream_login(kerberos_realm: Realm) -> None:
    realm = kerberos_realm
    # carol's name with alice's keytab (the login's memory cache holds no ticket of carol's: no test logs in as her with it)
    jaas = f'{KRB5} required useKeyTab=true keyTab="{realm.keytabs["alice"]}" principal="{realm.principals["carol"]}";'
    login = GSSAPI.client(Properties({"listener.name.controller.gssapi.sasl.jaas.config": jaas, "sasl.kerberos.service.name": SERVICE}), "CONTROLLER", "GSSAPI")

    with pytest.raises(LoginFailed, match=r"GSSAPI login of carol@ENVELOPE\.TEST"):
        await login.exchange("127.0.0.1")


async def test_an_expired_ticket_fails_and_the_proxys_own_login_gets_a_fresh_one(
    gssapi_stack: EmbeddedStack, kerberos_realm: Realm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """krb5 accepts a ticket until its end time plus `clockskew`: this test's krb5.conf allows 3 s, and `brief`'s tickets
    last 4 s. A login whose ticket has expired is refused; the GSSAPI login the proxy uses upstream, asked again after
    expiry, takes a fresh ticket from its keytab and succeeds."""
    realm, skew = kerberos_realm, 3
    short_skew = tmp_path / "krb5-short-skew.conf"
    short_skew.write_text(realm.kdc.krb5_conf.read_text().replace("[libdefaults]\n", f"[libdefaults]\n clockskew = {skew}\n"))
    monkeypatch.setenv("KRB5_CONFIG", str(short_skew))
    jaas = f'{KRB5} required useKeyTab=true keyTab="{realm.keytabs["brief"]}" principal="{realm.principals["brief"]}";'
    login = GSSAPI.client(Properties({"listener.name.controller.gssapi.sasl.jaas.config": jaas, "sasl.kerberos.service.name": SERVICE}), "CONTROLLER", "GSSAPI")

    def attempt(exchange: Any) -> int:
        with wire.connect(gssapi_stack.sasl_address) as sock:
            raw = Login(sock)
            assert raw.handshake() == 0
            token: bytes | None = exchange.initial()
            while token is not None:
                answer = raw.send(token)
                if answer.error_code != 0:
                    return int(answer.error_code)
                token = exchange.respond(bytes(answer.auth_bytes))
            return 0

    first = await login.exchange(SERVICE_HOST)
    stale = await login.exchange(SERVICE_HOST)  # made now, with the same ticket, presented after it expired
    issued = time.monotonic()
    assert await trio.to_thread.run_sync(attempt, first) == 0
    await trio.sleep(max(0.0, issued + BRIEF_TICKET_SECONDS + skew + 1.5 - time.monotonic()))
    with caplog.at_level("INFO", logger="proxy.net.login"):
        assert await trio.to_thread.run_sync(attempt, stale) == ErrorCode.sasl_authentication_failed
    assert "Ticket expired" in caplog.text
    fresh = await login.exchange(SERVICE_HOST)
    assert await trio.to_thread.run_sync(attempt, fresh) == 0


async def test_an_unreachable_kdc_fails_the_proxys_login_without_stalling_the_event_loop(
    kerberos_realm: Realm, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    realm = kerberos_realm
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    port = closed.getsockname()[1]
    unreachable = tmp_path / "krb5-no-kdc.conf"
    unreachable.write_text(realm.kdc.krb5_conf.read_text().replace(f"127.0.0.1:{realm.kdc.port}", f"127.0.0.1:{port}"))
    monkeypatch.setenv("KRB5_CONFIG", str(unreachable))
    # bob/admin: no GSSAPI login of the proxy's kind has cached a ticket of his in this process
    jaas = f'{KRB5} required useKeyTab=true keyTab="{realm.keytabs["bob-admin"]}" principal="{realm.principals["bob-admin"]}";'
    login = GSSAPI.client(Properties({"listener.name.controller.gssapi.sasl.jaas.config": jaas, "sasl.kerberos.service.name": SERVICE}), "CONTROLLER", "GSSAPI")
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await trio.sleep(0.001)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(tick)
            with trio.fail_after(60), pytest.raises(LoginFailed, match="Cannot contact any KDC"):
                try:
                    await login.exchange(SERVICE_HOST)
                finally:
                    during = ticks  # 0 if the exchange had blocked the loop: `tick` had not run yet
            nursery.cancel_scope.cancel()
    finally:
        closed.close()
    assert during > 0  # the event loop ran while krb5 tried the KDC in a worker thread


async def test_the_proxys_own_login_renews_its_ticket_past_half_its_lifetime(kerberos_realm: Realm) -> None:
    """krb5 replaces a ticket taken from a keytab once half its lifetime has passed: a login after that presents a
    new ticket, ending later, while the old one is still valid."""
    realm = kerberos_realm
    props = {**proxy_properties(9093, Path("/nonexistent")), **gssapi_overrides(realm)}
    (listener, *_) = parse_proxy_config(props).listeners
    server = listener.sasl_servers["GSSAPI"]
    assert isinstance(server, GssapiServer)
    jaas = f'{KRB5} required useKeyTab=true keyTab="{realm.keytabs["renewing"]}" principal="{realm.principals["renewing"]}";'
    login = GSSAPI.client(Properties({"listener.name.controller.gssapi.sasl.jaas.config": jaas, "sasl.kerberos.service.name": SERVICE}), "CONTROLLER", "GSSAPI")

    async def ticket_end() -> int:
        exchange = server.exchange("GSSAPI")
        exchange.evaluate((await login.exchange(SERVICE_HOST)).initial())
        assert exchange.credential_expiry_ms is not None
        return exchange.credential_expiry_ms

    first = await ticket_end()
    issued = time.monotonic()
    # A ticket's end is read as now + the context's lifetime in whole seconds: a reading is up to a second early.
    # So the same ticket reads within a second of `first`, at most its end; a ticket taken after 0.6 of the first's
    # lifetime ends 0.6 of a lifetime later and reads at least that less a second later (1.4 s for a 4 s ticket).
    assert await ticket_end() == pytest.approx(first, abs=READ_ROUNDING_MS)
    await trio.sleep(max(0.0, issued + BRIEF_TICKET_SECONDS * 0.6 - time.monotonic()))
    assert BRIEF_TICKET_SECONDS * 0.6 * 1000 - READ_ROUNDING_MS > READ_ROUNDING_MS  # the two cases do not overlap
    assert await ticket_end() > first + READ_ROUNDING_MS


def test_check_config_shows_the_listeners_kerberos_settings(kerberos_realm: Realm, tmp_path: Path) -> None:
    realm = kerberos_realm
    jaas = f'{KRB5} required useKeyTab=true keyTab="{realm.keytabs["proxy"]}" principal="{realm.principals["proxy"]}";'
    props = {
        **proxy_properties(9093, tmp_path),
        **gssapi_overrides(realm),
        "sasl.mechanism.controller.protocol": "GSSAPI",
        "listener.name.controller.gssapi.sasl.jaas.config": jaas,
    }
    config = parse_proxy_config(props)
    shown = json.loads(json.dumps(config.effective()))
    client = next(listener for listener in shown["listeners"] if listener.get("gssapi.principal"))
    assert client["gssapi.principal"] == realm.service_principal
    assert client["gssapi.keyTab"] == str(realm.service_keytab)
    assert client["gssapi.service.name"] == SERVICE
    assert client["gssapi.sasl.kerberos.principal.to.local.rules"] == "RULE:[2:$1-$2@$0]([^@]*@ENVELOPE\\.TEST)s/@.*//, DEFAULT"
    assert config.upstream.login is not None and config.upstream.login.user == "proxy"
    assert realm.principals["proxy"] in json.dumps(shown)


async def test_a_kerberos_session_expires_and_re_authenticates_with_a_new_context(nursery: Any, tmp_path: Path, kerberos_realm: Realm) -> None:
    """KIP-368 with GSSAPI: connections.max.reauth.ms (shorter than the ticket) is the session's lifetime; the client
    logs in again on its connection with a fresh GSS context and goes on; another principal may not take it over."""
    overrides = {**gssapi_overrides(kerberos_realm), "listener.name.client.gssapi.connections.max.reauth.ms": "1500"}
    stack = await start_stack(nursery, tmp_path / "audit", proxy_overrides=overrides, controller_overrides={"super.users": "User:proxy;User:alice"})

    def work() -> tuple[float, float, int, Any]:
        with wire.connect(stack.sasl_address) as sock:
            login = Login(sock)
            first = login.login(client_context(kerberos_realm, "alice"))
            time.sleep(1.1)
            renewed = login.login(client_context(kerberos_realm, "alice"))
            time.sleep(1.0)  # past the first session's end
            created = create_topic(sock, "renewed-kerberos-topic")
            time.sleep(1.1)
            changed = login.login(client_context(kerberos_realm, "carol"))
            return first.session_lifetime.total_seconds(), renewed.session_lifetime.total_seconds(), created, changed

    first, renewed, created, changed = await trio.to_thread.run_sync(work)
    assert first == renewed == 1.5
    assert created == 0
    assert int(changed.error_code) == 58 and changed.error_message.startswith("Cannot change principals during re-authentication from User.alice")
    stages = [r["data"]["stage"] for r in audit_records(tmp_path / "audit") if r["data"]["methodName"] == "kafka.Connection"]
    assert stages.count("reauthenticated") == 1 and "authentication-failed" in stages
