"""Command line of the audit job (``python -m spark_audit``, ``spark-submit spark_audit/job.py``, ``envelope-proxy audit``)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence

import javaproperties
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from spark_audit import acl_cli, audit_input, class_archive, run_size
from spark_audit.acl_options import AclHygieneOptions
from spark_audit.failure import explain, first_line, log_path, log_tail
from spark_audit.kafka_connector import KafkaConnectorError, connector_jars
from spark_audit.options import JobOptions, ReportOptions, parse_duration, parse_instant
from spark_audit.read import KafkaSource
from spark_audit.session import DEFAULT_MEMORY, Resources, build_session
from spark_audit.whatif import Candidate, WhatIfError, parse_properties

PROG = "spark_audit"
#: Exit status of a run that ran out of memory or disk (2: bad arguments, 1: any other failure).
EXHAUSTED = 3
_MEMORY = re.compile(r"^\d+[kmgt]?$", re.IGNORECASE)


EXIT_CODES = f"""exit codes:
  0  the report was written
  1  the job failed (one line, and the path of Spark's log)
  2  bad arguments or input, before Spark starts: e.g. --input holds no audit files
     (it reads DIR/*.jsonl, else DIR/<proxy>/*.jsonl), or a wrong command line
  {EXHAUSTED}  Spark ran out of memory or disk (one line saying what to raise)"""


class UsageError(ValueError):
    """Bad arguments: exit status 2, before Spark starts."""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Audit reports over kafka-envelope-proxy audit records, with Spark (docs/audit-job.md).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = p.add_argument_group("input")
    source.add_argument(
        "--input",
        metavar="DIR",
        help="directory of *.jsonl audit files (the proxy's audit.log.dir), or of one such directory per proxy (DIR/<proxy>/*.jsonl)",
    )
    source.add_argument("--kafka-bootstrap-servers", metavar="HOST:PORT", help="read audit records from a Kafka topic instead")
    source.add_argument("--kafka-topic", metavar="TOPIC")
    source.add_argument(
        "--kafka-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Kafka source option, e.g. kafka.security.protocol=SASL_PLAINTEXT (repeatable)",
    )
    source.add_argument(
        "--kafka-jars", metavar="DIR", help="jars of spark-sql-kafka-0-10 and its dependencies (default: fetched once with Maven)"
    )
    p.add_argument(
        "--chain-public-key",
        action="append",
        default=[],
        metavar="PEM",
        help="Ed25519 public key the audit chain's checkpoints are signed with (repeatable: old keys too)",
    )
    p.add_argument(
        "--output", required=True, metavar="DIR", help="output directory (records, quarantine, reports, summary.json, report.html)"
    )
    p.add_argument("--master", metavar="URL", help="Spark master, e.g. spark://host:7077 (default: spark-submit's --master, else local[*])")
    p.add_argument(
        "--driver-memory",
        default=DEFAULT_MEMORY,
        metavar="SIZE",
        help=f"JVM heap of the driver, and of each executor on a cluster (default: {DEFAULT_MEMORY}; docs/audit-job.md, Memory)",
    )
    p.add_argument(
        "--local-dir", metavar="DIR", help="Spark's scratch space for shuffle and spill files (spark.local.dir; default: /tmp)"
    )
    p.add_argument(
        "--shuffle-partitions", type=int, metavar="N", help="spark.sql.shuffle.partitions (default locally: one per core, at least 2, for up to 1.5 GiB of JSON, else 8; Spark's on a cluster)"
    )
    mode = p.add_argument_group("incremental mode")
    mode.add_argument(
        "--incremental", action="store_true", help="process only input not seen before: files the checkpoint's manifest does not hold, Kafka offsets past the checkpoint's"
    )
    mode.add_argument("--checkpoint", metavar="DIR", help="checkpoint directory (default: <output>/_checkpoint)")
    mode.add_argument("--max-files-per-trigger", type=int, metavar="N", help="files per batch (default: all new files in one)")
    rep = p.add_argument_group("reports")
    rep.add_argument("--bucket", default="1 hour", metavar="DURATION", help="who-did-what time bucket (default: 1 hour)")
    rep.add_argument("--baseline-start", metavar="TIME", help="first instant of the baseline (default: the first record)")
    rep.add_argument(
        "--baseline-end",
        metavar="TIME",
        help="end of the baseline; newer records are compared with it (default: newest record - detection window)",
    )
    rep.add_argument(
        "--detection-window", default="1 day", metavar="DURATION", help="what is new when --baseline-end is not given (default: 1 day)"
    )
    rep.add_argument("--burst-window", default="1 minute", metavar="DURATION", help="burst window (default: 1 minute)")
    rep.add_argument(
        "--burst-threshold", type=int, default=10, metavar="N", help="events within the window that make a burst (default: 10)"
    )
    rep.add_argument(
        "--outcome-grace",
        default="60 seconds",
        metavar="DURATION",
        help="intents this young may still get an outcome (default: 60 seconds)",
    )
    rep.add_argument("--include-local", action="store_true", help="count requests the proxy answered itself (ApiVersions, Metadata, ...)")
    rep.add_argument("--top", type=int, default=20, metavar="N", help="rows per table in the HTML and text reports (default: 20)")
    rep.add_argument("--no-html", action="store_true", help="do not write report.html")
    rep.add_argument("--quiet", action="store_true", help="do not print the text report")
    whatif = p.add_argument_group("authorizer what-if")
    whatif.add_argument(
        "--whatif-authorizer", metavar="NAME", help="candidate authorizer: entry point, dotted path or StandardAuthorizer (default)"
    )
    whatif.add_argument("--whatif-acls", metavar="FILE", help="candidate ACLs (JSON lines of bindings, or the controller's metadata.json)")
    whatif.add_argument(
        "--whatif-property", action="append", default=[], metavar="KEY=VALUE", help="candidate authorizer property (repeatable)"
    )
    whatif.add_argument("--whatif-properties", metavar="FILE", help="candidate authorizer properties file")
    acl_cli.add_arguments(p)
    p.add_argument(
        "--py-file",
        action="append",
        default=[],
        metavar="FILE",
        help=".py/.zip shipped to executors, e.g. an authorizer plug-in (repeatable)",
    )
    return p


def _duration(text: str, option: str) -> int:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def _instant(text: str | None, option: str) -> int | None:
    if text is None:
        return None
    try:
        return parse_instant(text)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def _pairs(pairs: Sequence[str], option: str) -> dict[str, str]:
    try:
        return parse_properties(pairs)
    except ValueError as exc:
        raise UsageError(f"{option}: {exc}") from None


def _candidate(args: argparse.Namespace) -> Candidate | None:
    if not (args.whatif_authorizer or args.whatif_acls or args.whatif_property or args.whatif_properties):
        return None
    properties: dict[str, str] = {}
    if args.whatif_properties:
        try:
            with open(args.whatif_properties, encoding="utf-8") as f:
                properties.update(javaproperties.load(f))
        except OSError as exc:
            raise UsageError(f"--whatif-properties: cannot read {args.whatif_properties}: {exc.strerror or exc}") from None
    properties.update(_pairs(args.whatif_property, "--whatif-property"))
    try:
        candidate = Candidate.from_files(args.whatif_authorizer, properties, args.whatif_acls)
    except WhatIfError as exc:
        raise UsageError(f"--whatif-acls: {exc}") from None
    _importable(args.py_file)
    try:
        # a plug-in that cannot load, or refuses the properties or ACLs, fails here, before Spark starts
        candidate.build()
    except WhatIfError as exc:
        raise UsageError(f"--whatif-authorizer {candidate.authorizer}: {exc}") from None
    return candidate


def _acls(args: argparse.Namespace) -> AclHygieneOptions | None:
    try:
        return acl_cli.options_from(args)
    except acl_cli.AclOptionError as exc:
        raise UsageError(str(exc)) from None


def _importable(py_files: Sequence[str]) -> None:
    """The --py-file plug-ins importable on the driver too (Spark ships them to the executors)."""
    for path in py_files:
        # a .zip is imported from as it is; a .py from its directory
        entry = os.path.abspath(path) if path.endswith(".zip") else os.path.dirname(os.path.abspath(path))
        if entry not in sys.path:
            sys.path.insert(0, entry)


def options_from(args: argparse.Namespace) -> JobOptions:
    """Validate the arguments into JobOptions; UsageError naming the option otherwise."""
    kafka = None
    if args.kafka_bootstrap_servers or args.kafka_topic:
        if not (args.kafka_bootstrap_servers and args.kafka_topic):
            raise UsageError("--kafka-bootstrap-servers and --kafka-topic go together")
        if args.input:
            raise UsageError("give either --input or a Kafka topic, not both")
        kafka = KafkaSource(args.kafka_bootstrap_servers, args.kafka_topic, _pairs(args.kafka_option, "--kafka-option"))
    elif not args.input:
        raise UsageError("an input is needed: --input DIR, or --kafka-bootstrap-servers and --kafka-topic")
    elif "://" not in args.input and not os.path.isdir(args.input):
        why = "is not a directory" if os.path.exists(args.input) else "does not exist"
        raise UsageError(f"--input: {args.input} {why} (the audit directory: every *.jsonl directly in it is read)")
    source = args.input
    if kafka is None and "://" not in args.input:
        try:
            found = audit_input.resolve(args.input)
        except audit_input.NoAuditFiles as exc:
            raise UsageError(str(exc)) from None
        if found.note:
            print(f"{PROG}: {found.note}", file=sys.stderr)
        source = found.path
    elif kafka is None and args.input.startswith("file:"):
        try:
            audit_input.check_file_url(args.input)
        except audit_input.NoAuditFiles as exc:
            raise UsageError(str(exc)) from None
    if "://" not in args.output and os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UsageError(f"--output: {args.output} is not a directory")
    for path in args.py_file:
        if not os.path.isfile(path) or not path.endswith((".py", ".zip")):
            raise UsageError(f"--py-file: {path} is not a .py or .zip file")
    if not _MEMORY.match(args.driver_memory):
        raise UsageError(f"--driver-memory: {args.driver_memory!r} is not a size like 768m or 2g")
    for name in ("burst_threshold", "top", "max_files_per_trigger", "shuffle_partitions"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    reports = ReportOptions(
        bucket_seconds=_duration(args.bucket, "--bucket"),
        baseline_start_us=_instant(args.baseline_start, "--baseline-start"),
        baseline_end_us=_instant(args.baseline_end, "--baseline-end"),
        detection_window_seconds=_duration(args.detection_window, "--detection-window"),
        burst_window_seconds=_duration(args.burst_window, "--burst-window"),
        burst_threshold=args.burst_threshold,
        outcome_grace_seconds=_duration(args.outcome_grace, "--outcome-grace"),
        include_local=args.include_local,
        top=args.top,
    )
    return JobOptions(
        input=source,
        kafka=kafka,
        incremental=args.incremental,
        checkpoint=args.checkpoint,
        max_files_per_trigger=args.max_files_per_trigger,
        reports=reports,
        whatif=_candidate(args),
        acls=_acls(args),
        html=not args.no_html,
        print_report=not args.quiet,
        chain_public_keys=tuple(args.chain_public_key),
    )


def main(argv: Sequence[str] | None = None, *, make_class_archive: bool = False) -> int:
    """Command-line entry point; returns the exit status (2: bad arguments or input).

    ``make_class_archive``: the run's JVM writes a class archive for later runs (spark_audit/class_archive.py).
    """
    args = parser().parse_args(argv)
    try:
        options = options_from(args)
        jars = _kafka_jars(args.kafka_jars) if options.kafka is not None else []
    except (UsageError, KafkaConnectorError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    # Imported late: the pipeline (and the HTML renderer) are not needed to reject bad arguments.
    from spark_audit.pipeline import run

    # Under spark-submit (which starts this process with a gateway port) its --master applies.
    master = args.master or (None if os.environ.get("PYSPARK_GATEWAY_PORT") else "local[*]")
    if "://" not in args.output:
        try:
            os.makedirs(args.output, exist_ok=True)
        except OSError as exc:
            print(f"{PROG}: --output: cannot create {args.output}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        if not os.access(args.output, os.W_OK | os.X_OK):
            # In the audit image the job runs as uid 10001: a mounted folder owned by another user fails deep in
            # Spark with a bare "Permission denied"; say whose it is and who writes.
            owner = os.stat(args.output).st_uid
            print(
                f"{PROG}: --output: {args.output} is owned by uid {owner} and not writable by this process (uid {os.getuid()}); "
                f"give it to uid {os.getuid()} (e.g. chown -R {os.getuid()} {args.output}) or choose another folder",
                file=sys.stderr,
            )
            return 2
    owns_session = SparkSession.getActiveSession() is None
    log = log_path(args.output) if owns_session and master is not None else None
    size = run_size.RunSize.of(options.input, args.output, incremental=options.incremental)
    resources = Resources(
        memory=args.driver_memory,
        local_dir=args.local_dir,
        log_file=log,
        create_class_archive=make_class_archive and owns_session,
    ).for_size(size)
    spark = None
    succeeded = False
    archive = None
    try:
        partitions = args.shuffle_partitions if args.shuffle_partitions is not None else size.local_shuffle_partitions(master)
        spark = build_session(master, jars=jars, shuffle_partitions=partitions, resources=resources)
        if resources.create_class_archive:
            archive = class_archive.writing(spark)
        for path in args.py_file:
            spark.sparkContext.addPyFile(path)
        run(options.input, args.output, spark=spark, options=options)
        succeeded = True
    except WhatIfError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except (Py4JError, PySparkException, OSError) as exc:
        # A page of JVM stack trace helps no one at a terminal: one line says what ran out and what to raise.
        return _failed(exc, args.driver_memory, log)
    finally:
        if spark is not None and owns_session:
            _stop(spark)
            if archive is not None:
                class_archive.finish(spark, archive, succeeded=succeeded)
    return 0


def _kafka_jars(jars_dir: str | None) -> list[str]:
    try:
        return connector_jars(jars_dir)
    except KafkaConnectorError as exc:
        raise KafkaConnectorError(f"--kafka-jars: {exc}" if jars_dir else str(exc)) from None


def _failed(exc: BaseException, memory: str, log: str | None) -> int:
    text = str(exc)
    details = f" (Spark's log: {log})" if log else ""
    exhausted = explain(text, log_tail(log))
    if exhausted is not None:
        print(f"{PROG}: {exhausted.line(None if 'disk' in exhausted.what else memory)}{details}", file=sys.stderr)
        return EXHAUSTED
    print(f"{PROG}: the job failed: {first_line(text)}{details}", file=sys.stderr)
    return 1


def _stop(spark: SparkSession) -> None:
    """Stop the session; a JVM that already died (out of memory) has nothing left to stop."""
    try:
        spark.stop()
    except (Py4JError, PySparkException, OSError):
        pass
