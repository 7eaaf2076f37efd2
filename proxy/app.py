"""Wiring of the proxy: upstream connections, listeners, audit sink, operations endpoint, graceful drain."""

import logging
from dataclasses import dataclass, field

import trio

from proxy.audit.settings import audit_running, open_audit_log
from proxy.config import ProxyConfig
from proxy.forward.service import ProxyService
from proxy.forward.token_mirror import token_caches
from proxy.net.addresses import host_port
from proxy.net.limits import ConnectionTracker
from proxy.net.listener import serve_listener
from proxy.net.settings import ListenerConfig
from proxy.ops.http import OperationsEndpoint, serve_operations
from proxy.ops.metrics import ProxyMetrics
from proxy.upstream.cluster_identity import ClusterIdentity
from proxy.upstream.pool import ControllerPool, UpstreamEvent

log = logging.getLogger(__name__)


@dataclass
class RunningProxy:
    service: ProxyService
    listeners: list[ListenerConfig]
    tracker: ConnectionTracker = field(default_factory=ConnectionTracker)
    metrics_port: int | None = None
    bound: bool = False
    draining: bool = False

    def listener(self, name: str) -> ListenerConfig:
        return next(item for item in self.listeners if item.name == name.upper())

    def address(self, name: str) -> str:
        """host:port a client dials for the listener `name`: its advertised host (an IPv6 one in brackets) and bound port."""
        listener = self.listener(name)
        return host_port(listener.advertised_host, listener.port)

    def ready(self) -> bool:
        """Listeners bound, an active controller known and connected with known ApiVersions, and not shutting down."""
        upstream = self.service.upstream
        return self.bound and not self.draining and upstream.connected and upstream.controller_ranges is not None


async def run_proxy(
    config: ProxyConfig,
    *,
    shutdown: trio.Event | None = None,
    task_status: trio.TaskStatus[RunningProxy] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve until cancelled, or until `shutdown` is set: then drain (stop accepting, let requests in
    flight finish and be audited, for at most `shutdown.timeout.ms`) and return."""
    metrics = ProxyMetrics()
    audit = open_audit_log(config.audit, config.audit_log_dir, config.node_id, metrics)
    # The controller connection reports to the service on one bounded channel.
    upstream_events, upstream_events_received = trio.open_memory_channel[UpstreamEvent](16)
    # One cluster id for the controllers and the read upstream: a node of another cluster is not used.
    identity = ClusterIdentity(config.cluster_id)
    upstream = ControllerPool(config.upstream, events=upstream_events, identity=identity)
    read_upstream = ControllerPool(config.read_upstream, identity=identity) if config.read_upstream else None
    service = ProxyService(config.service(), upstream, audit, read_upstream=read_upstream, metrics=metrics)
    tracker = ConnectionTracker()  # one for all listeners: per-IP and process-wide limits span them
    running = RunningProxy(service, [], tracker)
    metrics.ready.set_function(lambda: 1.0 if running.ready() else 0.0)
    stop_accepting = trio.Event()
    try:
        # The audit writer outlives the sessions: their last records (outcomes, disconnects) are committed on the way out.
        async with audit_running(audit, config.shutdown_timeout), trio.open_nursery() as nursery:
            if config.metrics_listen is not None:
                host, port = config.metrics_listen
                running.metrics_port = await nursery.start(
                    serve_operations, OperationsEndpoint(metrics.registry, running.ready), host, port
                )
            nursery.start_soon(service.follow_upstream, upstream_events_received)
            await nursery.start(upstream.run)
            if read_upstream is not None:
                await nursery.start(read_upstream.run)
            for listener in config.listeners:
                running.listeners.append(
                    await nursery.start(
                        lambda task_status, listener=listener: serve_listener(
                            listener,
                            service.handle_connection,
                            transport=config.transport,
                            tracker=tracker,
                            on_refused=service.on_refused,
                            on_error=service.on_connection_error,
                            stop_accepting=stop_accepting,
                            task_status=task_status,
                        )
                    )
                )
            caches = token_caches(config.listeners)
            if caches:
                await nursery.start(service.tokens.run, caches)
            running.bound = True
            task_status.started(running)
            if shutdown is None:
                await trio.sleep_forever()
            else:
                await shutdown.wait()
                await _drain(running, stop_accepting, config.shutdown_timeout)
                nursery.cancel_scope.cancel()
    finally:
        log.info("proxy stopped; audit files published in %s", config.audit_log_dir)


async def _drain(running: RunningProxy, stop_accepting: trio.Event, timeout: float) -> None:
    running.draining = True  # /readyz turns false first, so load balancers stop sending
    stop_accepting.set()
    running.service.drain()
    with trio.move_on_after(timeout) as waited:
        await running.service.wait_drained()
    if waited.cancelled_caught:
        log.warning("shutdown.timeout.ms passed with %d sessions still busy; closing them", len(running.service.sessions))
    else:
        log.info("drained: every request in flight was answered")
