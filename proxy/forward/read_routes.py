"""Every read the proxy answers through its edge authorizer, by API key: one line each.

A new read is one module beside these (its `answer(path, ctx, listener, header, body) -> ReadResult`
and its `error_answer`, Kafka's getErrorResponse, with the shared pieces of proxy/forward/reads.py),
one line in each table here and its line in envelope/served.py; routing, the advertised versions and
the respond step follow from them.
"""

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from authz import RequestContext
from authz.admin_apis import ErrorAnswer
from envelope.apis import ApiKey
from envelope.header import RequestHeaderInfo
from envelope.served import Serving, check_served
from proxy.forward import read_cluster_gated, read_configs, read_metadata, read_tokens
from proxy.forward.reads import ReadPath, ReadResult
from proxy.net.settings import ListenerConfig

ReadRoute = Callable[[ReadPath, RequestContext, ListenerConfig, RequestHeaderInfo, Any], Awaitable[ReadResult]]

READ_ROUTES: Mapping[int, ReadRoute] = {
    ApiKey.METADATA: read_metadata.answer,
    ApiKey.DESCRIBE_CONFIGS: read_configs.answer,
    ApiKey.DESCRIBE_ACLS: read_cluster_gated.answer,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: read_cluster_gated.answer,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: read_cluster_gated.answer,
    ApiKey.DESCRIBE_DELEGATION_TOKEN: read_tokens.answer,
}

READ_ERROR_ANSWERS: Mapping[int, ErrorAnswer] = {
    ApiKey.METADATA: read_metadata.error_answer,
    ApiKey.DESCRIBE_CONFIGS: read_configs.error_answer,
    ApiKey.DESCRIBE_ACLS: read_cluster_gated.error_answer,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: read_cluster_gated.error_answer,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: read_cluster_gated.error_answer,
    ApiKey.DESCRIBE_DELEGATION_TOKEN: read_tokens.error_answer,
}
"""Kafka's getErrorResponse of each read (authz/admin_apis.py's ErrorAnswer, for the reads): what a broker answers
when its handler throws (proxy/forward/local_routes.py answers a read route that raises with it)."""

READ_APIS = frozenset(READ_ROUTES)
check_served("proxy/forward/read_routes.py READ_ROUTES", READ_APIS, Serving.READ)
check_served("proxy/forward/read_routes.py READ_ERROR_ANSWERS", frozenset(READ_ERROR_ANSWERS), Serving.READ)
CLUSTER_GATED_READS = frozenset(key for key, answer in READ_ROUTES.items() if answer is read_cluster_gated.answer)
