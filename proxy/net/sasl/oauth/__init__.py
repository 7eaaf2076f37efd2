"""SASL/OAUTHBEARER (RFC 7628, KIP-768): one module per job.

- `exchange`: the SASL messages and both sides' exchanges, without IO;
- `mechanism`: the registry's mechanism (a listener's server side, the proxy's own login);
- `validator`: a client's token checked as Kafka's broker checks it;
- `login`: the proxy's own token, fetched and refreshed as Kafka's client does;
- `http`: the bounded HTTP/1.1 and `file:` reads both of those make.
"""
