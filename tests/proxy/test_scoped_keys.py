"""One lookup of a listener's and a mechanism's keys (proxy/properties.py `scoped`), as Kafka looks them up."""

from hypothesis import given
from hypothesis import strategies as st

from proxy.properties import listener_prefix, scoped

LISTENER, MECHANISM, KEY = "CLIENT", "SCRAM-SHA-256", "connections.max.reauth.ms"
BOTH = f"listener.name.client.scram-sha-256.{KEY}"
LISTENER_ONLY = f"listener.name.client.{KEY}"


@given(present=st.sets(st.sampled_from([BOTH, LISTENER_ONLY, KEY, f"scram-sha-256.{KEY}"])))
def test_the_most_specific_key_set_wins_and_errors_name_it(present: set[str]) -> None:
    raw = {name: name for name in present}
    order = [name for name in (BOTH, LISTENER_ONLY, KEY) if name in present]
    expected = (order[0], order[0]) if order else (KEY, None)  # a bare mechanism prefix is never read, as in Kafka
    assert scoped(raw, KEY, listener=LISTENER, mechanism=MECHANISM) == expected


def test_without_a_mechanism_or_a_listener() -> None:
    raw = {BOTH: "1", LISTENER_ONLY: "2", KEY: "3"}
    assert scoped(raw, KEY, listener=LISTENER) == (LISTENER_ONLY, "2")
    assert scoped(raw, KEY) == (KEY, "3")
    assert listener_prefix("Client", "GSSAPI") == "listener.name.client.gssapi."
