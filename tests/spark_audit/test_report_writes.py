"""Which dates of the intents-without-outcome report a rerun rewrites (spark_audit/report_writes.py)."""

from __future__ import annotations

from datetime import UTC, date, datetime

from spark_audit.report_writes import intents_dates


def _us(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1_000_000)


def test_the_dates_between_the_two_instants_and_the_day_after_join_the_rewritten_ones() -> None:
    rewritten = frozenset({date(2026, 11, 20), date(2026, 11, 21), date(2026, 11, 22)})
    # the newest record moved from the 21st to the 24th: every date an intent may have crossed the instant on
    got = intents_dates(rewritten, _us("2026-11-21T23:59:00"), _us("2026-11-24T10:00:00"))
    assert got == rewritten | {date(2026, 11, d) for d in (21, 22, 23, 24, 25)}


def test_an_instant_that_moved_back_rewrites_the_same_span() -> None:
    # a longer grace on this run: intents the last run counted may now be in flight again
    got = intents_dates(frozenset(), _us("2026-11-24T10:00:00"), _us("2026-11-23T10:00:00"))
    assert got == {date(2026, 11, d) for d in (23, 24, 25)}


def test_without_a_kept_instant_or_a_partial_rewrite_the_report_is_written_whole() -> None:
    assert intents_dates(None, _us("2026-11-21T00:00:00"), _us("2026-11-22T00:00:00")) is None
    assert intents_dates(frozenset(), None, _us("2026-11-22T00:00:00")) is None
    assert intents_dates(frozenset(), _us("2026-11-21T00:00:00"), None) is None
