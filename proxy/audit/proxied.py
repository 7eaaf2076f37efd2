"""`requestMetadata.proxiedBy`: the load balancer a client came through (PROXY protocol), as the audit names it.

`clientAddress` and `clientPort` are the client the load balancer's header named; this keeps the load balancer's
own address and what else its header said (docs/audit-schema.md). Null for a connection that came directly.
"""

from typing import Any

from proxy.net.addresses import ProxiedBy


def proxied_by_record(proxied_by: ProxiedBy | None) -> dict[str, Any] | None:
    if proxied_by is None:
        return None
    has_tls = proxied_by.tls_version is not None or proxied_by.tls_common_name is not None
    return {
        "address": proxied_by.host,
        "port": proxied_by.port,
        "version": proxied_by.version,
        "command": proxied_by.command,
        "authority": proxied_by.authority,
        "tls": {
            "version": proxied_by.tls_version,
            "commonName": proxied_by.tls_common_name,
            "certificateVerified": proxied_by.tls_certificate_verified,
        }
        if has_tls
        else None,
    }
