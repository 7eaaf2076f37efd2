"""`envelope-proxy`: run, controller, demo, audit, check-config, scram, certs."""

import argparse
import contextlib
import errno
import json
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import trio

from controller.config import ControllerConfig, parse_controller_config
from controller.persistence import MetadataStoreError
from controller.server import EmbeddedController
from envelope_proxy import cli_help
from envelope_proxy.authz_cli import add_authz_parser, run_authz
from envelope_proxy.certs_cli import add_certs_parser, run_certs
from envelope_proxy.config_errors import explain
from envelope_proxy.config_keys import check_keys, plugin_keys
from envelope_proxy.demo import run_demo
from envelope_proxy.scram_cli import add_scram_parser, run_scram
from proxy.app import run_proxy
from proxy.config import ProxyConfig, parse_proxy_config
from proxy.net.tls.context import ReloadingServerContext
from proxy.net.tls.settings import listener_contexts
from proxy.ops.logging import apply_log_format
from proxy.properties import ConfigError, Properties, load_properties, recording_reads

PACKAGE = "kafka-envelope-proxy"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
log = logging.getLogger(__name__)


def package_version() -> str:
    try:
        return version(PACKAGE)
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def _setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO), format="%(asctime)s %(levelname)s %(name)s %(message)s", stream=sys.stderr
    )


def reload_tls(contexts: Sequence[ReloadingServerContext]) -> None:
    """SIGHUP: rebuild every TLS context from its files; a failed one keeps the previous certificates (logged)."""
    log = logging.getLogger(__name__)
    if not contexts:
        log.info("received SIGHUP: no TLS listener to reload")
    for context in contexts:
        if context.reload():
            log.info("received SIGHUP: reloaded TLS %s (generation %d)", _describe(context), context.generation)


def _describe(context: ReloadingServerContext) -> str:
    return ", ".join(f"{key}={path}" for key, path in context.settings.watched_files()) or "inline PEM"


#: The signals a running server handles. They are held (blocked) from the start of `run` until the server's receiver
#: is listening, so that a SIGTERM sent as soon as the start's log lines appear drains the server and exits 0,
#: as the help says, instead of ending the process by the signal's default action.
STOP_AND_RELOAD_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold STOP_AND_RELOAD_SIGNALS until the server's receiver listens; the mask as it was on the way out."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_AND_RELOAD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _serve_until_signal(serve: Callable[[trio.Event], Awaitable[None]], tls_contexts: Sequence[ReloadingServerContext] = ()) -> int:
    """Run a server until SIGTERM or SIGINT, which set its shutdown event: it drains and returns,
    publishing its audit file, and the process exits 0. A second signal cancels at once.
    SIGHUP reloads the TLS certificates and stores of `tls_contexts` (new connections use them)."""

    async def main() -> None:
        shutdown = trio.Event()
        async with trio.open_nursery() as nursery:

            async def serve_then_stop() -> None:
                await serve(shutdown)
                nursery.cancel_scope.cancel()  # the server is done: stop listening for signals

            nursery.start_soon(serve_then_stop)
            with trio.open_signal_receiver(*STOP_AND_RELOAD_SIGNALS) as signals:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_AND_RELOAD_SIGNALS)  # held ones arrive here now
                async for signum in signals:
                    if signum == signal.SIGHUP:
                        reload_tls(tls_contexts)
                        continue
                    if shutdown.is_set():
                        logging.getLogger(__name__).warning("second %s: stopping now", signal.Signals(signum).name)
                        nursery.cancel_scope.cancel()
                        break
                    logging.getLogger(__name__).info("received %s, draining", signal.Signals(signum).name)
                    shutdown.set()

    trio.run(main)
    return 0


