from collections.abc import AsyncIterator

import pytest
import trio

from proxy.audit.pipeline import AuditLog
from proxy.forward.service import ProxyService
from tests.audit_records import assert_valid
from tests.proxy.forward.harness import FakeUpstream, ListSink, Proxy, config


@pytest.fixture
async def proxy() -> AsyncIterator[Proxy]:
    """A ProxyService with a fake controller connection and an in-memory audit; connections are cancelled at the end."""
    cfg = config()
    sink = ListSink()
    audit = AuditLog([sink])
    upstream = FakeUpstream(cfg.upstream)
    service = ProxyService(cfg.service(), upstream, audit)  # type: ignore[arg-type]  # the fake has Upstream's surface
    async with trio.open_nursery() as outer:
        await outer.start(audit.run)
        async with trio.open_nursery() as connections:
            yield Proxy(cfg, service, upstream, sink, connections)
            connections.cancel_scope.cancel()
        await audit.aclose(5.0)
    # Every record the service wrote, including the disconnects of cancelled connections, matches the JSON Schema.
    assert_valid(sink.records)
