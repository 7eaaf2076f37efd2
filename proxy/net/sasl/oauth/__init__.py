"""SASL/OAUTHBEARER (RFC 7628, KIP-768): one module per job.

- `exchange`: the SASL messages and both sides' exchanges, without IO;
- `settings`: the keys of a listener's validation and of the proxy's own login, and the URL allow-list;
- `jwks`: the keys a listener trusts, parsed and kept fresh;
- `claims`: a token's claims, checked once for both sides;
- `validator`: a client's token checked as Kafka's broker checks it;
- `login`: the proxy's own token, fetched and refreshed as Kafka's client does;
- `http`: the bounded HTTP/1.1 and `file:` reads of the JWKS and the token endpoint;
- `mechanism`: the registry's mechanism, assembled from the above.
"""
