"""The plain series expose, sample for sample, what prometheus-client's own Counter and Histogram would."""

import re

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from proxy.ops.metrics import AUDIT_BATCH_BUCKETS, LATENCY_BUCKETS, PlainCounters, PlainHistograms, ProxyMetrics, metric_names

OBSERVED = [0.0, 0.0004, 0.001, 0.0010001, 0.003, 0.01, 0.7, 1.0, 29.9, 30.0, 31.0, 1e9]


def _without_created(text: str) -> str:
    """The exposition without its `_created` values, which are the time each series was made."""
    return re.sub(r"(_created\{?[^ ]*) [0-9.e+]+", r"\1 T", text)


def test_a_labelled_histogram_and_counter_match_prometheus_clients() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    their_histogram = Histogram("t_seconds", "a time", ["api"], buckets=LATENCY_BUCKETS, registry=theirs)
    our_histogram = PlainHistograms("t_seconds", "a time", ["api"], ours, buckets=LATENCY_BUCKETS)
    their_counter = Counter("t_requests", "requests", ["listener", "api"], registry=theirs)
    our_counter = PlainCounters("t_requests", "requests", ["listener", "api"], ours)
    for index, value in enumerate(OBSERVED):
        api = "CreateTopics" if index % 3 else "DeleteTopics"
        their_histogram.labels(api).observe(value)
        our_histogram.labels(api).observe(value)
        their_counter.labels("CLIENT", api).inc(index)
        our_counter.labels("CLIENT", api).inc(index)
    theirs_text, ours_text = generate_latest(theirs).decode(), generate_latest(ours).decode()
    assert "_created" in ours_text
    assert _without_created(ours_text) == _without_created(theirs_text)


def test_an_unlabelled_histogram_exists_before_its_first_observation() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    their_histogram = Histogram("b_records", "a batch", buckets=AUDIT_BATCH_BUCKETS, registry=theirs)
    our_histogram = PlainHistograms("b_records", "a batch", [], ours, buckets=AUDIT_BATCH_BUCKETS)
    assert _without_created(generate_latest(ours).decode()) == _without_created(generate_latest(theirs).decode())
    for value in (1, 1, 3, 600):
        their_histogram.observe(value)
        our_histogram.observe(value)
    assert _without_created(generate_latest(ours).decode()) == _without_created(generate_latest(theirs).decode())


def test_wrong_label_count_is_refused() -> None:
    family = PlainCounters("x", "x", ["a", "b"], CollectorRegistry())
    with pytest.raises(ValueError, match="takes the labels"):
        family.labels("only-one")


def test_the_proxys_hot_series_keep_their_names() -> None:
    names = metric_names()
    for name in (
        "envelope_proxy_requests_total",
        "envelope_proxy_request_total_time_seconds_bucket",
        "envelope_proxy_request_queue_time_seconds_sum",
        "envelope_proxy_request_upstream_time_seconds_count",
        "envelope_proxy_audit_commit_batch_records_bucket",
        "envelope_proxy_audit_commit_seconds_bucket",
    ):
        assert name in names
    metrics = ProxyMetrics()
    metrics.request_series("CLIENT", "CreateTopics", "forwarded").total_time.observe(0.002)
    assert (
        metrics.registry.get_sample_value("envelope_proxy_request_total_time_seconds_bucket", {"api": "CreateTopics", "le": "0.0025"})
        == 1.0
    )
