"""`envelope-proxy scram add-user | remove-user`: manage the SCRAM credentials file.

The password is never taken from the command line, where other users could
read it in the process list and shells keep it in their history: it comes
from `--password-file`, from a prompt on a terminal, or from the first line of
standard input.
"""

import argparse
import getpass
import sys
from pathlib import Path
from typing import TextIO

from proxy.net.sasl.credentials import add_user, remove_user
from proxy.net.sasl.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS

BAD_INPUT = 2


class UsageError(Exception):
    """Bad input: reported as `error: <message>` with exit status 2."""


def add_scram_parser(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    scram = commands.add_parser("scram", help="manage the SCRAM credentials file (salted keys, never passwords)")
    actions = scram.add_subparsers(dest="scram_command", required=True)
    # No abbreviations: `--password x` must not silently mean `--password-file x`.
    add = actions.add_parser("add-user", help="add a user or replace its credentials for the given mechanisms", allow_abbrev=False)
    add.add_argument("--file", required=True, help="the credentials file (sasl.scram.credentials.file); created if missing")
    add.add_argument("--user", required=True)
    add.add_argument("--password-file", help="read the password from the first line of this file (default: prompt, or stdin when not a terminal)")
    add.add_argument(
        "--mechanism",
        action="append",
        choices=sorted(MECHANISMS),
        help="repeat for several (default: both SCRAM-SHA-256 and SCRAM-SHA-512)",
    )
    # Only there to refuse it with an explanation (and without echoing the value).
    add.add_argument("--password", help=argparse.SUPPRESS)
    add.add_argument("--iterations", type=int, default=MIN_ITERATIONS, help=f"{MIN_ITERATIONS}..{MAX_ITERATIONS} (default {MIN_ITERATIONS})")
    remove = actions.add_parser("remove-user", help="remove every credential of a user", allow_abbrev=False)
    remove.add_argument("--file", required=True)
    remove.add_argument("--user", required=True)


def _first_line(text: str) -> str:
    return text.splitlines()[0] if text else ""


def read_password(password_file: str | None, stdin: TextIO) -> str:
    if password_file is not None:
        try:
            password = _first_line(Path(password_file).read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(f"cannot read the password file {password_file}: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise UsageError(f"the password file {password_file} is not UTF-8 text") from None
    elif stdin.isatty():
        password = getpass.getpass("Password: ")
        if getpass.getpass("Repeat password: ") != password:
            raise UsageError("the two passwords differ")
    else:
        password = _first_line(stdin.readline())
    if not password:
        raise UsageError("the password is empty")
    return password


def run_scram(args: argparse.Namespace, *, stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    """Exit status: 0 done, 1 remove-user found no such user, 2 bad input (message on stderr)."""
    try:
        if not args.user:
            raise UsageError("--user must not be empty")
        if args.scram_command == "add-user":
            if args.password is not None:
                raise UsageError("--password is not accepted: other users can read the command line; use --password-file or standard input")
            if not MIN_ITERATIONS <= args.iterations <= MAX_ITERATIONS:
                raise UsageError(f"--iterations {args.iterations} is outside {MIN_ITERATIONS}..{MAX_ITERATIONS}")
            mechanisms = list(dict.fromkeys(args.mechanism or sorted(MECHANISMS)))
            password = read_password(args.password_file, stdin)
            add_user(args.file, args.user, password, mechanisms, iterations=args.iterations)
            print(f"{args.file}: {args.user} can log in with {', '.join(mechanisms)} ({args.iterations} iterations)", file=stdout)
            return 0
        if remove_user(args.file, args.user):
            print(f"{args.file}: removed {args.user}", file=stdout)
            return 0
        print(f"{args.file}: no user {args.user}", file=sys.stderr)
        return 1
    except (UsageError, ValueError) as exc:
        # ConfigError (a broken credentials file) is a ValueError too and already names the file.
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except OSError as exc:
        print(f"error: cannot write {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return BAD_INPUT
