"""`log.format`: text lines for people, or one JSON object per line for log pipelines."""

import json
import logging

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def apply_log_format(name: str) -> None:
    """Switch every handler of the root logger to `name` (text or json); ValueError for anything else."""
    if name not in FORMATS:
        raise ValueError(f"expected one of {', '.join(FORMATS)}")
    formatter: logging.Formatter = JsonFormatter() if name == "json" else logging.Formatter(TEXT_FORMAT)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(formatter)
