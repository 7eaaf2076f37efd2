"""The trio service: listeners, TLS, SASL, sessions, the request path, upstream, audit, operations (the command that starts it: envelope_proxy/)."""
