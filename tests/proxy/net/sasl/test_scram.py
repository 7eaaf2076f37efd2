"""SCRAM-SHA-256/512 server and client: RFC 7677 vector, round trips, and every refusal."""

import base64
import hashlib
import hmac
from collections.abc import Callable

import pytest

from proxy.net.sasl.scram import (
    MECHANISMS,
    ScramCredential,
    ScramError,
    escape_username,
    generic_failure_message,
    make_credential,
    unescape_username,
)
from proxy.net.sasl.scram_client import ScramClient
from proxy.net.sasl.scram_server import ScramServer
from proxy.net.sasl.token_cache import TokenCache, TokenInfo

# RFC 7677 section 3.
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
RFC_CLIENT_FINAL = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

SHA256 = "SCRAM-SHA-256"
GENERIC_256 = "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"


def rfc_credential() -> ScramCredential:
    return make_credential(SHA256, "pencil", iterations=4096, salt=RFC_SALT)


def users(mechanism: str, **passwords: str) -> Callable[[str], ScramCredential | None]:
    table = {name: make_credential(mechanism, password) for name, password in passwords.items()}
    return table.get


def rfc_server() -> ScramServer:
    return ScramServer(SHA256, {"user": rfc_credential()}.get, nonce=RFC_SERVER_NONCE)


def login(server: ScramServer, client: ScramClient) -> None:
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))


# --- RFC 7677 vector ------------------------------------------------------------------------------


def test_rfc7677_vector_through_the_server() -> None:
    server = rfc_server()
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not server.complete
    assert server.username is None
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete
    assert server.username == "user"


def test_rfc7677_vector_through_the_client() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first() == RFC_CLIENT_FIRST
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not client.complete
    client.verify(RFC_SERVER_FINAL)
    assert client.complete


def test_rfc7677_credential_keys() -> None:
    # Independent derivation straight from RFC 5802 section 3.
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", RFC_SALT, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    credential = rfc_credential()
    assert credential.stored_key == hashlib.sha256(client_key).digest()
    assert credential.server_key == hmac.new(salted, b"Server Key", "sha256").digest()
    assert credential.iterations == 4096
    assert credential.salt == RFC_SALT


# --- round trips ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_round_trip(mechanism: str) -> None:
    server = ScramServer(mechanism, users(mechanism, alice="alice-secret"))
    client = ScramClient(mechanism, "alice", "alice-secret")
    login(server, client)
    assert server.complete and client.complete
    assert server.username == "alice"


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_round_trip_with_high_iterations_and_unicode_password(mechanism: str) -> None:
    credential = make_credential(mechanism, "pässwörd ✓", iterations=16384)
    server = ScramServer(mechanism, {"bob": credential}.get)
    client = ScramClient(mechanism, "bob", "pässwörd ✓")
    login(server, client)
    assert server.username == "bob"


def test_sha512_keys_are_64_bytes() -> None:
    credential = make_credential("SCRAM-SHA-512", "x")
    assert len(credential.stored_key) == len(credential.server_key) == 64
    assert len(credential.salt) == 32


def test_generated_nonces_and_salts_differ() -> None:
    first = ScramServer(SHA256, users(SHA256, a="p")).evaluate(b"n,,n=a,r=abc")
    second = ScramServer(SHA256, users(SHA256, a="p")).evaluate(b"n,,n=a,r=abc")
    assert first != second
    server_nonce = first.split(b",")[0][len(b"r=abc") :]
    assert len(server_nonce) >= 32
    assert make_credential(SHA256, "p").salt != make_credential(SHA256, "p").salt


def test_credential_for_one_mechanism_does_not_work_for_the_other() -> None:
    server = ScramServer("SCRAM-SHA-512", {"alice": make_credential(SHA256, "pw")}.get)
    client = ScramClient("SCRAM-SHA-512", "alice", "pw")
    server_first = server.evaluate(client.first())
    with pytest.raises(ScramError) as info:
        server.evaluate(client.final(server_first))
    assert info.value.reason == "Invalid client credentials"


# --- refusals -------------------------------------------------------------------------------------


