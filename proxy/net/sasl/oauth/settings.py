"""OAUTHBEARER's settings: a listener's token validation and the proxy's own token login, with Kafka 4.x's keys,
defaults and messages.

Each key is looked up as Kafka looks it up (`proxy.properties.scoped`):
`listener.name.<l>.oauthbearer.<key>`, then `listener.name.<l>.<key>`, then `<key>`
(a bare `oauthbearer.<key>` is ignored, as Kafka ignores it).

The allow-list (Kafka 4.x, `org.apache.kafka.sasl.oauthbearer.allowed.urls`): a
comma-separated list of URLs, each compared with the configured URL exactly
(after trimming); empty by default, so no URL is allowed until it is listed. The
proxy reads it from its own key of that name, which wins when present, else from
`-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=...` in KAFKA_OPTS (the last
one), as a broker's JVM would see it. A URL that is not listed is a
configuration error naming its key: the proxy never contacts it.

The login's JAAS options come from the property or a JAAS file entry, as Kafka looks them up
(proxy.net.sasl.jaas.select_login); Kafka 4.1's keys `sasl.oauthbearer.client.credentials.client.id`/
`.client.secret` and `sasl.oauthbearer.scope` win over `clientId`/`clientSecret`/`scope` when set.
`extension_<name>` options become SASL extensions.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field

from proxy.net.sasl.jaas import JaasFile, select_login
from proxy.net.sasl.oauth.exchange import MECHANISM, build_client_first
from proxy.net.sasl.oauth.http import DEFAULT_TIMEOUT, file_url_path
from proxy.net.sasl.system_properties import KAFKA_OPTS, java_system_properties
from proxy.properties import ConfigError, Properties, scoped

__all__ = [
    "ALLOWED_URLS_PROPERTY", "CLIENT_ID_KEY", "CLIENT_SECRET_KEY", "CLOCK_SKEW_KEY", "EXPECTED_AUDIENCE_KEY", "EXPECTED_ISSUER_KEY", "JWKS_REFRESH_KEY", "JWKS_RETRY_BACKOFF_KEY",
    "JWKS_RETRY_BACKOFF_MAX_KEY", "JWKS_URL_KEY", "LOGIN_CALLBACK_HANDLER_KEY", "SCOPE_CLAIM_KEY", "SCOPE_KEY", "SERVER_CALLBACK_HANDLER_KEY", "SUB_CLAIM_KEY", "TOKEN_ENDPOINT_KEY",
    "AllowedUrls", "OAuthLoginSettings", "OAuthValidationSettings", "allowed_urls", "check_url", "oauth_value", "parse_oauth_login_settings", "parse_validation_settings",
]

# a listener's validation
JWKS_URL_KEY = "sasl.oauthbearer.jwks.endpoint.url"
JWKS_REFRESH_KEY = "sasl.oauthbearer.jwks.endpoint.refresh.ms"
JWKS_RETRY_BACKOFF_KEY = "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"
JWKS_RETRY_BACKOFF_MAX_KEY = "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms"
EXPECTED_AUDIENCE_KEY = "sasl.oauthbearer.expected.audience"
EXPECTED_ISSUER_KEY = "sasl.oauthbearer.expected.issuer"
CLOCK_SKEW_KEY = "sasl.oauthbearer.clock.skew.seconds"
SERVER_CALLBACK_HANDLER_KEY = "sasl.server.callback.handler.class"
# both sides
SUB_CLAIM_KEY = "sasl.oauthbearer.sub.claim.name"
SCOPE_CLAIM_KEY = "sasl.oauthbearer.scope.claim.name"
ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
"""Kafka 4.x's JVM system property, and the proxy's key of the same name (which wins)."""
# the proxy's own login
TOKEN_ENDPOINT_KEY = "sasl.oauthbearer.token.endpoint.url"
LOGIN_CALLBACK_HANDLER_KEY = "sasl.login.callback.handler.class"
CLIENT_ID_KEY = "sasl.oauthbearer.client.credentials.client.id"
CLIENT_SECRET_KEY = "sasl.oauthbearer.client.credentials.client.secret"
SCOPE_KEY = "sasl.oauthbearer.scope"
HEADER_URLENCODE_KEY = "sasl.oauthbearer.header.urlencode"
REFRESH_WINDOW_FACTOR_KEY = "sasl.login.refresh.window.factor"
REFRESH_WINDOW_JITTER_KEY = "sasl.login.refresh.window.jitter"
REFRESH_MIN_PERIOD_KEY = "sasl.login.refresh.min.period.seconds"
REFRESH_BUFFER_KEY = "sasl.login.refresh.buffer.seconds"
RETRY_BACKOFF_KEY = "sasl.login.retry.backoff.ms"
RETRY_BACKOFF_MAX_KEY = "sasl.login.retry.backoff.max.ms"
CONNECT_TIMEOUT_KEY = "sasl.login.connect.timeout.ms"
READ_TIMEOUT_KEY = "sasl.login.read.timeout.ms"

VALIDATOR_CALLBACK_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",  # Kafka 3.x's name
)
LOGIN_CALLBACK_HANDLERS = (
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler",  # Kafka 3.x's name
)
EXTENSION_PREFIX = "extension_"

# Kafka 4.3's defaults
DEFAULT_SUB_CLAIM = "sub"
DEFAULT_SCOPE_CLAIM = "scope"
DEFAULT_CLOCK_SKEW_SECONDS = 30
DEFAULT_JWKS_REFRESH_MS = 3_600_000
DEFAULT_RETRY_BACKOFF_MS = 100
DEFAULT_RETRY_BACKOFF_MAX_MS = 10_000
DEFAULT_REFRESH_WINDOW_FACTOR = 0.8
DEFAULT_REFRESH_WINDOW_JITTER = 0.05
DEFAULT_REFRESH_MIN_PERIOD_SECONDS = 60
DEFAULT_REFRESH_BUFFER_SECONDS = 300
# Kafka's ranges of the refresh keys (SaslConfigs)
REFRESH_WINDOW_FACTOR_RANGE = (0.5, 1.0)
REFRESH_WINDOW_JITTER_RANGE = (0.0, 0.25)
REFRESH_MIN_PERIOD_RANGE = (0, 900)
REFRESH_BUFFER_RANGE = (0, 3600)
# The proxy's own bounds, where Kafka has none: every read of the network is bounded.
DEFAULT_TIMEOUT_MS = int(DEFAULT_TIMEOUT * 1000)
"""Kafka waits without limit when `sasl.login.connect.timeout.ms`/`read.timeout.ms` are unset; the proxy does not."""
DEFAULT_MAX_TOKEN_BYTES = 64 * 1024
DEFAULT_MAX_JWKS_BYTES = 1 << 20
MAX_TOKEN_RESPONSE_BYTES = 256 * 1024


# --------------------------------------------------------------------------- lookups


def _raw(props: Properties | Mapping[str, str]) -> Mapping[str, str]:
    if isinstance(props, Properties):
        return props.raw
    return {key.strip(): value.strip() for key, value in props.items()}


def oauth_value(props: Properties | Mapping[str, str], listener: str | None, key: str) -> tuple[str, str | None]:
    """Kafka's lookup of an OAUTHBEARER setting for a listener (`proxy.properties.scoped`).
    Returns the key that was read (the last one tried when none is set) and its value."""
    return scoped(_raw(props), key, listener=listener, mechanism=MECHANISM)


def _checked_range(name: str, text: str, value: float, low: float, high: float | None) -> None:
    if value < low or (high is not None and value > high):
        reason = f"must be between {low:g} and {high:g}" if high is not None else f"must be at least {low:g}"
        raise ConfigError(name, text, reason)


def _int(props: Properties | Mapping[str, str], listener: str | None, key: str, default: int, low: int, high: int | None = None) -> int:
    name, text = oauth_value(props, listener, key)
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConfigError(name, text, "expected an integer") from None
    _checked_range(name, text, value, low, high)
    return value


def _float(props: Properties | Mapping[str, str], listener: str, key: str, default: float, bounds: tuple[float, float]) -> float:
    name, text = oauth_value(props, listener, key)
    if text is None or text == "":
        return default
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(name, text, "expected a number") from None
    _checked_range(name, text, value, *bounds)
    return value


def _claim_names(props: Properties | Mapping[str, str], listener: str | None) -> tuple[str, str]:
    """`sasl.oauthbearer.sub.claim.name` and `.scope.claim.name`, read alike by the validator and the login."""
    names: list[str] = []
    for key, default in ((SUB_CLAIM_KEY, DEFAULT_SUB_CLAIM), (SCOPE_CLAIM_KEY, DEFAULT_SCOPE_CLAIM)):
        name, value = oauth_value(props, listener, key)
        if value is not None and not value.strip():
            raise ConfigError(name, value, "The value of the OAuth claim name must be non-null, non-empty, and non-whitespace")
        names.append(value.strip() if value is not None else default)
    return names[0], names[1]


def _retry_backoff(props: Properties | Mapping[str, str], listener: str | None, key: str, max_key: str) -> tuple[int, int]:
    """A retry backoff and its maximum (Kafka's `Retry`), in ms; the maximum may not be below the backoff."""
    backoff = _int(props, listener, key, DEFAULT_RETRY_BACKOFF_MS, 0)
    backoff_max = _int(props, listener, max_key, DEFAULT_RETRY_BACKOFF_MAX_MS, 0)
    if backoff_max < backoff:
        name, text = oauth_value(props, listener, max_key)
        raise ConfigError(name, text, f"must not be less than {key} ({backoff})")
    return backoff, backoff_max


def _check_handler(props: Properties | Mapping[str, str], listener: str | None, key: str, handlers: tuple[str, ...], role: str) -> None:
    name, handler = oauth_value(props, listener, key)
    if handler and handler not in handlers:
        raise ConfigError(name, handler, f"{role} only as {handlers[0]} does")


# --------------------------------------------------------------------------- the URL allow-list


@dataclass(frozen=True)
class AllowedUrls:
    """Kafka 4.x's allow-list of OAUTHBEARER endpoint URLs, and where it was read (for messages)."""

    urls: frozenset[str]
    source: str

    def allows(self, url: str) -> bool:
        return url in self.urls


def allowed_urls(props: Properties | Mapping[str, str], environ: Mapping[str, str]) -> AllowedUrls:
    """The proxy key `org.apache.kafka.sasl.oauthbearer.allowed.urls` when present (even empty), else the `-D` of
    that name in KAFKA_OPTS (the last one), else Kafka 4.x's default: nothing allowed."""
    raw = _raw(props)
    if ALLOWED_URLS_PROPERTY in raw:
        text, source = raw[ALLOWED_URLS_PROPERTY], f"the key {ALLOWED_URLS_PROPERTY}"
    else:
        system = java_system_properties(environ)
        if ALLOWED_URLS_PROPERTY not in system:
            return AllowedUrls(frozenset(), f"neither the key {ALLOWED_URLS_PROPERTY} nor -D{ALLOWED_URLS_PROPERTY} in {KAFKA_OPTS} is set")
        text, source = system[ALLOWED_URLS_PROPERTY], f"-D{ALLOWED_URLS_PROPERTY} in {KAFKA_OPTS}"
    return AllowedUrls(frozenset(item.strip() for item in text.split(",")), source)


def check_url(key: str, url: str, allowed: AllowedUrls) -> str:
    """Kafka's `validateUrl`: a well-formed http, https or file URL that the allow-list names exactly; ConfigError
    naming the key otherwise."""
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise ConfigError(key, url, f"the URL is malformed: {exc}") from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise ConfigError(key, url, "the URL is malformed: no protocol")
    if scheme not in ("http", "https", "file"):
        raise ConfigError(key, url, f'the URL contains an invalid protocol ({parts.scheme}); only "http", "https", and "file" protocol are supported')
    if scheme == "file":
        try:
            file_url_path(url)
        except ValueError as exc:
            raise ConfigError(key, url, f"the URL is malformed: {exc}") from None
    elif not parts.hostname:
        raise ConfigError(key, url, "the URL is malformed: no host")
    if not allowed.allows(url):
        raise ConfigError(
            key,
            url,
            f"{url} is not allowed. Update system property '{ALLOWED_URLS_PROPERTY}' to allow {url} "
            f"(Kafka 4.x contacts only the URLs listed there; the proxy reads {allowed.source})",
        )
    return url


# --------------------------------------------------------------------------- a listener's validation


@dataclass(frozen=True)
class OAuthValidationSettings:
    """One listener's OAUTHBEARER validation, with Kafka 4.3's defaults."""

    jwks_endpoint_url: str
    expected_audience: tuple[str, ...] = ()
    expected_issuer: str | None = None
    sub_claim_name: str = DEFAULT_SUB_CLAIM
    scope_claim_name: str = DEFAULT_SCOPE_CLAIM
    clock_skew_seconds: int = DEFAULT_CLOCK_SKEW_SECONDS
    jwks_refresh_ms: int = DEFAULT_JWKS_REFRESH_MS
    jwks_retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS
    jwks_retry_backoff_max_ms: int = DEFAULT_RETRY_BACKOFF_MAX_MS
    max_token_bytes: int = DEFAULT_MAX_TOKEN_BYTES
    max_jwks_bytes: int = DEFAULT_MAX_JWKS_BYTES
    jwks_fetch_timeout: float = DEFAULT_TIMEOUT
    jwks_url_key: str = field(default=JWKS_URL_KEY, compare=False)
    """The key the URL was read from, for messages."""


def parse_validation_settings(
    props: Properties | Mapping[str, str], listener: str | None, environ: Mapping[str, str] | None = None
) -> OAuthValidationSettings:
    """A listener's OAUTHBEARER validation settings, or ConfigError naming key, value and reason.

    `environ` is where KAFKA_OPTS is read for the allow-list (pass os.environ; None reads nothing)."""
    _check_handler(props, listener, SERVER_CALLBACK_HANDLER_KEY, VALIDATOR_CALLBACK_HANDLERS, "the proxy validates OAUTHBEARER tokens")
    url_key, url = oauth_value(props, listener, JWKS_URL_KEY)
    if not url:
        raise ConfigError(
            url_key,
            url,
            f"listener {listener} enables OAUTHBEARER, which needs a JWKS to validate tokens with (Kafka's unsecured validator, "
            "which checks no signature, is not offered)",
        )
    check_url(url_key, url, allowed_urls(props, environ or {}))
    _, audience_text = oauth_value(props, listener, EXPECTED_AUDIENCE_KEY)
    audience = tuple(dict.fromkeys(item.strip() for item in (audience_text or "").split(",") if item.strip()))
    _, issuer = oauth_value(props, listener, EXPECTED_ISSUER_KEY)
    sub_claim, scope_claim = _claim_names(props, listener)
    backoff, backoff_max = _retry_backoff(props, listener, JWKS_RETRY_BACKOFF_KEY, JWKS_RETRY_BACKOFF_MAX_KEY)
    return OAuthValidationSettings(
        jwks_endpoint_url=url,
        expected_audience=audience,
        expected_issuer=issuer or None,
        sub_claim_name=sub_claim,
        scope_claim_name=scope_claim,
        clock_skew_seconds=_int(props, listener, CLOCK_SKEW_KEY, DEFAULT_CLOCK_SKEW_SECONDS, 0),
        jwks_refresh_ms=_int(props, listener, JWKS_REFRESH_KEY, DEFAULT_JWKS_REFRESH_MS, 1),
        jwks_retry_backoff_ms=backoff,
        jwks_retry_backoff_max_ms=backoff_max,
        jwks_url_key=url_key,
    )


# --------------------------------------------------------------------------- the proxy's own login


@dataclass(frozen=True)
class OAuthLoginSettings:
    token_endpoint_url: str
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scope: str | None = None
    extensions: Mapping[str, str] = field(default_factory=dict)
    refresh_window_factor: float = DEFAULT_REFRESH_WINDOW_FACTOR
    refresh_window_jitter: float = DEFAULT_REFRESH_WINDOW_JITTER
    refresh_min_period_seconds: int = DEFAULT_REFRESH_MIN_PERIOD_SECONDS
    refresh_buffer_seconds: int = DEFAULT_REFRESH_BUFFER_SECONDS
    retry_backoff_ms: int = DEFAULT_RETRY_BACKOFF_MS
    retry_backoff_max_ms: int = DEFAULT_RETRY_BACKOFF_MAX_MS
    connect_timeout_ms: int = DEFAULT_TIMEOUT_MS
    read_timeout_ms: int = DEFAULT_TIMEOUT_MS
    header_urlencode: bool = False
    sub_claim_name: str = DEFAULT_SUB_CLAIM
    scope_claim_name: str = DEFAULT_SCOPE_CLAIM
    max_response_bytes: int = MAX_TOKEN_RESPONSE_BYTES
    token_endpoint_key: str = field(default=TOKEN_ENDPOINT_KEY, compare=False)


def _jaas_options(
    props: Properties | Mapping[str, str], listener: str, jaas_file: JaasFile | None, file_key: str | None
) -> tuple[Mapping[str, str], str]:
    raw = props.raw if isinstance(props, Properties) else dict(props)
    login = select_login(raw, listener, MECHANISM, jaas_file, file_key=file_key, role="client")
    module = login.module
    return (module.options if module is not None else {}), login.source


def parse_oauth_login_settings(
    props: Properties | Mapping[str, str],
    listener: str,
    environ: Mapping[str, str] | None = None,
    *,
    jaas_file: JaasFile | None = None,
    file_key: str | None = None,
) -> OAuthLoginSettings:
    """The proxy's OAUTHBEARER login on the controller listener `listener`, or ConfigError naming key, value and reason
    (JaasError, a ConfigError, for the JAAS part). `environ` holds KAFKA_OPTS for the URL allow-list."""
    options, jaas_source = _jaas_options(props, listener, jaas_file, file_key)
    _check_handler(props, listener, LOGIN_CALLBACK_HANDLER_KEY, LOGIN_CALLBACK_HANDLERS, "the proxy's own OAUTHBEARER login works")
    url_key, url = oauth_value(props, listener, TOKEN_ENDPOINT_KEY)
    if not url:
        raise ConfigError(
            url_key,
            url,
            "the proxy's own OAUTHBEARER login needs a token endpoint (client-credentials grant); Kafka's unsecured login is not offered",
        )
    check_url(url_key, url, allowed_urls(props, environ or {}))
    from_file = urllib.parse.urlsplit(url).scheme.lower() == "file"

    def config_or_jaas(key: str, option: str, *, required: bool) -> str | None:
        name, value = oauth_value(props, listener, key)
        if value is None:
            name, value = f"{jaas_source} option {option}", options.get(option)
        if value is not None and not value.strip():
            raise ConfigError(name, "[hidden]", "must not be empty or whitespace")
        if value is None and required:
            raise ConfigError(key, None, f"the proxy's client-credentials login needs {key}, or the JAAS option {option} ({jaas_source})")
        return None if value is None else value.strip()

    client_id = config_or_jaas(CLIENT_ID_KEY, "clientId", required=not from_file)
    client_secret = config_or_jaas(CLIENT_SECRET_KEY, "clientSecret", required=not from_file)
    scope = config_or_jaas(SCOPE_KEY, "scope", required=False)
    extensions = {name[len(EXTENSION_PREFIX) :]: value for name, value in options.items() if name.startswith(EXTENSION_PREFIX)}
    try:
        build_client_first("x", "", extensions)  # the extensions' grammar is the client-first message's
    except ValueError as exc:
        raise ConfigError(f"{jaas_source} options {EXTENSION_PREFIX}*", "[hidden]", str(exc)) from None
    urlencode_key, urlencode = oauth_value(props, listener, HEADER_URLENCODE_KEY)
    if urlencode is not None and urlencode.lower() not in ("true", "false"):
        raise ConfigError(urlencode_key, urlencode, "expected true or false")
    sub_claim, scope_claim = _claim_names(props, listener)
    backoff, backoff_max = _retry_backoff(props, listener, RETRY_BACKOFF_KEY, RETRY_BACKOFF_MAX_KEY)
    return OAuthLoginSettings(
        token_endpoint_url=url,
        client_id=client_id,
        client_secret=client_secret,
        scope=scope,
        extensions=extensions,
        refresh_window_factor=_float(props, listener, REFRESH_WINDOW_FACTOR_KEY, DEFAULT_REFRESH_WINDOW_FACTOR, REFRESH_WINDOW_FACTOR_RANGE),
        refresh_window_jitter=_float(props, listener, REFRESH_WINDOW_JITTER_KEY, DEFAULT_REFRESH_WINDOW_JITTER, REFRESH_WINDOW_JITTER_RANGE),
        refresh_min_period_seconds=_int(props, listener, REFRESH_MIN_PERIOD_KEY, DEFAULT_REFRESH_MIN_PERIOD_SECONDS, *REFRESH_MIN_PERIOD_RANGE),
        refresh_buffer_seconds=_int(props, listener, REFRESH_BUFFER_KEY, DEFAULT_REFRESH_BUFFER_SECONDS, *REFRESH_BUFFER_RANGE),
        retry_backoff_ms=backoff,
        retry_backoff_max_ms=backoff_max,
        connect_timeout_ms=_int(props, listener, CONNECT_TIMEOUT_KEY, DEFAULT_TIMEOUT_MS, 1),
        read_timeout_ms=_int(props, listener, READ_TIMEOUT_KEY, DEFAULT_TIMEOUT_MS, 1),
        header_urlencode=(urlencode or "false").lower() == "true",
        sub_claim_name=sub_claim,
        scope_claim_name=scope_claim,
        token_endpoint_key=url_key,
    )
