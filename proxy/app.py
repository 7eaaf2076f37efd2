"""Wiring of the proxy: upstream connection, listeners, audit sink."""

import logging
from dataclasses import dataclass, field

import trio

from proxy.audit import AuditLog
from proxy.config import ProxyConfig
from proxy.connection_limits import ConnectionTracker
from proxy.listener_config import ListenerConfig
from proxy.server import serve_listener
from proxy.session import ProxyService
from proxy.upstream import Upstream

log = logging.getLogger(__name__)


@dataclass
class RunningProxy:
    service: ProxyService
    listeners: list[ListenerConfig]
    tracker: ConnectionTracker = field(default_factory=ConnectionTracker)

    def listener(self, name: str) -> ListenerConfig:
        return next(item for item in self.listeners if item.name == name.upper())


async def run_proxy(config: ProxyConfig, *, task_status: trio.TaskStatus[RunningProxy] = trio.TASK_STATUS_IGNORED) -> None:
    audit = AuditLog(config.audit_log_dir, config.node_id)
    upstream = Upstream(config.upstream)
    read_upstream = Upstream(config.read_upstream) if config.read_upstream else None
    service = ProxyService(config, upstream, audit, read_upstream=read_upstream)
    tracker = ConnectionTracker()  # one for all listeners: per-IP and process-wide limits span them
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(upstream.run)
            if read_upstream is not None:
                await nursery.start(read_upstream.run)
            bound = []
            for listener in config.listeners:
                bound.append(
                    await nursery.start(
                        lambda task_status, listener=listener: serve_listener(
                            listener,
                            service.handle_connection,
                            transport=config.transport,
                            tracker=tracker,
                            on_refused=service.refusals,
                            task_status=task_status,
                        )
                    )
                )
            task_status.started(RunningProxy(service, bound, tracker))
    finally:
        audit.close()
        log.info("proxy stopped; audit files published in %s", config.audit_log_dir)
