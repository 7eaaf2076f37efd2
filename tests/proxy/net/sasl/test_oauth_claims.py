"""The one claims check of OAUTHBEARER (proxy/net/sasl/oauth/claims.py): both sides, a client's token on the broker
and the proxy's own token before its login, read exp, iat and nbf with the same bound and the same words; what
differs is only what Kafka's two validators differ in (time, issuer, audience, a required iat, nbf)."""

import time
from typing import Any

import pytest

from proxy.net.sasl.oauth.claims import MAX_NUMERIC_DATE, BrokerChecks, InvalidToken, TokenClaims, checked_claims
from proxy.net.sasl.oauth.jwks import StaticKeys, parse_jwks
from proxy.net.sasl.oauth.login import OAuthLoginError, parse_access_token
from proxy.net.sasl.oauth.settings import OAuthValidationSettings
from proxy.net.sasl.oauth.validator import TokenValidator
from tests.proxy.net.sasl.oauth_fixtures import AUDIENCE, ISSUER, claims, jwks, rsa_key, unsigned

NOW = 1_800_000_000
SKEW = 30
BROKER = BrokerChecks(NOW, SKEW, (AUDIENCE,), ISSUER)
LARGEST = MAX_NUMERIC_DATE - 1


def _broker(payload: dict[str, Any], broker: BrokerChecks = BROKER) -> TokenClaims:
    return checked_claims(payload, sub_claim_name="sub", scope_claim_name="scope", broker=broker)


def _client(payload: dict[str, Any]) -> TokenClaims:
    return checked_claims(payload, sub_claim_name="sub", scope_claim_name="scope")


def _refusal(check: Any, payload: dict[str, Any]) -> str:
    with pytest.raises(InvalidToken) as refused:
        check(payload)
    return str(refused.value)


# A value each side must refuse as "not a number": out of the one bound, or no number at all.
NOT_NUMBERS: list[Any] = [MAX_NUMERIC_DATE, -MAX_NUMERIC_DATE, float(MAX_NUMERIC_DATE), 2**63, 1e300, float("inf"), float("nan"), True, "5", [5]]


@pytest.mark.parametrize("claim", ["exp", "iat"])
@pytest.mark.parametrize("value", NOT_NUMBERS, ids=repr)
def test_both_sides_refuse_the_same_numbers_with_the_same_words(claim: str, value: Any) -> None:
    payload = {**claims(now=NOW), claim: value}
    expected = f"Could not extract the '{claim}' claim from the access token: not a number"
    assert _refusal(_broker, payload) == _refusal(_client, payload) == expected


def test_both_sides_take_the_largest_number_within_the_bound() -> None:
    far = {**claims(now=NOW), "exp": LARGEST, "iat": LARGEST, "nbf": NOW}
    broker, client = _broker(far), _client(far)
    assert broker == client == TokenClaims("alice", LARGEST, LARGEST, frozenset({"profile email"}))
    assert broker.expiry_ms == LARGEST * 1000 < 2**63  # Kafka's long milliseconds, and session_lifetime_ms on the wire
    # a float claim is truncated to whole seconds, as jose4j reads it
    assert _client({**far, "exp": NOW + 0.9}).expiration == NOW


def test_the_bound_through_both_public_entry_points() -> None:
    """The validator (a client's signed token) and the login (the proxy's own token) reach the one check."""
    key = rsa_key()
    validator = TokenValidator(OAuthValidationSettings("http://x/jwks", expected_audience=(AUDIENCE,)), StaticKeys(parse_jwks(jwks(key))))
    good = claims(now=time.time(), exp=LARGEST)
    assert validator.validate(key.sign(good)).lifetime_ms == parse_access_token(unsigned({"alg": "RS256"}, good, b"s")).expiry_ms == LARGEST * 1000
    bad = {**good, "exp": MAX_NUMERIC_DATE}
    with pytest.raises(InvalidToken) as broker:
        validator.validate(key.sign(bad))
    with pytest.raises(OAuthLoginError) as client:
        parse_access_token(unsigned({"alg": "RS256"}, bad, b"s"))
    assert str(broker.value) == str(client.value) == "Could not extract the 'exp' claim from the access token: not a number"


