"""The Krb5LoginModule login both sides of SASL/GSSAPI use, read from the listener's JAAS login as a broker reads it.

`useKeyTab=true` and `keyTab`, `principal` (the key's Kerberos name), `storeKey=true` on the server side, and the
service name: `sasl.kerberos.service.name` (also under `listener.name.<l>.`) or the login's `serviceName`; both set
and different is an error, as in Kafka. No python-gssapi here: the keytab is only checked to be readable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from proxy.net.sasl.jaas import JaasLogin
from proxy.net.sasl.kerberos_names import KerberosName
from proxy.properties import ConfigError, Properties, scoped

__all__ = ["NAME", "SERVICE_NAME_KEY", "KeytabLogin", "keytab_login", "setting"]

NAME = "GSSAPI"
SERVICE_NAME_KEY = "sasl.kerberos.service.name"


def setting(props: Properties, listener: str, key: str) -> tuple[str, str | None]:
    """`listener.name.<l>.gssapi.<key>`, then `listener.name.<l>.<key>`, then `<key>`: the key read and its value."""
    return scoped(props.raw, key, listener=listener, mechanism=NAME)


@dataclass(frozen=True)
class KeytabLogin:
    """A Krb5LoginModule login with a keytab: what both sides read from the JAAS entry."""

    principal: str
    keytab: str
    service_name: str
    source: str

    def effective(self) -> dict[str, object]:
        return {"principal": self.principal, "keyTab": self.keytab, "service.name": self.service_name, "jaas.login": self.source}


def keytab_login(props: Properties, listener: str, login: JaasLogin, *, role: Literal["server", "client"]) -> KeytabLogin:
    """The keytab, principal and service name of a Krb5LoginModule login; ConfigError names the key of a bad one."""
    where = "" if login.source == login.key else f"{login.source}: "
    module = login.module
    if module is None:
        raise ConfigError(login.key, "[hidden]", f"{where}expected com.sun.security.auth.module.Krb5LoginModule")
    options = module.options
    if options.get("useKeyTab", "").lower() != "true":
        raise ConfigError(login.key, "[hidden]", f"{where}the proxy logs in to Kerberos only with a keytab: set useKeyTab=true and keyTab")
    if role == "server" and options.get("storeKey", "").lower() != "true":
        raise ConfigError(login.key, "[hidden]", f"{where}a server's Krb5LoginModule needs storeKey=true, as a broker's does")
    keytab = options.get("keyTab", "")
    principal = options.get("principal", "")
    if not principal or principal == "*":
        raise ConfigError(login.key, "[hidden]", f"{where}the login needs principal, the Kerberos name of the key in keyTab")
    if not keytab:
        raise ConfigError(login.key, "[hidden]", f"{where}the login needs keyTab, the file holding the key of {principal}")
    path = keytab.removeprefix("FILE:")
    if not os.path.isfile(path) or not os.access(path, os.R_OK):
        raise ConfigError(login.key, keytab, f"{where}keyTab is not a readable file")
    try:
        KerberosName.parse(principal)
    except ValueError as exc:
        raise ConfigError(login.key, principal, f"{where}{exc}") from None
    key, configured = setting(props, listener, SERVICE_NAME_KEY)
    in_jaas = options.get("serviceName")
    if configured and in_jaas and configured != in_jaas:
        raise ConfigError(key, configured, f"Conflicting serviceName values found in JAAS and Kafka configs value in JAAS file {in_jaas}")
    service = configured or in_jaas
    if not service:
        raise ConfigError(key, configured, f"No serviceName defined in either JAAS ({login.source}) or Kafka config")
    return KeytabLogin(principal, path, service, login.source)
