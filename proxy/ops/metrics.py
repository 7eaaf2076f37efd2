"""The proxy's Prometheus metrics (documented in docs/metrics.md).

One registry per running proxy, so tests and several proxies in one process
do not share counters. Labels are bounded sets (listener names from the
configuration, API names, fixed outcome and cause words): never a principal
or an address, whose number is unbounded.
"""

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from proxy.ops.plain_series import PlainCounter, PlainCounters, PlainHistogram, PlainHistograms

PREFIX = "envelope_proxy"
OUTCOMES = ("forwarded", "local", "read", "refused", "failed")
CONNECTION_RESULTS = ("connected", "failed")
REFUSAL_CAUSES = ("ip_filter", "limit", "tls", "auth", "protocol_error", "privileged_principal")
# Admin calls take milliseconds to seconds; Kafka's request-time buckets span the same range.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
AUDIT_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True, slots=True)
class RequestSeries:
    """The series one request updates, looked up once per (listener, API, outcome)."""

    count: PlainCounter
    queue_time: PlainHistogram
    upstream_time: PlainHistogram
    total_time: PlainHistogram


class ProxyMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        # labels() takes a lock and builds a key on every call, a few microseconds each, several times a request;
        # the label values are bounded sets (see above), so the children are kept.
        self._request_series: dict[tuple[str, str, str], RequestSeries] = {}
        self._audit_record_counters: dict[tuple[str, str], PlainCounter] = {}
        r = self.registry
        # The series every request updates are plain numbers on trio's thread, exposed at scrape (see plain_series).
        self.requests = PlainCounters(f"{PREFIX}_requests", "Requests by listener, API and outcome", ["listener", "api", "outcome"], registry=r)
        self.queue_time = PlainHistograms(
            f"{PREFIX}_request_queue_time_seconds",
            "Time a forwarded request waited before it was sent upstream (KIP-938 split)",
            ["api"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.upstream_time = PlainHistograms(
            f"{PREFIX}_request_upstream_time_seconds",
            "Time from sending a request upstream to its answer",
            ["api"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.total_time = PlainHistograms(
            f"{PREFIX}_request_total_time_seconds",
            "Time from reading a request to writing its answer",
            ["api"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.forwarding_queue = Gauge(
            f"{PREFIX}_forwarding_queue_length",
            "Forwarded requests waiting for a controller connection or in flight (KIP-938 QueueLength)",
            registry=r,
        )
        self.connections_active = Gauge(f"{PREFIX}_connections_active", "Open client connections", ["listener"], registry=r)
        self.connections_accepted = Counter(f"{PREFIX}_connections_accepted", "Client connections accepted", ["listener"], registry=r)
        self.connections_closed = Counter(f"{PREFIX}_connections_closed", "Client connections closed", ["listener"], registry=r)
        self.connections_refused = Counter(
            f"{PREFIX}_connections_refused", "Client connections refused, by cause", ["listener", "cause"], registry=r
        )
        self.authentications = Counter(
            f"{PREFIX}_authentications", "Logins by mechanism and result", ["listener", "mechanism", "result"], registry=r
        )
        self.reauthentications = Counter(
            f"{PREFIX}_reauthentications", "Re-authentications (KIP-368) by mechanism and result", ["listener", "mechanism", "result"], registry=r
        )
        self.connections_expired = Counter(
            f"{PREFIX}_connections_expired",
            "Connections closed because a request came after the session expired without re-authentication (KIP-368)",
            ["listener"],
            registry=r,
        )
        self.upstream_connected = Gauge(f"{PREFIX}_upstream_connected", "1 while an active controller is known and reachable", registry=r)
        self.upstream_controller_id = Gauge(
            f"{PREFIX}_upstream_active_controller_id", "Node id of the active controller (-1 while none is known)", registry=r
        )
        self.upstream_reconnects = Counter(
            f"{PREFIX}_upstream_reconnects", "Controller connections lost, or forgotten on NOT_CONTROLLER", registry=r
        )
        self.upstream_connection_attempts = Counter(
            f"{PREFIX}_upstream_connection_attempts",
            "Connections the proxy tried to open to the controllers (discovery ones included), by result (connected, failed)",
            ["result"],
            registry=r,
        )
        for result in CONNECTION_RESULTS:  # both series exist from the start, so rate() sees the first failure
            self.upstream_connection_attempts.labels(result)
        self.upstream_reauthentications = Counter(
            f"{PREFIX}_upstream_reauthentications",
            "Times a controller connection logged in again on the same connection before its session expired (KIP-368)",
            registry=r,
        )
        self.upstream_request_retries = Counter(
            f"{PREFIX}_upstream_request_retries",
            "Requests sent to the controller again, after their backoff, because their connection was lost or could not be opened",
            registry=r,
        )
        self.upstream_requests_backing_off = Gauge(
            f"{PREFIX}_upstream_requests_backing_off",
            "Requests waiting out their backoff before they are sent to the controller again",
            registry=r,
        )
        self.upstream_apiversions_refreshes = Counter(
            f"{PREFIX}_upstream_apiversions_refreshes", "ApiVersions fetched from the controller", registry=r
        )
        self.upstream_not_controller_retries = Counter(
            f"{PREFIX}_upstream_not_controller_retries", "Envelopes re-sent after NOT_CONTROLLER", registry=r
        )
        self.audit_records = PlainCounters(
            f"{PREFIX}_audit_records", "Audit records committed, by sink (file, kafka, spool) and stage", ["sink", "stage"], r
        )
        self.audit_write_errors = Counter(
            f"{PREFIX}_audit_write_errors",
            "Audit records in write attempts that failed, by sink (retries count again)",
            ["sink"],
            registry=r,
        )
        self.audit_records_lost = Counter(
            f"{PREFIX}_audit_records_lost",
            "Audit records given up on (audit.on.failure=reject, or a sink still failing at shutdown)",
            registry=r,
        )
        self.audit_rejected_requests = Counter(
            f"{PREFIX}_audit_rejected_requests",
            "Requests answered with an error, not forwarded, because their intent record failed",
            registry=r,
        )
        self.audit_files_published = Counter(f"{PREFIX}_audit_files_published", "Audit files renamed out of staging", registry=r)
        self.audit_queue_depth = Gauge(f"{PREFIX}_audit_queue_depth", "Audit records waiting for the writer", registry=r)
        self.audit_commit_batch = PlainHistograms(
            f"{PREFIX}_audit_commit_batch_records",
            "Records committed together (one write, flush or fsync, one Kafka delivery round)",
            [],
            buckets=AUDIT_BATCH_BUCKETS,
            registry=r,
        )
        self.audit_commit_time = PlainHistograms(
            f"{PREFIX}_audit_commit_seconds", "Time a sink took to commit one batch", ["sink"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.audit_spooled = Counter(f"{PREFIX}_audit_spooled_records", "Audit records written to the Kafka sink's spool", registry=r)
        self.audit_spool_records = Gauge(f"{PREFIX}_audit_spool_records", "Audit records in the spool, waiting for Kafka", registry=r)
        self.audit_spool_bytes = Gauge(f"{PREFIX}_audit_spool_bytes", "Size of the spool's segment files", registry=r)
        self.audit_spooling = Gauge(f"{PREFIX}_audit_spooling", "1 while audit records go to the spool instead of Kafka", registry=r)
        self.ready = Gauge(
            f"{PREFIX}_ready", "1 when listeners are bound and an active controller is known, connected, with known ApiVersions", registry=r
        )


    def request_series(self, listener: str, api: str, outcome: str) -> RequestSeries:
        key = (listener, api, outcome)
        series = self._request_series.get(key)
        if series is None:
            series = RequestSeries(
                self.requests.labels(listener, api, outcome),
                self.queue_time.labels(api),
                self.upstream_time.labels(api),
                self.total_time.labels(api),
            )
            self._request_series[key] = series
        return series

    def audit_records_of(self, sink: str, stage: str) -> PlainCounter:
        counter = self._audit_record_counters.get((sink, stage))
        if counter is None:
            counter = self._audit_record_counters[(sink, stage)] = self.audit_records.labels(sink, stage)
        return counter


def metric_names() -> frozenset[str]:
    """Every series name the proxy exports (counters with _total), for checking dashboards and alert rules."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    names: set[str] = set()
    for family in ProxyMetrics().registry.collect():
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
    return frozenset(names)