def test_wrong_password() -> None:
    server = ScramServer(SHA256, users(SHA256, alice="right"))
    client = ScramClient(SHA256, "alice", "wrong")
    server_first = server.evaluate(client.first())
    with pytest.raises(ScramError) as info:
        server.evaluate(client.final(server_first))
    assert str(info.value) == GENERIC_256
    assert info.value.error_message == GENERIC_256
    assert info.value.reason == "Invalid client credentials"
    assert not server.complete
    assert server.username is None


def test_unknown_user_fails_at_client_first_with_the_same_wire_message() -> None:
    server = ScramServer(SHA256, users(SHA256, alice="pw"))
    with pytest.raises(ScramError) as info:
        server.evaluate(b"n,,n=mallory,r=abcdef")
    assert str(info.value) == GENERIC_256
    assert info.value.reason == "Authentication failed: Invalid user credentials"
    assert not server.complete


def test_lookup_failure_is_an_authentication_failure() -> None:
    def broken(user: str) -> ScramCredential | None:
        raise OSError("disk gone")

    with pytest.raises(ScramError) as info:
        ScramServer(SHA256, broken).evaluate(b"n,,n=alice,r=abc")
    assert str(info.value) == GENERIC_256
    assert info.value.reason.startswith("Authentication failed: Credentials could not be obtained")


def test_credential_below_minimum_iterations_is_refused() -> None:
    weak = ScramCredential(salt=b"s", stored_key=b"k" * 32, server_key=b"k" * 32, iterations=1000)
    with pytest.raises(ScramError) as info:
        ScramServer(SHA256, {"alice": weak}.get).evaluate(b"n,,n=alice,r=abc")
    assert info.value.reason == "Iterations 1000 is less than the minimum 4096 for SCRAM-SHA-256"


def test_client_final_replayed_to_a_new_server_is_refused() -> None:
    lookup = {"user": rfc_credential()}.get
    first_server = ScramServer(SHA256, lookup, nonce=RFC_SERVER_NONCE)
    first_server.evaluate(RFC_CLIENT_FIRST)
    first_server.evaluate(RFC_CLIENT_FINAL)
    assert first_server.complete
    # An eavesdropper replays both client messages; the new server picks a fresh nonce.
    second_server = ScramServer(SHA256, lookup)
    second_server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError) as info:
        second_server.evaluate(RFC_CLIENT_FINAL)
    assert str(info.value) == GENERIC_256
    assert info.value.reason == "Invalid client nonce in the final client message."
    assert not second_server.complete


