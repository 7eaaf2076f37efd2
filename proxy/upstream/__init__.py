"""The proxy's side of the controller quorum: addresses, one connection (link), discovery of the
active controller, and the pool of connections the request path sends through.

A layer of its own below `forward`: it knows the Kafka protocol of the proxy's own connections
(ApiVersions, SASL, DescribeCluster, DescribeQuorum) and nothing of clients or the audit.
"""
