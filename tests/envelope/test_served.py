"""envelope/served.py is the one table of what is served: everything else follows from it, and kio cannot widen it."""

import pytest

from authz.admin_apis import ADMIN_APIS
from envelope.apis import FORWARDABLE, ApiKey, api_name
from envelope.codec import known_versions
from envelope.served import SERVED, Serving, check_served, pinned_ranges, served_as
from proxy.forward.read_routes import READ_ROUTES
from proxy.forward.routing import LOCAL_APIS, SASL_APIS


@pytest.mark.parametrize("api_key", sorted(SERVED), ids=api_name)
def test_kio_knows_exactly_the_pinned_versions(api_key: int) -> None:
    """A kio upgrade that knows a newer (or drops an older) version fails here, until the table is changed on purpose:
    nothing advertised changes by itself."""
    pinned = SERVED[api_key].versions
    known = known_versions(api_key)
    assert known is not None
    assert (pinned.min, pinned.max) == known, f"{api_name(api_key)}: kio knows {known}, the table pins {pinned}"


def test_every_registry_is_the_table() -> None:
    assert frozenset(ADMIN_APIS) == served_as(Serving.FORWARD)
    assert frozenset(READ_ROUTES) == served_as(Serving.READ)
    assert LOCAL_APIS == served_as(Serving.LOCAL) | SASL_APIS
    assert served_as(Serving.FORWARD) <= FORWARDABLE, "only what Kafka lets an Envelope carry is forwarded"
    assert not served_as(Serving.READ) & FORWARDABLE, "a forwardable API is forwarded, never read under the proxy's name"
    assert ApiKey.ENVELOPE not in SERVED


def test_a_registry_that_disagrees_fails_at_import() -> None:
    with pytest.raises(RuntimeError, match=r"missing \[41\], not in the table \[1\]"):
        check_served("a registry", (served_as(Serving.READ) - {ApiKey.DESCRIBE_DELEGATION_TOKEN}) | {ApiKey.FETCH}, Serving.READ)


def test_pinned_ranges_are_in_key_order() -> None:
    assert list(pinned_ranges()) == sorted(SERVED)
    assert set(pinned_ranges(frozenset({ApiKey.METADATA}))) == {ApiKey.METADATA}
