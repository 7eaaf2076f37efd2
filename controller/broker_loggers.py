"""BROKER_LOGGER: this process's Python loggers, seen and checked as Kafka's log4j loggers.

DescribeConfigs lists the loggers with their log4j level names, and
IncrementalAlterConfigs may set or unset one's level; this module names the
loggers and levels both ways and says why Kafka would refuse a change
(RuntimeLoggerManager's checks, in its words).
"""

import logging

from kio.schema.errors import ErrorCode

from controller.config_defs import kafka_configs
from controller.config_resources import ConfigProblem
from controller.java_values import java_text
from envelope.config_resources import OP_APPEND, OP_DELETE, OP_NAMES, OP_SET, OP_SUBTRACT

ROOT_LOGGER = "root"
TRACE = 5  # log4j's TRACE, below DEBUG: Python has no name for it
LOG4J_TO_PYTHON = {"TRACE": TRACE, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING, "ERROR": logging.ERROR, "FATAL": logging.CRITICAL}


def _log4j_level(level: int) -> str:
    """The log4j name of the highest log4j level a Python level reaches (anything below DEBUG is TRACE)."""
    for threshold, name in ((logging.CRITICAL, "FATAL"), (logging.ERROR, "ERROR"), (logging.WARNING, "WARN"), (logging.INFO, "INFO"), (logging.DEBUG, "DEBUG")):
        if level >= threshold:
            return name
    return "TRACE"


def python_loggers() -> dict[str, str]:
    """This process's loggers and their effective levels, named as log4j names them (root first)."""
    loggers = {ROOT_LOGGER: _log4j_level(logging.getLogger().getEffectiveLevel())}
    for name, logger in sorted(logging.Logger.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            loggers[name] = _log4j_level(logger.getEffectiveLevel())
    return loggers


def check_logger_change(logger: str, op: int, value: str | None) -> None:
    """RuntimeLoggerManager's checks of one change to a logger: ConfigProblem where Kafka refuses it."""
    levels = kafka_configs().log_levels
    if op == OP_SET:
        _logger_exists(logger)
        if value not in levels:
            raise ConfigProblem(
                ErrorCode.invalid_config,
                f"Cannot set the log level of {logger} to {java_text(value)} as it is not a supported log level. Valid log levels are {', '.join(levels)}",
            )
    elif op == OP_DELETE:
        _logger_exists(logger)
        if logger == ROOT_LOGGER:
            raise ConfigProblem(ErrorCode.invalid_request, f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")
    elif op in (OP_APPEND, OP_SUBTRACT):
        raise ConfigProblem(ErrorCode.invalid_request, f"{OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource")
    else:
        # Kafka switches over OpType.forId(op), which is null here: a NullPointerException, UNKNOWN_SERVER_ERROR.
        raise ConfigProblem(ErrorCode.unknown_server_error, "The server experienced an unexpected error when processing the request.")


def _logger_exists(logger: str) -> None:
    if logger not in python_loggers():
        raise ConfigProblem(ErrorCode.invalid_config, f"Logger {logger} does not exist!")
