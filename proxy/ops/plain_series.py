"""The request path's hottest series, kept as plain numbers and handed to Prometheus when it scrapes.

prometheus-client guards every value with a lock, since any thread may update it: a counter's
`inc` costs about 0.5 µs and a histogram's `observe` 1.2 µs on an idle machine, and several
times that on a busy one. A forwarded request updates eleven values in these series (its count
and its three KIP-938 times; for each of its two audit records the commit's batch size and
time and the records counter). All those updates happen on trio's thread, so here they are
plain numbers, and a collector, prometheus-client's documented way to expose values it does not
hold, turns them into the same families at scrape time: the same names, help, labels, buckets,
`_total`, `_count`, `_sum` and `_created` samples.

Only for series updated on trio's thread alone: series that worker threads update stay
prometheus-client's own.
"""

import bisect
import time
from collections.abc import Iterator, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


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


class _Family(Collector):
    """One metric family with its labelled children, registered in `registry`."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        registry.register(self)

    def _labels(self, values: tuple[str, ...]) -> None:
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes the labels {self.labelnames}, got {values}")

    def describe(self) -> Iterator[Metric]:
        yield self._family()

    def _family(self) -> Metric:
        raise NotImplementedError


class PlainCounters(_Family):
    """A counter family (exposed as `<name>_total` and `<name>_created`)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry) -> None:
        super().__init__(name, documentation, labelnames, registry)
        self.children: dict[tuple[str, ...], PlainCounter] = {}

    def labels(self, *values: str) -> PlainCounter:
        child = self.children.get(values)
        if child is None:
            self._labels(values)
            child = self.children[values] = PlainCounter()
        return child

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        for values, child in list(self.children.items()):
            family.add_metric(values, child.value, created=child.created)
        yield family


class PlainHistograms(_Family):
    """A histogram family; without label names its one series exists from the start, as prometheus-client's."""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry, *, buckets: Sequence[float]
    ) -> None:
        super().__init__(name, documentation, labelnames, registry)
        bounds = tuple(float(bound) for bound in buckets)
        self.bounds = bounds if bounds[-1] == float("inf") else (*bounds, float("inf"))
        self.children: dict[tuple[str, ...], PlainHistogram] = {}
        if not self.labelnames:
            self.children[()] = PlainHistogram(self.bounds)

    def labels(self, *values: str) -> PlainHistogram:
        child = self.children.get(values)
        if child is None:
            self._labels(values)
            child = self.children[values] = PlainHistogram(self.bounds)
        return child

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


__all__ = ["PlainCounter", "PlainCounters", "PlainHistogram", "PlainHistograms"]
