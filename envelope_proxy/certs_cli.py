"""`envelope-proxy certs`: a development CA, server and client certificates, and the properties to use them.

    envelope-proxy certs --out DIR --host localhost --host 127.0.0.1 --client alice --client admin \\
        [--password P | --password-file F] [--days N] [--listener SSL] [--protocol SSL|SASL_SSL]

Prints the files written and a properties snippet that turns on TLS for one
listener: with client certificates for an SSL listener, with the server's
keystore only for a SASL_SSL listener (the SASL login names the principal). An existing `ca.pem`/`ca.key` in DIR is reused, so
re-running renews the server and client certificates without invalidating
truststores (a running server picks the new ones up, see docs/configuration.md).
Without `--password`/`--password-file` a random password protects the PKCS12 files;
it is printed in the snippet.
"""

import argparse
import ipaddress
import re
import secrets
import sys
from pathlib import Path
from typing import TextIO

from envelope_proxy.dev_pki import SNIPPET_PROTOCOLS, DevPki, default_protocol, generate_dev_pki, properties_snippet
from envelope_proxy.scram_cli import UsageError, read_password

BAD_INPUT = 2
_DNS_NAME = re.compile(r"^(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")
_LISTENER = re.compile(r"^[A-Za-z0-9_\-.]+$")


def add_certs_parser(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    certs = commands.add_parser(
        "certs", help="create a development CA, server and client certificates (PEM and PKCS12) and print the TLS settings", allow_abbrev=False
    )
    certs.add_argument("--out", required=True, help="directory for the files (created if missing; an existing CA there is reused)")
    certs.add_argument("--host", action="append", required=True, help="a host name or IP address of the server certificate; repeat for more")
    certs.add_argument("--client", action="append", default=[], help="a client certificate with CN=<name>,OU=clients; repeat for more")
    secret = certs.add_mutually_exclusive_group()
    secret.add_argument("--password", help="password of the PKCS12 files (a development secret; default: random, printed)")
    secret.add_argument("--password-file", help="read the PKCS12 password from the first line of this file")
    certs.add_argument("--days", type=int, default=365, help="validity of new certificates in days (default 365)")
    certs.add_argument("--listener", default="SSL", help="the listener the printed snippet configures (default SSL)")
    certs.add_argument(
        "--protocol",
        type=str.upper,
        choices=SNIPPET_PROTOCOLS,
        help="the listener's security protocol: SSL (client certificates) or SASL_SSL (a SASL login over TLS);"
        " default SASL_SSL for a listener named SASL_SSL, else SSL",
    )


def _check_host(host: str) -> str:
    stripped = host.strip()
    try:
        ipaddress.ip_address(stripped.strip("[]"))
        return stripped
    except ValueError:
        pass
    if not stripped or len(stripped) > 253 or not _DNS_NAME.match(stripped):
        raise UsageError(f"--host {host!r} is neither an IP address nor a DNS name")
    return stripped


def _password(args: argparse.Namespace, stdin: TextIO) -> str:
    if args.password_file is not None:
        return read_password(args.password_file, stdin)
    if args.password is not None:
        if not args.password:
            raise UsageError("--password must not be empty")
        return str(args.password)
    return secrets.token_urlsafe(18)


def describe(pki: DevPki) -> list[str]:
    """The files written, one line each."""
    lines = [
        f"{pki.ca_cert}  CA certificate ({'reused' if pki.ca_reused else 'new'})",
        f"{pki.ca_key}  CA private key (keep it private)",
        f"{pki.server_cert}  server certificate + CA, for {', '.join(pki.hosts)} ({pki.server_dn})",
        f"{pki.server_key}  server private key",
        f"{pki.server_p12}  server keystore (PKCS12)",
        f"{pki.truststore_pem}  truststore (PEM)",
        f"{pki.truststore_p12}  truststore (PKCS12)",
    ]
    for client in pki.clients:
        lines += [
            f"{client.cert}  client certificate + CA ({client.dn})",
            f"{client.key}  client private key",
            f"{client.p12}  client keystore (PKCS12)",
        ]
    return lines


def run_certs(args: argparse.Namespace, *, stdin: TextIO | None = None, stdout: TextIO | None = None) -> int:
    """Exit status: 0 done, 2 bad input (message on stderr)."""
    stdin = stdin or sys.stdin
    stdout = stdout or sys.stdout
    try:
        hosts = [_check_host(host) for host in args.host]
        if not _LISTENER.match(args.listener):
            raise UsageError(f"--listener {args.listener!r} is not a listener name (letters, digits, '_', '-', '.')")
        if args.days < 1:
            raise UsageError(f"--days {args.days} must be at least 1")
        password = _password(args, stdin)
        pki = generate_dev_pki(Path(args.out), hosts=hosts, clients=args.client, password=password, days=args.days)
    except (UsageError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except OSError as exc:
        print(f"error: cannot write to {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return BAD_INPUT
    print("wrote:", file=stdout)
    for line in describe(pki):
        print(f"  {line}", file=stdout)
    print("", file=stdout)
    print(properties_snippet(pki, args.listener, args.protocol or default_protocol(args.listener)), end="", file=stdout)
    return 0