def test_the_shared_checks_word_their_refusals_alike() -> None:
    for change, message in [
        ({"exp": -1, "iat": -5}, 'exp value must be non-negative; value given was "-1"'),
        ({"iat": -5}, 'iat value must be null or non-negative; value given was "-5"'),
        ({"sub": " "}, "The value of the OAuth claim sub must be non-null, non-empty, and non-whitespace"),
        ({"scope": ["a", " a"]}, "scope value must not contain duplicates - a already present"),
        ({"scope": [""]}, "The value of the OAuth claim scope must be non-null, non-empty, and non-whitespace"),
    ]:
        payload = {**claims(now=NOW), **change}
        # a negative exp is long expired on the broker, which says so first, as jose4j does
        client = _refusal(_client, payload)
        assert client == message
        if "exp" not in change:
            assert _refusal(_broker, payload) == message


def test_where_kafkas_two_validators_differ() -> None:
    no_exp = {name: value for name, value in claims(now=NOW).items() if name != "exp"}
    assert _refusal(_broker, no_exp) == "No Expiration Time (exp) claim present."
    assert _refusal(_client, no_exp) == "exp value must be non-null"
    no_iat = {name: value for name, value in claims(now=NOW).items() if name != "iat"}
    assert _refusal(_broker, no_iat) == "No Issued At (iat) claim present."
    assert _client(no_iat).issued_at is None
    # the client reads neither nbf nor the clock, the issuer or the audience: the controller checks those
    odd = {**claims(now=0, lifetime=1), "nbf": "x", "iss": 5, "aud": ["elsewhere"]}
    assert _client(odd).principal_name == "alice"
    # jose4j reads sub as a string before the subject claim is looked at; Kafka's client only the subject claim
    assert _refusal(_broker, claims(now=NOW, sub=7)) == "Could not extract the 'sub' claim from the access token: not a string"
    assert _refusal(_client, claims(now=NOW, sub=7)) == "The value of the OAuth claim sub must be non-null, non-empty, and non-whitespace"


def test_time_issuer_and_audience_through_pyjwt_in_kafkas_words() -> None:
    assert _broker(claims(now=NOW - 300, lifetime=300 - SKEW + 1)).principal_name == "alice"  # within the skew
    expired = claims(now=NOW - 300, lifetime=300 - SKEW)
    assert _refusal(_broker, expired) == (
        f"The JWT is no longer valid - the evaluation time {NOW} is on or after the Expiration Time (exp={NOW - SKEW}) claim value "
        f"(allowing {SKEW} seconds of skew)"
    )
    assert _broker(claims(now=NOW, nbf=NOW + SKEW)).principal_name == "alice"
    assert _refusal(_broker, claims(now=NOW, nbf=NOW + SKEW + 1)) == (
        f"The JWT is not yet valid as the evaluation time {NOW} is before the Not Before (nbf={NOW + SKEW + 1}) claim time (allowing {SKEW} seconds of skew)"
    )
    assert _refusal(_broker, claims(now=NOW, iss=None)) == "No Issuer (iss) claim present."
    assert _refusal(_broker, {**claims(now=NOW), "iss": None}) == "No Issuer (iss) claim present."  # a null is no issuer
    assert _refusal(_broker, claims(now=NOW, iss="other")) == f"Issuer (iss) claim value (other) doesn't match expected value of {ISSUER}"
    assert _refusal(_broker, claims(now=NOW, aud=None)) == "No Audience (aud) claim present."
    assert "doesn't contain an acceptable identifier" in _refusal(_broker, claims(now=NOW, aud=["account"]))
    assert "doesn't contain an acceptable identifier" in _refusal(_broker, claims(now=NOW, aud=[]))
    # where PyJWT alone would let a token through, jose4j's rule holds: no expected audience means no aud at all
    open_broker = BrokerChecks(NOW, SKEW)
    assert "no expected audience" in _refusal(lambda payload: _broker(payload, open_broker), claims(now=NOW, aud=[]))
    assert _broker(claims(now=NOW, aud=None), open_broker).principal_name == "alice"
