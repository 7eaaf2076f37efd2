"""The proxy's Prometheus metrics (documented in docs/metrics.md).

One registry per running proxy, so tests and several proxies in one process
do not share counters. Labels are bounded sets (listener names from the
configuration, API names, fixed outcome and cause words): never a principal
or an address, whose number is unbounded.
"""

import bisect
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

PREFIX = "envelope_proxy"
OUTCOMES = ("forwarded", "local", "read", "refused", "failed")
CONNECTION_RESULTS = ("connected", "failed")
REFUSAL_CAUSES = ("ip_filter", "limit", "tls", "auth", "protocol_error", "privileged_principal", "proxy_protocol_untrusted", "proxy_protocol_header")
# Admin calls take milliseconds to seconds; Kafka's request-time buckets span the same range.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
AUDIT_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


# -- the request path's hottest series: plain numbers, handed to Prometheus when it scrapes ----------
#
# prometheus-client guards every value with a lock, since any thread may update it: a counter's
# `inc` costs about 0.5 µs and a histogram's `observe` 1.2 µs on an idle machine, and several
# times that on a busy one. A forwarded request updates eleven values in these series (its count
# and its three KIP-938 times; for each of its two audit records the commit's batch size and
# time and the records counter). All those updates happen on trio's thread, so here they are
# plain numbers, and a collector, prometheus-client's documented way to expose values it does not
# hold, turns them into the same families at scrape time: the same names, help, labels, buckets,
# `_total`, `_count`, `_sum` and `_created` samples.
#
# Only for series updated on trio's thread alone: series that worker threads update stay
# prometheus-client's own.


def _le(bound: float) -> str:
    text: str = floatToGoString(bound)  # type: ignore[no-untyped-call]  # untyped in prometheus-client
    return text


class PlainCounter:
    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class PlainHistogram:
    __slots__ = ("bounds", "counts", "created", "sum")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, value: float) -> None:
        # The first bucket whose upper bound is at least the value (Prometheus's `le`); the last is +Inf.
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.sum += value


Child = TypeVar("Child", PlainCounter, PlainHistogram)


class _Family(Collector, Generic[Child]):
    """One metric family with its labelled children, registered in `registry`."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.children: dict[tuple[str, ...], Child] = {}
        registry.register(self)

    def labels(self, *values: str) -> Child:
        child = self.children.get(values)
        if child is None:
            if len(values) != len(self.labelnames):
                raise ValueError(f"{self.name} takes the labels {self.labelnames}, got {values}")
            child = self.children[values] = self._child()
        return child

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def _child(self) -> Child:
        raise NotImplementedError

    def _family(self) -> Metric:
        raise NotImplementedError


class PlainCounters(_Family[PlainCounter]):
    """A counter family (exposed as `<name>_total` and `<name>_created`)."""

    def _child(self) -> PlainCounter:
        return PlainCounter()

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        for values, child in list(self.children.items()):
            family.add_metric(values, child.value, created=child.created)
        yield family


class PlainHistograms(_Family[PlainHistogram]):
    """A histogram family; without label names its one series exists from the start, as prometheus-client's."""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry, *, buckets: Sequence[float]
    ) -> None:
        bounds = tuple(float(bound) for bound in buckets)
        self.bounds = bounds if bounds[-1] == float("inf") else (*bounds, float("inf"))
        super().__init__(name, documentation, labelnames, registry)
        if not self.labelnames:
            self.labels()

    def _child(self) -> PlainHistogram:
        return PlainHistogram(self.bounds)

    def observe(self, value: float) -> None:
        """The family without labels: its one series."""
        self.children[()].observe(value)

    def _family(self) -> HistogramMetricFamily:
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        for values, child in list(self.children.items()):
            cumulative, buckets = 0, []
            for bound, count in zip(child.bounds, child.counts, strict=True):
                cumulative += count
                buckets.append((_le(bound), float(cumulative)))
            family.add_metric(values, buckets, child.sum)
            family.add_sample(f"{self.name}_created", dict(zip(self.labelnames, values, strict=True)), child.created)
        yield family


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
        # A request's four series, found with one lookup instead of four; the label values are bounded sets (see above).
        self._request_series: dict[tuple[str, str, str], RequestSeries] = {}
        r = self.registry
        # The series every request updates are plain numbers on trio's thread, exposed at scrape (see PlainCounters).
        self.requests = PlainCounters(
            f"{PREFIX}_requests", "Requests by listener, API and outcome", ["listener", "api", "outcome"], registry=r
        )
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
            f"{PREFIX}_reauthentications",
            "Re-authentications (KIP-368) by mechanism and result",
            ["listener", "mechanism", "result"],
            registry=r,
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

    def count_request(self, listener: str, api: str, outcome: str, *, forwarded: bool, elapsed: float, queued: float) -> None:
        """One answered request, by listener, API and outcome; forwarded ones also split their time in seconds
        into the wait for a controller connection and the rest (KIP-938's queue and remote time)."""
        series = self.request_series(listener, api, outcome)
        series.count.inc()
        if forwarded:
            queued = min(queued, elapsed)
            series.queue_time.observe(queued)
            series.upstream_time.observe(elapsed - queued)
            series.total_time.observe(elapsed)

    def audit_records_of(self, sink: str, stage: str) -> PlainCounter:
        return self.audit_records.labels(sink, stage)


def metric_names() -> frozenset[str]:
    """Every series name the proxy exports (counters with _total), for checking dashboards and alert rules."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    names: set[str] = set()
    for family in ProxyMetrics().registry.collect():
        names.update(family.name + suffix for suffix in suffixes.get(family.type, ("",)))
    return frozenset(names)