async def _until(shutdown: trio.Event, serve: Callable[[], Awaitable[None]]) -> None:
    """For servers without a drain of their own: run until `shutdown`, then cancel."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve)
        await shutdown.wait()
        nursery.cancel_scope.cancel()


def _apply_log_format(raw: Mapping[str, str]) -> None:
    text = (raw.get("log.format") or "text").strip()
    try:
        apply_log_format(text)
    except ValueError as exc:
        raise ConfigError("log.format", text, str(exc)) from None


def _is_controller(raw: Mapping[str, str]) -> bool:
    return "controller" in Properties(raw).list("process.roles")


def _load(path: str) -> dict[str, str]:
    """The properties of `path`; a file that is not UTF-8 text fails as an unreadable file, naming it."""
    try:
        return load_properties(path)
    except UnicodeDecodeError as exc:
        raise OSError(errno.EILSEQ, f"not UTF-8 text (byte {exc.start})", path) from None


def _parse(raw: dict[str, str], role: str) -> tuple[ProxyConfig | ControllerConfig, list[str]]:
    """`raw` parsed for `role` ("proxy" or "controller"), and a warning for each key nothing read.

    A configuration error is re-told naming the key to fix and the listener it is for (envelope_proxy/config_errors.py)."""
    with recording_reads() as reads:
        try:
            config: ProxyConfig | ControllerConfig = parse_controller_config(raw) if role == "controller" else parse_proxy_config(raw)
        except ConfigError as exc:
            raise explain(exc, raw, reads) from exc
    try:
        declared = plugin_keys(raw)
    except Exception:  # the parse loaded the plug-in; this can only fail if it changed in between
        declared = ()
    return config, check_keys(raw, reads, role=role, declared=declared).lines()


def _check_config(path: str, *, strict: bool = False) -> int:
    raw = _load(path)
    _apply_log_format(raw)  # read as run and controller read it
    role = "controller" if _is_controller(raw) else "proxy"
    config, warnings = _parse(raw, role)
    effective: dict[str, Any] = {"role": role, **config.effective()}
    effective["log.format"] = (raw.get("log.format") or "text").strip()
    print(json.dumps(effective, indent=2), flush=True)
    for warning in warnings:
        print(f"warning: {path}: {warning}", file=sys.stderr)
    return 1 if strict and warnings else 0


def _start(path: str, role: str) -> ProxyConfig | ControllerConfig:
    raw = _load(path)
    _apply_log_format(raw)
    config, warnings = _parse(raw, role)
    for warning in warnings:
        log.warning("%s: %s", path, warning)
    return config


def _run_proxy(path: str) -> int:
    with _signals_held():
        return _serve_proxy(path)


def _serve_proxy(path: str) -> int:
    config = _start(path, "proxy")
    assert isinstance(config, ProxyConfig)
    contexts = listener_contexts(config.listeners)
    if config.upstream.tls_context is not None:
        contexts.append(config.upstream.tls_context)  # read.bootstrap.servers shares it
    return _serve_until_signal(lambda shutdown: run_proxy(config, shutdown=shutdown), contexts)


def _run_controller(path: str) -> int:
    with _signals_held():
        return _serve_controller(path)


def _serve_controller(path: str) -> int:
    config = _start(path, "controller")
    assert isinstance(config, ControllerConfig)
    try:
        controller = EmbeddedController(config)
    except MetadataStoreError as exc:
        print(f"cannot start the controller: {exc}", file=sys.stderr)
        return 2
    return _serve_until_signal(lambda shutdown: _until(shutdown, controller.run), listener_contexts(config.listeners))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="envelope-proxy")
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}", help="print the version and exit")
    parser.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=LOG_LEVELS,
        help="the least severe log level written to stderr (default: INFO)",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in (
        ("run", "run the proxy"),
        ("controller", "run the embedded reference controller"),
        ("check-config", "validate a configuration file, print the effective settings and warn about unknown keys"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("--config", required=True, help="a Kafka-style .properties file")
        if name == "check-config":
            command.add_argument("--strict", action="store_true", help="exit 1 when there are warnings (unknown keys)")
    demo = commands.add_parser("demo", help="controller + proxy + a real Kafka client + the Spark audit report")
    demo.add_argument("--workdir", default=None, help="where configs, audit files and the report go (default: a temporary folder)")
    demo.add_argument("--skip-spark", action="store_true", help="stop after the admin work")
    # Everything after `audit` goes to the Spark job's own parser (see main).
    commands.add_parser("audit", help="the Spark audit job over audit files (options: envelope-proxy audit --help); `audit verify` checks the hash chain", add_help=False)
    add_scram_parser(commands)
    add_certs_parser(commands)
    add_authz_parser(commands)
    cli_help.apply(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    raw = list(sys.argv[1:] if argv is None else argv)
    audit_args: list[str] = []
    if "audit" in raw:
        # The Spark job parses its own options (also under spark-submit), so they pass through untouched.
        position = raw.index("audit")
        raw, audit_args = raw[: position + 1], raw[position + 1 :]
    args = build_parser().parse_args(raw)
    _setup_logging(args.log_level)
    try:
        if args.command == "check-config":
            return _check_config(args.config, strict=args.strict)
        if args.command == "run":
            return _run_proxy(args.config)
        if args.command == "scram":
            return run_scram(args)
        if args.command == "certs":
            return run_certs(args)
        if args.command == "authz":
            return run_authz(args)
        if args.command == "controller":
            return _run_controller(args.config)
        if args.command == "demo":
            return run_demo(Path(args.workdir) if args.workdir else None, spark=not args.skip_spark)
        if args.command == "audit" and audit_args[:1] == ["verify"]:
            from envelope_proxy.audit_verify_cli import main as verify_main

            return verify_main(audit_args[1:])
        if args.command == "audit":
            # pyspark is the optional [spark] extra: only `audit` (and the demo's report) load it.
            from spark_audit.job import main as audit_main

            return audit_main(audit_args)
    except BrokenPipeError:
        # the reader of stdout went away (`check-config ... | head`): no traceback, and nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ConfigError, OSError, BaseExceptionGroup) as exc:
        # a server's start-up fails inside its nursery, so its error arrives wrapped in a group
        return _start_up_failure(exc)
    return 1


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _start_up_failure(exc: BaseException) -> int:
    """One line for what stops a command or a server from starting (a bad setting, a missing file, a port in use),
    alone or wrapped in a nursery's group; anything else is a bug: re-raised."""
    leaves = _leaves(exc)
    for leaf in leaves:
        if isinstance(leaf, ConfigError):
            print(f"configuration error: {leaf}", file=sys.stderr)
            return 2
    for leaf in leaves:
        if isinstance(leaf, OSError) and leaf.filename is not None and leaf.errno != errno.EADDRINUSE:
            # a missing, unreadable or misplaced file (the configuration, a store, a directory)
            print(f"error: {leaf.strerror}: {leaf.filename}", file=sys.stderr)
            return 2
    for leaf in leaves:
        if isinstance(leaf, OSError) and leaf.errno == errno.EADDRINUSE:
            print(f"error: {leaf}", file=sys.stderr)
            return 1
    raise exc


if __name__ == "__main__":
    sys.exit(main())