@pytest.mark.parametrize(
    "nonce",
    [
        "rOprNGfwEbeRWgbNEkqO",  # client nonce only
        "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k",  # server part truncated
        "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0X",  # extended
        "XOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",  # client part altered
    ],
)
def test_altered_nonce_is_refused(nonce: str) -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    final = RFC_CLIENT_FINAL.replace(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", b"r=" + nonce.encode())
    with pytest.raises(ScramError) as info:
        server.evaluate(final)
    assert info.value.reason == "Invalid client nonce in the final client message."


@pytest.mark.parametrize("binding", [b"y,,", b"n,a=user,", b"p=tls-unique,,", b""])
def test_another_channel_binding_fails_the_proof(binding: bytes) -> None:
    """The proof covers `c=`: changing it alone fails the login, with Kafka's generic message."""
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    final = RFC_CLIENT_FINAL.replace(b"c=biws", b"c=" + base64.b64encode(binding))
    with pytest.raises(ScramError) as info:
        server.evaluate(final)
    assert str(info.value) == GENERIC_256
    assert info.value.reason == "Invalid client credentials"
    assert info.value.answered


def test_a_y_header_with_an_n_binding_and_a_right_proof_is_accepted_as_kafka_accepts_it() -> None:
    """Kafka 4.3.1's ScramSaslServer does not compare `c=` with the gs2 header (tests/interop/test_hostile_sasl_kafka.py):
    the proof, which covers it, decides."""
    server = ScramServer(SHA256, users(SHA256, alice="pw"))
    client = ScramClient(SHA256, "alice", "pw")
    server_first = server.evaluate(b"y,," + client.first()[3:])
    client.verify(server.evaluate(client.final(server_first)))  # the client binds c=biws ('n,,')
    assert server.complete and server.username == "alice"


def test_y_flag_round_trip() -> None:
    credential = rfc_credential()
    server = ScramServer(SHA256, {"user": credential}.get, nonce="srv")
    server_first = server.evaluate(b"y,,n=user,r=cli")
    assert server_first == b"r=clisrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", RFC_SALT, 4096)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    without_proof = "c=" + base64.b64encode(b"y,,").decode() + ",r=clisrv"
    auth_message = f"n=user,r=cli,{server_first.decode()},{without_proof}".encode()
    signature = hmac.new(hashlib.sha256(client_key).digest(), auth_message, "sha256").digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    server.evaluate(f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    assert server.complete and server.username == "user"


def test_authzid_equal_to_the_user_is_accepted() -> None:
    credential = rfc_credential()
    server = ScramServer(SHA256, {"user": credential}.get, nonce="srv")
    assert server.evaluate(b"n,a=user,n=user,r=cli").startswith(b"r=clisrv,")


def test_authzid_mismatch_is_refused_with_kafkas_text() -> None:
    server = ScramServer(SHA256, users(SHA256, alice="pw", bob="pw"))
    with pytest.raises(ScramError) as info:
        server.evaluate(b"n,a=bob,n=alice,r=abc")
    # Kafka raises SaslAuthenticationException here, so this text does reach the client.
    assert str(info.value) == "Authentication failed: Client requested an authorization id that is different from username"
    assert not server.complete


def test_authzid_is_compared_after_unescaping() -> None:
    server = ScramServer(SHA256, users(SHA256, **{"a,b": "pw"}), nonce="srv")
    assert server.evaluate(b"n,a=a=2Cb,n=a=2Cb,r=cli").startswith(b"r=clisrv,")


@pytest.mark.parametrize(
    ("name", "escaped"),
    [("plain", "plain"), ("a,b", "a=2Cb"), ("a=b", "a=3Db"), ("=,=", "=3D=2C=3D"), ("=2C", "=3D2C"), ("üser", "üser")],
)
def test_username_escaping(name: str, escaped: str) -> None:
    assert escape_username(name) == escaped
    assert unescape_username(escaped) == name


@pytest.mark.parametrize("name", ["a,b", "a=b", "=3D2C", "ü,=ser"])
def test_escaped_username_round_trip(name: str) -> None:
    seen: list[str] = []

    def lookup(user: str) -> ScramCredential | None:
        seen.append(user)
        return make_credential(SHA256, "pw") if user == name else None

    client = ScramClient(SHA256, name, "pw")
    first = client.first()
    assert first.startswith(b"n,,n=" + escape_username(name).encode() + b",r=")
    server = ScramServer(SHA256, lookup)
    client.verify(server.evaluate(client.final(server.evaluate(first))))
    assert seen == [name]
    assert server.username == name


@pytest.mark.parametrize("escaped", ["a=", "a=2", "a=2c", "a=3d", "a=41", "=", "a=ZZ"])
def test_bad_username_escapes_are_errors(escaped: str) -> None:
    with pytest.raises(ValueError, match="Invalid username"):
        unescape_username(escaped)
    server = ScramServer(SHA256, lambda user: pytest.fail(f"lookup must not run for {user!r}"))
    with pytest.raises(ScramError) as info:
        server.evaluate(f"n,,n={escaped},r=abc".encode())
    assert str(info.value) == GENERIC_256
    assert "bad escape in user name" in info.value.reason


def test_tokenauth_extension_is_refused_where_no_tokens_are_served() -> None:
    server = ScramServer(SHA256, lambda user: pytest.fail("lookup must not run for a token login"))
    with pytest.raises(ScramError) as info:
        server.evaluate(b"n,,n=tokenid,r=abc,tokenauth=true")
    assert str(info.value) == GENERIC_256
    assert "tokenauth" in info.value.reason


def _token_cache(now: list[int]) -> TokenCache:
    cache = TokenCache(clock=lambda: now[0])
    cache.replace([TokenInfo("tok-1", "alice", b"\x01" * 64, expiry_ms=2_000, max_ms=5_000)])
    return cache


def _token_login(server: ScramServer, mechanism: str, token_id: str, password: str, tokenauth: str = "true") -> None:
    client = ScramClient(mechanism, token_id, password, extensions={"tokenauth": tokenauth})
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))


