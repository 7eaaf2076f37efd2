"""The JAAS login modules Kafka reads each SASL mechanism's options from, and the text of a PLAIN login.

Apart from the JAAS parser (proxy/net/sasl/jaas.py), so that whoever writes a configuration (the embedded demo,
the test tools) names a module without loading the parser.
"""

from collections.abc import Mapping

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
OAUTHBEARER_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
GSSAPI_LOGIN_MODULES = ("com.sun.security.auth.module.Krb5LoginModule", "com.ibm.security.auth.module.Krb5LoginModule")

MECHANISM_LOGIN_MODULES: Mapping[str, tuple[str, ...]] = {
    "PLAIN": (PLAIN_LOGIN_MODULE,),
    "SCRAM-SHA-256": (SCRAM_LOGIN_MODULE,),
    "SCRAM-SHA-512": (SCRAM_LOGIN_MODULE,),
    "OAUTHBEARER": (OAUTHBEARER_LOGIN_MODULE,),
    "GSSAPI": GSSAPI_LOGIN_MODULES,
}
"""The login module class Kafka reads each mechanism's options from."""


def plain_jaas(**options: str) -> str:
    """`sasl.jaas.config` of a PLAIN login: `username` and `password` for a client, `user_<name>` entries for a server.
    The values are quoted as they are: no quote or backslash in them."""
    rendered = " ".join(f'{key}="{value}"' for key, value in options.items())
    return f"{PLAIN_LOGIN_MODULE} required {rendered};"
