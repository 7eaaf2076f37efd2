"""route(): where one request goes, from its header and the advertised ranges alone."""

import pytest

from apiversions import VersionRange
from envelope.apis import ApiKey
from envelope.header import RequestHeaderInfo
from proxy.forward.read_routes import READ_APIS
from proxy.forward.routing import Route, Routed, route

ADVERTISED: dict[int, VersionRange] = {
    ApiKey.METADATA: VersionRange(0, 13),
    ApiKey.SASL_HANDSHAKE: VersionRange(0, 1),
    ApiKey.API_VERSIONS: VersionRange(0, 4),
    ApiKey.CREATE_TOPICS: VersionRange(2, 5),
    ApiKey.DESCRIBE_ACLS: VersionRange(1, 3),
    ApiKey.DESCRIBE_CONFIGS: VersionRange(1, 4),
    ApiKey.SASL_AUTHENTICATE: VersionRange(0, 2),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: VersionRange(0, 1),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: VersionRange(0, 0),
    ApiKey.ENVELOPE: VersionRange(0, 0),  # even advertised, a client's Envelope is refused
    ApiKey.DESCRIBE_CLUSTER: VersionRange(0, 2),
}


def header(api_key: int, api_version: int) -> RequestHeaderInfo:
    return RequestHeaderInfo(api_key, api_version, correlation_id=1, client_id="t", header_version=1, header_size=0)


@pytest.mark.parametrize("version", [0, 4, 99])
def test_api_versions_is_always_answered_whatever_its_version_or_the_ranges(version: int) -> None:
    assert route(header(ApiKey.API_VERSIONS, version), {}, READ_APIS) == Routed(Route.API_VERSIONS)


def test_describe_cluster_is_answered_locally() -> None:
    assert route(header(ApiKey.DESCRIBE_CLUSTER, 1), ADVERTISED, READ_APIS) == Routed(Route.LOCAL)


@pytest.mark.parametrize(
    "api_key",
    [ApiKey.METADATA, ApiKey.DESCRIBE_CONFIGS, ApiKey.DESCRIBE_ACLS, ApiKey.DESCRIBE_CLIENT_QUOTAS, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS],
)
def test_reads_go_to_the_read_path(api_key: ApiKey) -> None:
    assert route(header(api_key, ADVERTISED[api_key].max), ADVERTISED, READ_APIS) == Routed(Route.READ)


@pytest.mark.parametrize("version", [2, 5])
def test_an_advertised_admin_request_is_forwarded(version: int) -> None:
    assert route(header(ApiKey.CREATE_TOPICS, version), ADVERTISED, READ_APIS) == Routed(Route.FORWARD)


@pytest.mark.parametrize(
    ("api_key", "version", "reason"),
    [
        (ApiKey.ENVELOPE, 0, "Envelope is not accepted from clients"),
        (ApiKey.FETCH, 12, "API Fetch is not served by this proxy"),
        (ApiKey.DELETE_TOPICS, 4, "API DeleteTopics is not served by this proxy"),  # the controller lacks it: not advertised
        (1000, 0, "API Unknown(1000) is not served by this proxy"),
        (ApiKey.SASL_HANDSHAKE, 2, "version 2 of SaslHandshake is not in 0..1"),
        (ApiKey.CREATE_TOPICS, 6, "version 6 of CreateTopics is not in 2..5"),
        (ApiKey.CREATE_TOPICS, 1, "version 1 of CreateTopics is not in 2..5"),
        (ApiKey.DESCRIBE_CLUSTER, 3, "version 3 of DescribeCluster is not in 0..2"),
        (ApiKey.METADATA, 14, "version 14 of Metadata is not in 0..13"),
    ],
)
def test_refusals_name_their_reason(api_key: int, version: int, reason: str) -> None:
    assert route(header(api_key, version), ADVERTISED, READ_APIS) == Routed(Route.REFUSE, reason)


@pytest.mark.parametrize(("api_key", "version"), [(ApiKey.SASL_HANDSHAKE, 0), (ApiKey.SASL_HANDSHAKE, 1), (ApiKey.SASL_AUTHENTICATE, 2)])
def test_sasl_frames_after_the_login_are_answered_by_the_proxy(api_key: int, version: int) -> None:
    # Kafka's KafkaApis answers them ILLEGAL_SASL_STATE (a SaslHandshake that begins a re-authentication never routes).
    assert route(header(api_key, version), ADVERTISED, READ_APIS) == Routed(Route.LOCAL)


def test_only_refusals_carry_a_reason() -> None:
    for api_key, served in ADVERTISED.items():
        routed = route(header(api_key, served.min), ADVERTISED, READ_APIS)
        assert (routed.reason is not None) == (routed.route is Route.REFUSE), api_key