@pytest.mark.parametrize("mechanism", [SHA256, "SCRAM-SHA-512"])
def test_a_delegation_token_logs_in_as_its_owner(mechanism: str) -> None:
    """ScramSaslServer with tokenauth=true: the token id is the user name, the HMAC (base64) the password, the owner
    the authorization id; the expiry is the credential's (KIP-368 caps the session by it)."""
    now = [1_000]
    cache = _token_cache(now)
    password = base64.b64encode(b"\x01" * 64).decode()
    server = ScramServer(mechanism, lambda user: pytest.fail("a token login never reads the password file"), tokens=cache.login(mechanism))
    _token_login(server, mechanism, "tok-1", password)
    assert (server.username, server.token_authenticated, server.token_expiry_ms) == ("alice", True, 2_000)
    # the same token id without tokenauth is an ordinary user, unknown here
    plain = ScramServer(mechanism, {}.get, tokens=cache.login(mechanism))
    with pytest.raises(ScramError) as info:
        _token_login(plain, mechanism, "tok-1", password, tokenauth="false")
    assert info.value.reason == "Authentication failed: Invalid user credentials"


@pytest.mark.parametrize(
    ("token_id", "password", "now", "reason"),
    [
        ("tok-2", "x", 1_000, "Token Authentication failed: Invalid tokenId : 'tok-2'"),
        ("tok-1", base64.b64encode(b"\x01" * 64).decode(), 2_001, "Token Authentication failed: Invalid tokenId : 'tok-1'"),
        ("tok-1", base64.b64encode(b"\x02" * 64).decode(), 1_000, "Invalid client credentials"),
    ],
    ids=["unknown", "expired", "wrong-hmac"],
)
def test_unknown_expired_or_wrong_tokens_fail_with_the_generic_message(token_id: str, password: str, now: int, reason: str) -> None:
    cache = _token_cache([now])
    server = ScramServer(SHA256, {}.get, tokens=cache.login(SHA256))
    with pytest.raises(ScramError) as info:
        _token_login(server, SHA256, token_id, password)
    assert (str(info.value), info.value.reason) == (GENERIC_256, reason)
    assert (server.username, server.token_authenticated) == (None, False)


def test_a_cleared_cache_accepts_no_token() -> None:
    cache = _token_cache([1_000])
    cache.clear()
    assert cache.login(SHA256)("tok-1") is None and not cache.loaded


def test_unknown_extensions_are_ignored_but_signed() -> None:
    credential = rfc_credential()
    server = ScramServer(SHA256, {"user": credential}.get, nonce=RFC_SERVER_NONCE)
    server_first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO,foo=bar,tokenauth=false")
    assert server_first == RFC_SERVER_FIRST
    # The RFC proof was computed over a bare message without extensions, so it no longer matches.
    with pytest.raises(ScramError) as info:
        server.evaluate(RFC_CLIENT_FINAL)
    assert info.value.reason == "Invalid client credentials"


