"""Where the job writes (docs/audit-job.md, "Output layout")."""

from __future__ import annotations

from dataclasses import dataclass

REPORT_NAMES = (
    "requests",
    "who_did_what",
    "denials",
    "denial_ranking",
    "bursts",
    "sensitive_changes",
    "impersonation",
    "unusual_listeners",
    "first_seen_pairs",
    "intents_without_outcome",
    "latency",
)


@dataclass(frozen=True)
class Layout:
    root: str

    def _join(self, *parts: str) -> str:
        return "/".join([self.root.rstrip("/"), *parts])

    @property
    def records(self) -> str:
        """The clean, de-duplicated records (Parquet, partitioned by ``date``): the store reports read."""
        return self._join("records")

    @property
    def quarantine(self) -> str:
        """Malformed lines as JSON lines ``{origin, problem, value}``; incremental runs add ``batch=<n>/``."""
        return self._join("quarantine")

    def report(self, name: str) -> str:
        return self._join("reports", name)

    def whatif(self, name: str) -> str:
        return self._join("whatif", name)

    def acls(self, name: str) -> str:
        """ACL hygiene's outputs (spark_audit/acl_hygiene.py): Parquet tables, the minimal ACLs and kafka-acls scripts."""
        return self._join("acls", name)

    def work(self, name: str) -> str:
        """Intermediate Parquet the job reads back instead of caching (replaced by each run)."""
        return self._join("_work", name)

    def table(self, name: str) -> str:
        """A table the reports read, kept between runs (spark_audit/tables.py), partitioned by ``date``."""
        return self._join("_tables", name)

    @property
    def table_state(self) -> str:
        """The dates of the kept tables that no longer follow the store (spark_audit/table_state.py)."""
        return self._join("_tables", "state.json")

    @property
    def default_checkpoint(self) -> str:
        return self._join("_checkpoint")

    @property
    def summary(self) -> str:
        return self._join("summary.json")

    @property
    def html(self) -> str:
        return self._join("report.html")
