"""What `envelope-proxy <command> --help` says: a description and the exit codes, as each command returns them.

Kept beside each other so that a changed exit code is changed in one place of the help; each code is the one
the command's code returns (envelope_proxy/cli.py, scram_cli.py, certs_cli.py, authz_cli.py, spark_audit/cli.py).
"""

import argparse
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass

USAGE_ERROR = "a wrong command line (the usage message says what)"


@dataclass(frozen=True)
class CommandHelp:
    description: str
    exit_codes: Sequence[tuple[int, str]]

    def epilog(self) -> str:
        meanings: dict[int, list[str]] = {}
        for code, meaning in self.exit_codes:
            meanings.setdefault(code, []).append(meaning)
        return "\n".join(["exit codes:", *(f"  {code}  {'; '.join(texts)}" for code, texts in sorted(meanings.items()))])


class HelpFormatter(argparse.HelpFormatter):
    """Wraps each line of a description or epilog on its own, so that the exit codes stay one to a line."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        lines = []
        for line in text.splitlines():
            lead = line[: len(line) - len(line.lstrip())]
            code = re.match(r"\s*\d+\s+", line)  # an exit code's line: its wrapped text lines up after the code
            hang = indent + " " * (code.end() if code else len(lead))
            lines.append(textwrap.fill(line.strip(), width, initial_indent=indent + lead, subsequent_indent=hang))
        return "\n".join(lines)


MAIN = CommandHelp(
    "A Kafka admin proxy (KIP-590): accepts admin requests from Kafka clients, forwards each unchanged inside an "
    "EnvelopeRequest carrying the client's principal and address to the active controller, and writes an audit "
    "record before and after it. Also runs an embedded reference controller, the Spark audit job, and the tools "
    "beside them. Every key of the .properties files: docs/configuration.md.",
    [
        (0, "success"),
        (1, "the command failed (see each command's --help)"),
        (2, "a bad configuration or input, or " + USAGE_ERROR),
    ],
)

CONFIG_EXIT = (2, "a configuration error (one line: the key, the value and why), or --config cannot be read")

COMMANDS: dict[str, CommandHelp] = {
    "run": CommandHelp(
        "Run the proxy with the settings of --config: listen on its client listeners, forward admin requests to the "
        "active controller inside Envelopes, answer reads after the edge authorizer, and audit every request. "
        "Keys that nothing reads are logged as warnings at start (see check-config). SIGTERM or SIGINT drains "
        "(requests in flight finish within shutdown.timeout.ms, the audit file is published); a second signal stops "
        "at once. SIGHUP reloads the TLS certificates and stores.",
        [
            (0, "stopped by SIGTERM or SIGINT after draining"),
            (1, "a listener's address is already in use (one line), or an unexpected failure (a traceback)"),
            CONFIG_EXIT,
            (2, USAGE_ERROR),
        ],
    ),
    "controller": CommandHelp(
        "Run the embedded reference controller with the settings of --config (process.roles=controller): Kafka's "
        "Envelope and ACL semantics, kept in metadata.log.dir. Keys that nothing reads are logged as warnings at "
        "start. SIGTERM or SIGINT stops it; SIGHUP reloads the TLS certificates and stores.",
        [
            (0, "stopped by SIGTERM or SIGINT"),
            (1, "a listener's address is already in use (one line), or an unexpected failure (a traceback)"),
            CONFIG_EXIT,
            (2, "the metadata in metadata.log.dir cannot be read (damaged or unreadable), or " + USAGE_ERROR),
        ],
    ),
    "check-config": CommandHelp(
        "Validate --config as `run` (or, with process.roles=controller, `controller`) reads it, without listening "
        "or writing anything, and print the effective settings as JSON (secrets hidden). Stores, key files and the "
        "authorizer plug-in are opened as at start. Each key that nothing reads is a warning on stderr, one line "
        "each, with a 'did you mean' when a known key is close; Kafka broker keys the proxy does not use are listed "
        "once as ignored. Warnings do not change the exit code unless --strict is given.",
        [
            (0, "the configuration is valid (warnings, if any, on stderr)"),
            (1, "--strict, and there were warnings"),
            CONFIG_EXIT,
            (2, USAGE_ERROR),
        ],
    ),
    "demo": CommandHelp(
        "Start the embedded controller and the proxy on loopback, do admin work as three users with confluent-kafka "
        "(one refused), print what the controller saw, then run the Spark audit job and print where its report is.",
        [
            (0, "the demo ran as expected"),
            (1, "something unexpected happened (lines starting UNEXPECTED), or a failure (a traceback)"),
            (2, USAGE_ERROR),
        ],
    ),
    "audit": CommandHelp(
        "The Spark audit job over audit files (--input, the proxy's audit.log.dir, or a directory of them) or a Kafka "
        "topic: records, reports, summary.json and report.html in --output. Its options: envelope-proxy audit --help.",
        [
            (0, "the report was written"),
            (1, "the Spark job failed (one line, and the path of Spark's log)"),
            (2, "bad arguments or input, before Spark starts (e.g. --input holds no audit files)"),
            (3, "Spark ran out of memory or disk (one line saying what to raise)"),
        ],
    ),
    "scram": CommandHelp(
        "Manage the SCRAM credentials file that sasl.scram.credentials.file names: salted keys, never passwords. "
        "The password comes from --password-file, a prompt, or the first line of standard input; never argv.",
        [
            (0, "done"),
            (1, "remove-user: there is no such user in the file"),
            (2, "bad input (an empty user or password, iterations out of range, an unreadable or broken file), or " + USAGE_ERROR),
        ],
    ),
    "scram add-user": CommandHelp(
        "Add a user to the credentials file (created if missing), or replace its credentials for the given mechanisms. "
        "A running server picks the change up at the next login.",
        [
            (0, "the user can log in with the mechanisms printed"),
            (
                2,
                "bad input (an empty user or password, iterations out of range, --password given, an unreadable or broken file), or "
                + USAGE_ERROR,
            ),
        ],
    ),
    "scram remove-user": CommandHelp(
        "Remove every credential of a user from the credentials file.",
        [
            (0, "the user was removed"),
            (1, "there is no such user in the file (nothing is written)"),
            (2, "bad input (an empty user, an unreadable or broken file), or " + USAGE_ERROR),
        ],
    ),
    "certs": CommandHelp(
        "Make a development CA (reused when --out has one), a server certificate for the --host names and a client "
        "certificate per --client, as PEM and PKCS12, and print the files and the properties that turn TLS on for "
        "--listener. For development and tests, not production.",
        [
            (0, "the files were written and the snippet printed"),
            (
                2,
                "bad input (a host that is neither an IP address nor a DNS name, --days below 1, an empty password), --out cannot be written, or "
                + USAGE_ERROR,
            ),
        ],
    ),
    "authz": CommandHelp(
        "Test an authorizer (authorizer.class.name, built as the proxy and the controller build it) against a file of cases.",
        [
            (0, "every case holds"),
            (1, "some cases do not (each printed as MISMATCH)"),
            (2, "bad input (a configuration error, an unreadable file, a bad cases or ACL file), or " + USAGE_ERROR),
        ],
    ),
    "authz check": CommandHelp(
        "Decide each case of --cases with the authorizer of --config (ACLs from --acls, or the metadata.log.dir the "
        "file names) and print every case it decides otherwise, then a count.",
        [
            (0, "every case holds"),
            (1, "some cases do not (each printed as MISMATCH)"),
            (2, "bad input (a configuration error, an unreadable file, a bad cases or ACL file), or " + USAGE_ERROR),
        ],
    ),
    "authz probe": CommandHelp(
        "Send each case of --cases as a real Envelope, logged in as the proxy of --config, to the active controller, "
        "around the dry form of a request that asks the case's question first, and read the decision from its answer. "
        "Nothing changes on the cluster unless --allow-changes. Each probe is audited, marked data.probe.",
        [
            (0, "every case holds"),
            (1, "some cases do not: MISMATCH, UNDECIDED (the answer shows no decision) or REFUSED (no dry path)"),
            (2, "bad input (a configuration error, an unreadable file, a bad cases file), or " + USAGE_ERROR),
        ],
    ),
    "authz replay": CommandHelp(
        "Replay the forwarded requests of audit records (files, or the Spark job's requests table) of a time window as "
        "probes against the controller of --config, and list new denials and new allows beside what production decided.",
        [
            (0, "no decision changed"),
            (1, "some decisions changed (NEW DENIAL, NEW ALLOW) or could not be asked"),
            (2, "bad input (a configuration error, unreadable audit records, a bad time), or " + USAGE_ERROR),
        ],
    ),
}


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def apply(parser: argparse.ArgumentParser) -> None:
    """Give the parser and every (sub)command parser its description and exit codes."""
    _describe(parser, MAIN)
    for name, command in _subcommands(parser).items():
        if name in COMMANDS:
            _describe(command, COMMANDS[name])
        for sub_name, sub in _subcommands(command).items():
            if f"{name} {sub_name}" in COMMANDS:
                _describe(sub, COMMANDS[f"{name} {sub_name}"])


def _describe(parser: argparse.ArgumentParser, text: CommandHelp) -> None:
    parser.description = text.description
    parser.epilog = text.epilog()
    parser.formatter_class = HelpFormatter
