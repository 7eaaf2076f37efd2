"""Audit records (CloudEvents 1.0, see docs/audit-schema.md) and their file sink.

Records go to a file under `<dir>/.staging/`; a complete file is renamed into
`<dir>/` on rotation and on close, so readers only ever see whole files.
"""

import datetime
import json
import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from proxy.metrics import ProxyMetrics

EVENT_TYPE = "io.github.kafka-envelope-proxy.request"
SCHEMA_VERSION = 1


def utc_now() -> str:
    now = datetime.datetime.now(datetime.UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def make_record(node_id: int, subject: str | None, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "specversion": "1.0",
        "id": str(uuid.uuid4()),
        "type": EVENT_TYPE,
        "source": f"envelope-proxy/{node_id}",
        "time": utc_now(),
        "subject": subject,
        "datacontenttype": "application/json",
        "schemaversion": SCHEMA_VERSION,
        "data": data,
    }


class AuditLog:
    def __init__(
        self, directory: str | Path, node_id: int, *, max_file_bytes: int = 64 * 1024 * 1024, metrics: "ProxyMetrics | None" = None
    ) -> None:
        self.metrics = metrics
        self.directory = Path(directory)
        self.staging = self.directory / ".staging"
        self.staging.mkdir(parents=True, exist_ok=True)
        self.node_id = node_id
        self.max_file_bytes = max_file_bytes
        self.records_written = 0
        self._sequence = 0
        self._file: TextIO | None = None
        self._path: Path | None = None
        self._size = 0
        self._recover_staged()

    def _recover_staged(self) -> None:
        """Files left in staging by a crash are complete up to their last line: publish them."""
        for leftover in sorted(self.staging.glob("*.jsonl")):
            os.replace(leftover, self.directory / leftover.name)

    def _open(self) -> TextIO:
        if self._file is None:
            self._sequence += 1
            stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S%f")
            self._path = self.staging / f"audit-{self.node_id}-{stamp}-{self._sequence:06d}.jsonl"
            self._file = open(self._path, "a", encoding="utf-8")
            self._size = 0
        return self._file

    def write(self, record: dict[str, Any]) -> None:
        """Append one record and flush it to the OS before returning."""
        line = json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n"
        try:
            handle = self._open()
            handle.write(line)
            handle.flush()
        except OSError:
            if self.metrics is not None:
                self.metrics.audit_write_errors.inc()
            raise
        self._size += len(line)
        self.records_written += 1
        if self.metrics is not None:
            self.metrics.audit_records.labels(str(record.get("data", {}).get("stage"))).inc()
        if self._size >= self.max_file_bytes:
            self.rotate()

    def rotate(self) -> None:
        if self._file is None or self._path is None:
            return
        self._file.close()
        os.replace(self._path, self.directory / self._path.name)
        if self.metrics is not None:
            self.metrics.audit_files_published.inc()
        self._file = None
        self._path = None

    def close(self) -> None:
        self.rotate()
