"""A throwaway MIT Kerberos KDC with a realm of its own, for the GSSAPI tests.

`Kdc` makes the realm in a folder of its own (`kdb5_util create`), starts `krb5kdc -n` (in
the foreground, so the test owns the process) on a free loopback port, TCP and UDP, and
writes the krb5.conf clients read (`krb5_conf`; `env` sets KRB5_CONFIG for a child process,
Java reads `-Djava.security.krb5.conf`). Principals and keytabs are made with
`kadmin.local` (`add_principal`). Closing it stops the KDC; the folder is the caller's.

The Debian packages krb5-kdc, krb5-admin-server and krb5-user provide the tools
(`make krb5` installs them); `missing_tools()` names the ones not found.

    python -m tests.kdc      # starts one, prints its krb5.conf; Ctrl-C stops it
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from devkit.processes import free_port

REALM = "ENVELOPE.TEST"
TOOLS = ("krb5kdc", "kdb5_util", "kadmin.local")
_SBIN = ("/usr/sbin", "/sbin", "/usr/local/sbin")
_COMMAND_TIMEOUT = 60.0
_STARTUP_TIMEOUT = 30.0


class KdcError(RuntimeError):
    """The KDC or one of its tools failed; the message carries their output."""


def tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for folder in _SBIN:
        candidate = Path(folder, name)
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def missing_tools() -> list[str]:
    return [name for name in TOOLS if tool(name) is None]


class Kdc:
    def __init__(self, workdir: Path, realm: str = REALM, *, ticket_lifetime: str = "1h") -> None:
        self.workdir = workdir
        self.realm = realm
        try:
            self.port = free_port(udp_too=True)  # the KDC listens on both
        except OSError as exc:
            raise KdcError(str(exc)) from None
        self.krb5_conf = workdir / "krb5.conf"
        self.kdc_conf = workdir / "kdc.conf"
        self.log_path = workdir / "krb5kdc.log"
        self.ticket_lifetime = ticket_lifetime
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def env(self) -> dict[str, str]:
        """The environment a child process needs to use this realm (and only it)."""
        return {
            **os.environ,
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.kdc_conf),
            "KRB5RCACHEDIR": str(self.workdir),
            "KRB5CCNAME": f"FILE:{self.workdir / 'default.ccache'}",
        }

    def _write_configuration(self) -> None:
        db = self.workdir / "db"
        db.mkdir(exist_ok=True)
        (db / "kadm5.acl").write_text("")
        self.kdc_conf.write_text(
            f"[kdcdefaults]\n kdc_listen = 127.0.0.1:{self.port}\n kdc_tcp_listen = 127.0.0.1:{self.port}\n\n"
            f"[realms]\n {self.realm} = {{\n"
            f"  database_name = {db / 'principal'}\n  key_stash_file = {db / 'stash'}\n  acl_file = {db / 'kadm5.acl'}\n"
            f"  max_life = {self.ticket_lifetime}\n  max_renewable_life = 0\n"
            "  supported_enctypes = aes256-cts-hmac-sha1-96:normal aes128-cts-hmac-sha1-96:normal\n }\n\n"
            f"[logging]\n kdc = FILE:{self.log_path}\n"
        )
        self.krb5_conf.write_text(
            f"[libdefaults]\n default_realm = {self.realm}\n dns_lookup_realm = false\n dns_lookup_kdc = false\n"
            " dns_canonicalize_hostname = false\n rdns = false\n udp_preference_limit = 1\n"
            f" ticket_lifetime = {self.ticket_lifetime}\n forwardable = false\n\n"
            f"[realms]\n {self.realm} = {{\n  kdc = 127.0.0.1:{self.port}\n }}\n\n"
            f"[domain_realm]\n localhost = {self.realm}\n 127.0.0.1 = {self.realm}\n"
        )

    def _run(self, *args: str) -> str:
        program = tool(args[0])
        if program is None:
            raise KdcError(f"{args[0]} not found")
        done = subprocess.run([program, *args[1:]], env=self.env, capture_output=True, text=True, timeout=_COMMAND_TIMEOUT, check=False)
        if done.returncode != 0:
            raise KdcError(f"{' '.join(args[:3])} failed ({done.returncode}): {done.stdout}{done.stderr}")
        return done.stdout

    def kadmin(self, query: str) -> str:
        return self._run("kadmin.local", "-r", self.realm, "-q", query)

    def start(self) -> Kdc:
        missing = missing_tools()
        if missing:
            raise KdcError(f"MIT krb5 tools not found: {', '.join(missing)} (Debian: krb5-kdc krb5-admin-server krb5-user)")
        self._write_configuration()
        self._run("kdb5_util", "create", "-s", "-r", self.realm, "-P", "envelope-test-master-key")
        program = tool("krb5kdc")
        assert program is not None
        log = (self.workdir / "krb5kdc.out").open("wb")
        self._process = subprocess.Popen([program, "-n", "-r", self.realm], env=self.env, stdout=log, stderr=subprocess.STDOUT)
        end = time.monotonic() + _STARTUP_TIMEOUT
        while True:
            if self._process.poll() is not None:
                raise KdcError(f"krb5kdc exited with {self._process.returncode}: {self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                if time.monotonic() > end:
                    raise KdcError(f"krb5kdc not listening on {self.port} after {_STARTUP_TIMEOUT} s: {self.log_tail()}") from None
                time.sleep(0.05)

    def principal(self, name: str) -> str:
        return f"{name}@{self.realm}"

    def add_principal(self, name: str, keytab: Path | None = None, *, password: str | None = None, max_life: str | None = None) -> str:
        """Create `name` (in this realm) with a random key, or `password`; with `keytab`, also export its key there.
        Returns the full principal name."""
        principal = self.principal(name)
        options = f"-pw {password}" if password is not None else "-randkey"
        if max_life is not None:
            options += f' -maxlife "{max_life}"'
        self.kadmin(f"addprinc {options} {principal}")
        if keytab is not None:
            self.export(principal, keytab)
        return principal

    def export(self, principal: str, keytab: Path) -> Path:
        """Add `principal`'s current key to `keytab` (its key is not changed, so other keytabs stay valid)."""
        self.kadmin(f"ktadd -k {keytab} -norandkey {principal}")
        return keytab

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> Kdc:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def main() -> None:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kdc-") as folder, Kdc(Path(folder)) as kdc:
        print(kdc.krb5_conf.read_text())
        print(f"KDC for {kdc.realm} on 127.0.0.1:{kdc.port}; KRB5_CONFIG={kdc.krb5_conf}; Ctrl-C stops it")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
