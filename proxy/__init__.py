"""The trio service: listeners, SASL, sessions, upstream, audit, CLI."""
