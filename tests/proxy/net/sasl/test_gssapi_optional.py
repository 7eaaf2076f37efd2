"""python-gssapi is an optional extra (the container images leave it out): without it the proxy still starts, and
a listener or login that enables GSSAPI is a configuration error that says what to install."""

from pathlib import Path

import pytest

from envelope_proxy.embedded import proxy_properties
from proxy.config import parse_proxy_config
from proxy.net.sasl import gssapi_mechanism
from proxy.properties import ConfigError


def test_without_python_gssapi_enabling_gssapi_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(gssapi_mechanism, "gssapi", None)
    props = proxy_properties(9093, tmp_path / "audit")
    assert parse_proxy_config(props).listeners  # PLAIN alone needs no Kerberos
    with pytest.raises(ConfigError, match=r"sasl.enabled.mechanisms.*python-gssapi is not installed.*\[kerberos\]"):
        parse_proxy_config({**props, "listener.name.client.sasl.enabled.mechanisms": "PLAIN,GSSAPI"})
    with pytest.raises(ConfigError, match=r"sasl.mechanism.controller.protocol.*python-gssapi is not installed"):
        parse_proxy_config({**props, "sasl.mechanism.controller.protocol": "GSSAPI"})
