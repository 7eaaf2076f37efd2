"""The Keycloak harness (keycloak.py) against a real Keycloak: tokens that verify against the realm's JWKS with
the claims the test chose, and key rotation that changes the kid. Marker `interop`."""

import base64
import hmac
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from tests.interop.keycloak import Keycloak, KeycloakClient

pytestmark = pytest.mark.interop

REALM = "kafka-harness"  # a realm of its own in the run's Keycloak
AUDIENCE = "kafka-cluster"
LIFESPAN = 120


@pytest.fixture(scope="module")
def keycloak(keycloak_server: Keycloak) -> Keycloak:
    """The run's Keycloak, with this suite's realm."""
    keycloak_server.create_realm(REALM, access_token_lifespan=LIFESPAN)
    return keycloak_server


@pytest.fixture(scope="module")
def client(keycloak: Keycloak) -> KeycloakClient:
    return keycloak.create_client(REALM, "proxy", "proxy-secret", audience=AUDIENCE)


def _verify(keycloak: Keycloak, token: str) -> dict[str, object]:
    """What a resource server does: the key by kid from the realm's JWKS, RS256 only, audience, issuer, expiry."""
    keys = jwt.PyJWKSet.from_dict(keycloak.jwks(REALM))
    kid = jwt.get_unverified_header(token)["kid"]
    key = next(k for k in keys.keys if k.key_id == kid)
    claims: dict[str, object] = jwt.decode(
        token,
        key=key,
        algorithms=["RS256"],
        audience=AUDIENCE,
        issuer=keycloak.issuer(REALM),
        options={"require": ["exp", "iat", "sub", "iss", "aud"]},
    )
    return claims


def test_a_client_credentials_token_verifies_with_the_claims_chosen(keycloak: Keycloak, client: KeycloakClient) -> None:
    before = int(time.time())
    token = keycloak.token(REALM, "proxy", "proxy-secret")
    claims = _verify(keycloak, token)
    assert claims["sub"] == client.service_account_user_id  # Keycloak's sub: the client's service-account user
    assert claims["aud"] == AUDIENCE  # the audience mapper's value alone (no role audiences: fullScopeAllowed off)
    assert claims["iss"] == f"http://127.0.0.1:{keycloak.port}/realms/{REALM}"
    assert claims["azp"] == claims["client_id"] == "proxy"
    issued = claims["iat"]
    assert isinstance(issued, int) and before - 5 <= issued <= int(time.time()) + 5
    assert claims["exp"] == issued + LIFESPAN
    assert jwt.get_unverified_header(token)["alg"] == "RS256"


def test_tokens_that_must_not_verify(keycloak: Keycloak, client: KeycloakClient) -> None:
    token = keycloak.token(REALM, "proxy", "proxy-secret")
    key = jwt.PyJWKSet.from_dict(keycloak.jwks(REALM))[jwt.get_unverified_header(token)["kid"]]
    with pytest.raises(jwt.InvalidAudienceError):
        jwt.decode(token, key=key, algorithms=["RS256"], audience="another-cluster", issuer=keycloak.issuer(REALM))
    with pytest.raises(jwt.InvalidIssuerError):
        jwt.decode(token, key=key, algorithms=["RS256"], audience=AUDIENCE, issuer=keycloak.issuer("master"))
    keycloak.create_realm("short-lived", access_token_lifespan=1)
    keycloak.create_client("short-lived", "proxy", "proxy-secret", audience=AUDIENCE)
    short = keycloak.token("short-lived", "proxy", "proxy-secret")
    short_key = jwt.PyJWKSet.from_dict(keycloak.jwks("short-lived"))[jwt.get_unverified_header(short)["kid"]]
    expires = jwt.decode(short, options={"verify_signature": False})["exp"]
    time.sleep(max(0.0, expires - time.time()) + 1.1)
    with pytest.raises(jwt.ExpiredSignatureError):
        jwt.decode(short, key=short_key, algorithms=["RS256"], audience=AUDIENCE)
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB"), key=key, algorithms=["RS256"], audience=AUDIENCE)
    # alg confusion: an HS256 token whose HMAC secret is the realm's public key (PEM) is not an RS256 token
    public_pem = key.key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    signing_input = b".".join(
        base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=")
        for part in ({"alg": "HS256", "typ": "JWT", "kid": key.key_id}, {**jwt.decode(token, options={"verify_signature": False}), "sub": "mallory"})
    )
    forged = signing_input + b"." + base64.urlsafe_b64encode(hmac.digest(public_pem, signing_input, "sha256")).rstrip(b"=")
    with pytest.raises(jwt.InvalidAlgorithmError):
        jwt.decode(forged.decode(), key=key, algorithms=["RS256"], audience=AUDIENCE)
    with pytest.raises(jwt.InvalidKeyError):
        jwt.decode(forged.decode(), key=public_pem, algorithms=["HS256"], audience=AUDIENCE)  # PyJWT refuses a PEM as an HMAC secret


def test_key_rotation_changes_the_kid(keycloak: Keycloak, client: KeycloakClient) -> None:
    old_token = keycloak.token(REALM, "proxy", "proxy-secret")
    old_kid = jwt.get_unverified_header(old_token)["kid"]
    assert old_kid == keycloak.active_kid(REALM)

    new_kid = keycloak.rotate_keys(REALM)  # the old key turns passive: it still verifies, it signs no more
    assert new_kid != old_kid
    new_token = keycloak.token(REALM, "proxy", "proxy-secret")
    assert jwt.get_unverified_header(new_token)["kid"] == new_kid
    published = {key["kid"] for key in keycloak.jwks(REALM)["keys"]}
    assert {old_kid, new_kid} <= published
    assert _verify(keycloak, new_token)["sub"] == client.service_account_user_id
    assert _verify(keycloak, old_token)["sub"] == client.service_account_user_id

    newest_kid = keycloak.rotate_keys(REALM, old="disabled")  # now the older keys leave the JWKS
    assert jwt.get_unverified_header(keycloak.token(REALM, "proxy", "proxy-secret"))["kid"] == newest_kid
    published = {key["kid"] for key in keycloak.jwks(REALM)["keys"]}
    assert newest_kid in published and not {old_kid, new_kid} & published
    with pytest.raises(StopIteration):
        _verify(keycloak, old_token)