@pytest.mark.parametrize(
    ("token", "detail"),
    [
        (b"", "too few attributes"),
        (b"n,,n=user", "too few attributes"),
        (b"p=tls-unique,,n=user,r=abc", "channel binding is not supported"),
        (b"x,,n=user,r=abc", "gs2 header must start"),
        (b"n,user,n=user,r=abc", "bad authorization id"),
        (b"n,a=,n=user,r=abc", "bad authorization id"),
        (b"n,a=x=41,n=user,r=abc", "bad escape in authorization id"),
        (b"n,,m=ext,n=user,r=abc", "mandatory extension"),
        (b"n,,r=abc,n=user", "missing user name"),
        (b"n,,n=,r=abc", "missing user name"),
        (b"n,,n=user,r=", "missing or invalid nonce"),
        (b"n,,n=user,x=abc", "missing or invalid nonce"),
        (b"n,,n=user,r=a b", "missing or invalid nonce"),
        (b"n,,n=user,r=abc,", "invalid extension"),
        (b"n,,n=user,r=abc,1=2", "invalid extension"),
        (b"n,,n=user,r=abc,novalue", "invalid extension"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_malformed_client_first(token: bytes, detail: str) -> None:
    server = ScramServer(SHA256, {"user": rfc_credential()}.get)
    with pytest.raises(ScramError) as info:
        server.evaluate(token)
    assert str(info.value) == GENERIC_256
    assert info.value.reason.startswith("Invalid SCRAM client first message format")
    assert detail in info.value.reason
    # A failed server stays failed.
    with pytest.raises(ScramError) as again:
        server.evaluate(RFC_CLIENT_FIRST)
    assert again.value.reason == "Unexpected challenge in Sasl server state FAILED"


_GOOD_PREFIX = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"


@pytest.mark.parametrize(
    ("token", "detail"),
    [
        (b"", "too few attributes"),
        (b"c=biws,p=abc", "too few attributes"),
        (b"r=x,c=biws,p=dHzb", "missing channel binding"),
        (b"c=biws,p=dHzb,r=x", "missing nonce"),
        (_GOOD_PREFIX + b",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=,x=y", "proof must be the last attribute"),
        (_GOOD_PREFIX + b",=y,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "invalid extension"),
        (b"c=b!ws,r=x,p=dHzb", "invalid base64"),
        (_GOOD_PREFIX + b",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ", "invalid base64"),
        (_GOOD_PREFIX + b",p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgs", "proof must be 32 bytes"),
        (_GOOD_PREFIX + b",p=", "proof must be 32 bytes"),
        (b"c=biws,r=\xc3\xa9,p=dHzb", "not ASCII"),
    ],
)
def test_malformed_client_final(token: bytes, detail: str) -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError) as info:
        server.evaluate(token)
    assert str(info.value) == GENERIC_256
    assert info.value.reason.startswith("Invalid SCRAM client final message format")
    assert detail in info.value.reason
    assert not server.complete
    # Kafka answers SASL_AUTHENTICATION_FAILED to each, except a proof of the wrong length: its xor throws an
    # IllegalArgumentException, which closes the connection unanswered.
    assert info.value.answered == (not detail.endswith(" bytes"))


def test_flipped_proof_bit_is_refused() -> None:
    proof = bytearray(base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
    proof[0] ^= 1
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError) as info:
        server.evaluate(_GOOD_PREFIX + b",p=" + base64.b64encode(bytes(proof)))
    assert info.value.reason == "Invalid client credentials"


def test_evaluate_after_completion_is_an_error() -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    server.evaluate(RFC_CLIENT_FINAL)
    assert server.complete
    with pytest.raises(ScramError) as info:
        server.evaluate(RFC_CLIENT_FINAL)
    assert info.value.reason == "Unexpected challenge in Sasl server state COMPLETE"
    assert not server.complete
    assert server.username is None


def test_failed_server_refuses_a_correct_retry() -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(ScramError):
        server.evaluate(RFC_CLIENT_FINAL.replace(b"p=dHzb", b"p=dHzc"))
    with pytest.raises(ScramError) as info:
        server.evaluate(RFC_CLIENT_FINAL)
    assert info.value.reason == "Unexpected challenge in Sasl server state FAILED"
    assert not server.complete


def test_constructor_arguments_are_validated() -> None:
    with pytest.raises(ValueError, match="SCRAM-SHA-1"):
        ScramServer("SCRAM-SHA-1", lambda user: None)
    with pytest.raises(ValueError, match="nonce"):
        ScramServer(SHA256, lambda user: None, nonce="a,b")
    with pytest.raises(ValueError, match="SCRAM-SHA-1"):
        ScramClient("SCRAM-SHA-1", "u", "p")
    with pytest.raises(ValueError, match="user name"):
        ScramClient(SHA256, "", "p")
    with pytest.raises(ValueError, match="4095"):
        make_credential(SHA256, "p", iterations=4095)
    with pytest.raises(ValueError, match="16385"):
        make_credential(SHA256, "p", iterations=16385)
    with pytest.raises(ValueError, match="MD5"):
        make_credential("SCRAM-MD5", "p")


def test_generic_failure_message_names_the_mechanism() -> None:
    assert generic_failure_message("SCRAM-SHA-512") == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )


# --- client refusals ------------------------------------------------------------------------------


def started_client() -> ScramClient:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first()
    return client


@pytest.mark.parametrize(
    ("server_first", "message"),
    [
        (b"r=XOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "Invalid server nonce: does not start with client nonce"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "Invalid server nonce: the server added no nonce of its own"),
        (
            b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095",
            "Requested iterations 4095 is less than the minimum 4096 for SCRAM-SHA-256",
        ),
        (
            b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1",
            "Requested iterations 1 is less than the minimum 4096 for SCRAM-SHA-256",
        ),
        (
            b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999",
            "Requested iterations 99999999 is more than the maximum 16384 for SCRAM-SHA-256",
        ),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=-1", "Invalid SCRAM server first message format"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==", "Invalid SCRAM server first message format"),
        (b"m=x,r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "Invalid SCRAM server first message format"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=!!!,i=4096", "Invalid SCRAM server first message format: invalid salt"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=,i=4096", "Invalid SCRAM server first message format"),
        (b"e=other-error", "Invalid SCRAM server first message format"),
    ],
)
def test_client_refuses_bad_server_first(server_first: bytes, message: str) -> None:
    client = started_client()
    with pytest.raises(ScramError) as info:
        client.final(server_first)
    assert str(info.value).startswith(message)
    assert not client.complete


def test_client_reports_server_error() -> None:
    client = started_client()
    client.final(RFC_SERVER_FIRST)
    with pytest.raises(ScramError) as info:
        client.verify(b"e=invalid-proof")
    assert str(info.value) == "Sasl authentication using SCRAM-SHA-256 failed with error: 'invalid-proof'"
    assert not client.complete


@pytest.mark.parametrize(
    "server_final",
    [
        b"v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",  # altered signature
        b"v=",
    ],
)
def test_client_refuses_a_wrong_server_signature(server_final: bytes) -> None:
    client = started_client()
    client.final(RFC_SERVER_FIRST)
    with pytest.raises(ScramError) as info:
        client.verify(server_final)
    assert str(info.value) == "Invalid server signature in server final message"
    assert not client.complete


def test_client_refuses_a_server_that_does_not_hold_the_server_key() -> None:
    """Mutual authentication: accepting our proof is not enough, the server must sign with our ServerKey."""
    real = make_credential(SHA256, "alice-secret")
    wrong_server_key = ScramCredential(real.salt, real.stored_key, make_credential(SHA256, "other").server_key, real.iterations)
    impostor = ScramServer(SHA256, {"alice": wrong_server_key}.get)
    client = ScramClient(SHA256, "alice", "alice-secret")
    server_final = impostor.evaluate(client.final(impostor.evaluate(client.first())))
    assert impostor.complete  # the stored key matched, so the impostor accepted us
    with pytest.raises(ScramError) as info:
        client.verify(server_final)
    assert str(info.value) == "Invalid server signature in server final message"
    assert not client.complete


@pytest.mark.parametrize("server_final", [b"x=abc", b"v=!!", b"e=", b"\xff"])
def test_client_refuses_malformed_server_final(server_final: bytes) -> None:
    client = started_client()
    client.final(RFC_SERVER_FIRST)
    with pytest.raises(ScramError, match="Invalid SCRAM server final message format"):
        client.verify(server_final)


def test_client_calls_out_of_order_are_errors() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    with pytest.raises(ScramError, match="state SEND_CLIENT_FIRST_MESSAGE"):
        client.final(RFC_SERVER_FIRST)
    # The failed client stays failed.
    with pytest.raises(ScramError, match="state FAILED"):
        client.first()

    done = started_client()
    done.final(RFC_SERVER_FIRST)
    done.verify(RFC_SERVER_FINAL)
    assert done.complete
    with pytest.raises(ScramError, match="state COMPLETE"):
        done.verify(RFC_SERVER_FINAL)
    assert not done.complete
