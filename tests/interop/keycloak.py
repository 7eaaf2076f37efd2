"""A scripted, throwaway Keycloak (a real OpenID Connect identity provider) for the OAUTHBEARER interop tests.

Nothing from Keycloak is committed: `ensure_keycloak()` asks Maven to copy
`org.keycloak:keycloak-quarkus-dist` (zip, named by `tests/interop/keycloak/pom.xml`)
from Maven Central, unzips it into ~/.cache/kafka-envelope-proxy/keycloak-<version>
and runs Keycloak's build step once (`start-dev --db=dev-mem`, the options every
instance uses), so that starting an instance does not rebuild it. Keycloak 25 is
the newest line that runs on Java 17.

`Keycloak` starts one instance in development mode: HTTP only, on free loopback
ports (`--http-host=127.0.0.1`, the management interface too), an in-memory
database, a small heap (`-Xmx512m`), its own home folder (bin and conf copied,
lib, providers and themes linked to the cache, so several instances may run at
once) and the bootstrap admin from KEYCLOAK_ADMIN/KEYCLOAK_ADMIN_PASSWORD. It
waits, bounded, until the master realm answers, and offers the admin REST API
calls the tests need: realms, confidential clients with a service account and an
audience mapper, client-credentials tokens, the realm's JWKS, token and issuer
URLs, and key rotation.

    python -m tests.interop.keycloak      # starts one, prints a realm, a client and a token; Ctrl-C stops it

Standard library only (urllib, with proxies from the environment ignored: every
call goes to loopback), each HTTP call bounded by a timeout.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

# The same tooling as the Kafka node's: java, mvn and the shared cache folder.
from devkit.kafka_jars import find_java, missing_tools
from devkit.maven_cache import maven_failure, pom_digest, run_maven
from devkit.processes import free_port
from devkit.tooling import ToolingMissing
from spark_audit.maven import cache_root, once, publish, read_marker

__all__ = [
    "KEYCLOAK_VERSION",
    "POM",
    "Keycloak",
    "KeycloakAdmin",
    "KeycloakClient",
    "KeycloakError",
    "ensure_keycloak",
    "keycloak_home",
    "main",
    "missing_tools",
]

KEYCLOAK_VERSION = os.environ.get("KEYCLOAK_VERSION", "25.0.6")
"""25.x is the newest Keycloak line that runs on Java 17 (26 needs Java 21)."""

POM = Path(__file__).resolve().parent / "keycloak" / "pom.xml"
BUILD_OPTIONS = ("--db=dev-mem",)
"""Keycloak's build-time options, the same for the one-time build and every instance (a difference means a rebuild)."""

_BUILD_TIMEOUT = 600.0
_HTTP_TIMEOUT = 30.0
_LINKED = ("lib", "providers", "themes")
_COPIED = ("bin/kc.sh", "conf")


class KeycloakError(RuntimeError):
    """Keycloak could not be fetched, built, started or asked; the message carries the end of its log or the HTTP answer."""


# --------------------------------------------------------------------------- the distribution


def keycloak_home(version: str = KEYCLOAK_VERSION) -> Path:
    """Where the unpacked and built distribution lives: ~/.cache/kafka-envelope-proxy/keycloak-<version>."""
    return cache_root() / f"keycloak-{version}"


def _is_complete(home: Path, version: str) -> bool:
    marker = read_marker(home)
    return (
        marker is not None
        and marker.get("version") == version
        and marker.get("pom_sha256") == pom_digest(POM)
        and marker.get("build_options") == list(BUILD_OPTIONS)
        and (home / "bin" / "kc.sh").is_file()
        and (home / "lib" / "quarkus-run.jar").is_file()
    )


def _unzip(archive: Path, target: Path) -> Path:
    """Unpack the distribution zip with its file modes (kc.sh must stay executable); return its top folder."""
    with zipfile.ZipFile(archive) as bundle:
        root = target.resolve()
        for info in bundle.infolist():
            destination = (target / info.filename).resolve()
            if root not in destination.parents and destination != root:
                raise KeycloakError(f"{archive.name}: entry {info.filename!r} points outside the folder")
            bundle.extract(info, target)
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                os.chmod(destination, mode)
    tops = [path for path in target.iterdir() if path.is_dir()]
    if len(tops) != 1 or not (tops[0] / "bin" / "kc.sh").is_file():
        raise KeycloakError(f"{archive.name} does not hold one Keycloak folder with bin/kc.sh")
    return tops[0]


def _build(home: Path, log: Path) -> None:
    """Keycloak's build (Quarkus augmentation) for BUILD_OPTIONS in dev mode, without starting the server.

    `kc.sh start-dev` first runs the JVM with -Dkc.config.build-and-exit=true; passing that property to
    both of its runs makes the second one exit as well."""
    command = [str(home / "bin" / "kc.sh"), "start-dev", *BUILD_OPTIONS, "-Dkc.config.build-and-exit=true"]
    with open(log, "wb") as out:
        try:
            code = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, timeout=_BUILD_TIMEOUT, check=False).returncode
        except subprocess.TimeoutExpired as exc:
            raise KeycloakError(f"Keycloak's build did not finish within {_BUILD_TIMEOUT:.0f}s:\n{_tail(log)}") from exc
    if code != 0:
        raise KeycloakError(f"Keycloak's build failed (exit {code}):\n{_tail(log)}")


def ensure_keycloak(version: str = KEYCLOAK_VERSION) -> Path:
    """Return the home of a built Keycloak `version`, fetching, unpacking and building it the first time.

    Idempotent and safe to call from concurrent processes (`spark_audit.maven.once`); a marker (version, pom
    hash, build options) decides whether the cached folder is complete."""
    home = keycloak_home(version)
    if _is_complete(home, version):
        return home
    if find_java() is None:
        raise ToolingMissing("java not found (set JAVA_HOME or put java on PATH): Keycloak 25 needs Java 17+")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ToolingMissing("mvn not found: Maven 3.8+ is needed once to fetch Keycloak from Maven Central")

    def fetch_and_build(scratch: Path) -> Path:
        started = time.monotonic()
        download = scratch / "download"
        result = run_maven(mvn, POM, {"keycloak.version": version}, "dependency:copy", download, KeycloakError)
        archives = sorted(download.glob(f"keycloak-quarkus-dist-{version}*.zip"))
        if result.returncode != 0 or len(archives) != 1:
            raise KeycloakError(maven_failure(result, f"Keycloak {version}"))
        fetched = time.monotonic()
        unpacked = _unzip(archives[0], scratch / "unpacked")
        _build(unpacked, scratch / "build.log")
        about = {"fetch_seconds": round(fetched - started, 1), "unpack_and_build_seconds": round(time.monotonic() - fetched, 1)}
        publish(unpacked, home, [], version=version, pom_sha256=pom_digest(POM), build_options=list(BUILD_OPTIONS), **about)
        return home

    return once(home, f".keycloak-{version}.lock", lambda folder: folder if _is_complete(folder, version) else None, fetch_and_build)


# --------------------------------------------------------------------------- HTTP


def _tail(path: Path, limit: int = 6000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return "(no log)"
    return data[-limit:].decode("utf-8", "replace")


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only: never through a proxy


def _request(
    method: str,
    url: str,
    *,
    json_body: object = None,
    form: Mapping[str, str] | None = None,
    token: str | None = None,
    timeout: float = _HTTP_TIMEOUT,
) -> tuple[int, dict[str, str], bytes]:
    headers = {"Accept": "application/json"}
    data: bytes | None = None
    if json_body is not None:
        data = json.dumps(json_body).encode()
        headers["Content-Type"] = "application/json"
    elif form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, dict(response.headers.items()), response.read(4 << 20)
    except urllib.error.HTTPError as exc:
        body = exc.read(64 << 10)
        raise KeycloakError(f"{method} {url}: HTTP {exc.code}: {body.decode('utf-8', 'replace')[:2000]}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise KeycloakError(f"{method} {url}: {exc}") from None


def _json(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise KeycloakError(f"{what}: not JSON: {body[:200]!r}") from None


def _claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified (for messages and for the harness's own bookkeeping only)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise KeycloakError("not a JWS compact serialization")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    claims = json.loads(base64.urlsafe_b64decode(payload))
    if not isinstance(claims, dict):
        raise KeycloakError("JWT payload is not an object")
    return claims


@dataclass(frozen=True)
class KeycloakClient:
    """A confidential client with a service account, as create_client made it."""

    realm: str
    client_id: str
    secret: str = ""
    id: str = ""  # Keycloak's internal id of the client
    service_account_user_id: str = ""  # the `sub` of its client-credentials tokens
    audience: str | None = None


class KeycloakAdmin:
    """Keycloak's admin REST API (as the master realm's bootstrap admin, through admin-cli) and its OIDC endpoints."""

    def __init__(self, base_url: str, username: str, password: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.username = username
        self.password = password
        self._token: str | None = None
        self._token_expires = 0.0

    # ---------------------------------------------------------------- OIDC endpoints of a realm

    def issuer(self, realm: str) -> str:
        return f"{self.base_url}/realms/{urllib.parse.quote(realm)}"

    def token_url(self, realm: str) -> str:
        return f"{self.issuer(realm)}/protocol/openid-connect/token"

    def jwks_url(self, realm: str) -> str:
        return f"{self.issuer(realm)}/protocol/openid-connect/certs"

    def jwks(self, realm: str) -> dict[str, Any]:
        _, _, body = _request("GET", self.jwks_url(realm))
        document = _json(body, "JWKS")
        if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
            raise KeycloakError(f"JWKS of realm {realm} has no keys list")
        return document

    def token_response(self, realm: str, client_id: str, secret: str, *, scope: str | None = None) -> dict[str, Any]:
        """The client-credentials grant (RFC 6749 4.4) with the secret in the form (client_secret_post)."""
        form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": secret}
        if scope is not None:
            form["scope"] = scope
        _, _, body = _request("POST", self.token_url(realm), form=form)
        answer = _json(body, "token response")
        if not isinstance(answer, dict) or not isinstance(answer.get("access_token"), str):
            raise KeycloakError(f"token response of realm {realm} has no access_token")
        return answer

    def token(self, realm: str, client_id: str, secret: str, *, scope: str | None = None) -> str:
        """A fresh access token (a JWT) for `client_id` by the client-credentials grant."""
        return str(self.token_response(realm, client_id, secret, scope=scope)["access_token"])

    # ---------------------------------------------------------------- admin REST API

    def admin_token(self) -> str:
        """The bootstrap admin's access token, fetched again shortly before it expires (60 s in the master realm)."""
        now = time.monotonic()
        if self._token is None or now >= self._token_expires:
            form = {"grant_type": "password", "client_id": "admin-cli", "username": self.username, "password": self.password}
            _, _, body = _request("POST", self.token_url("master"), form=form)
            answer = _json(body, "admin token")
            self._token = str(answer["access_token"])
            self._token_expires = now + max(5.0, float(answer.get("expires_in", 60)) - 15.0)
        return self._token

    def call(self, method: str, path: str, body: object = None) -> tuple[int, dict[str, str], Any]:
        """One admin REST call under /admin/realms; the answer's JSON (None when empty)."""
        status, headers, data = _request(method, f"{self.base_url}/admin/realms{path}", json_body=body, token=self.admin_token())
        return status, headers, (_json(data, f"{method} {path}") if data.strip() else None)

    def create_realm(self, name: str, *, access_token_lifespan: int | None = None, **settings: Any) -> None:
        """An enabled realm; `access_token_lifespan` (seconds, Keycloak's default 300) bounds every token's `exp`."""
        representation: dict[str, Any] = {"realm": name, "enabled": True, **settings}
        if access_token_lifespan is not None:
            representation["accessTokenLifespan"] = access_token_lifespan
        self.call("POST", "", representation)

    def realm(self, name: str) -> dict[str, Any]:
        _, _, representation = self.call("GET", f"/{urllib.parse.quote(name)}")
        return dict(representation)

    def create_client(self, realm: str, client_id: str, secret: str, *, audience: str | None = None) -> KeycloakClient:
        """A confidential client whose service account may use the client-credentials grant; with `audience`, an
        audience mapper puts that value into its access tokens' `aud` claim."""
        mappers = []
        if audience is not None:
            mappers.append(
                {
                    "name": f"audience {audience}",
                    "protocol": "openid-connect",
                    "protocolMapper": "oidc-audience-mapper",
                    "config": {"included.custom.audience": audience, "access.token.claim": "true", "id.token.claim": "false", "introspection.token.claim": "true"},
                }
            )
        representation = {
            "clientId": client_id,
            "secret": secret,
            "enabled": True,
            "protocol": "openid-connect",
            "publicClient": False,
            "clientAuthenticatorType": "client-secret",
            "serviceAccountsEnabled": True,
            "fullScopeAllowed": False,  # no realm or account roles in the token, so `aud` holds the audience alone
            "standardFlowEnabled": False,
            "implicitFlowEnabled": False,
            "directAccessGrantsEnabled": False,
            "protocolMappers": mappers,
        }
        quoted = urllib.parse.quote(realm)
        _, headers, _ = self.call("POST", f"/{quoted}/clients", representation)
        location = headers.get("Location", "")
        internal_id = location.rstrip("/").rsplit("/", 1)[-1] if location else self._client_id(realm, client_id)
        _, _, user = self.call("GET", f"/{quoted}/clients/{internal_id}/service-account-user")
        return KeycloakClient(realm, client_id, secret, internal_id, str(user["id"]), audience)

    def _client_id(self, realm: str, client_id: str) -> str:
        _, _, found = self.call("GET", f"/{urllib.parse.quote(realm)}/clients?clientId={urllib.parse.quote(client_id)}")
        if not found:
            raise KeycloakError(f"realm {realm} has no client {client_id}")
        return str(found[0]["id"])

    def keys(self, realm: str) -> dict[str, Any]:
        """The realm's keys as the admin API lists them: `active` (kid by algorithm) and `keys` (kid, providerId, priority, status...)."""
        _, _, keys = self.call("GET", f"/{urllib.parse.quote(realm)}/keys")
        return dict(keys)

    def active_kid(self, realm: str, algorithm: str = "RS256") -> str:
        """The kid Keycloak signs new `algorithm` tokens with."""
        active = self.keys(realm).get("active", {})
        if algorithm not in active:
            raise KeycloakError(f"realm {realm} has no active {algorithm} key")
        return str(active[algorithm])

    def rotate_keys(self, realm: str, *, old: Literal["keep", "passive", "disabled"] = "passive", algorithm: str = "RS256") -> str:
        """Add a generated RSA key provider with a priority above every other one, so new tokens are signed
        with its key, and return its kid. The old `algorithm` keys stay as they are (`keep`), stop signing but
        stay in the JWKS (`passive`), or are removed from it (`disabled`)."""
        quoted = urllib.parse.quote(realm)
        before = self.keys(realm)
        providers = [key for key in before.get("keys", []) if key.get("algorithm") == algorithm and key.get("providerId")]
        priority = max([int(key.get("providerPriority", 0)) for key in before.get("keys", [])] + [100]) + 10
        realm_id = self.realm(realm)["id"]
        component = {
            "name": f"rsa-rotated-{int(time.time() * 1000)}",
            "providerId": "rsa-generated",
            "providerType": "org.keycloak.keys.KeyProvider",
            "parentId": realm_id,
            "config": {"priority": [str(priority)], "enabled": ["true"], "active": ["true"], "algorithm": [algorithm], "keySize": ["2048"]},
        }
        _, headers, _ = self.call("POST", f"/{quoted}/components", component)
        new_component = headers.get("Location", "").rstrip("/").rsplit("/", 1)[-1]
        if old != "keep":
            for key in providers:
                provider_id = key.get("providerId")
                if not provider_id or provider_id == new_component:
                    continue
                _, _, existing = self.call("GET", f"/{quoted}/components/{provider_id}")
                config = dict(existing.get("config", {}))
                config["active" if old == "passive" else "enabled"] = ["false"]
                self.call("PUT", f"/{quoted}/components/{provider_id}", {**existing, "config": config})
        kid = self.active_kid(realm, algorithm)
        if kid in {key.get("kid") for key in providers}:
            raise KeycloakError(f"realm {realm}: the new {algorithm} key did not become the active one")
        return kid


# --------------------------------------------------------------------------- the server


class Keycloak(KeycloakAdmin):
    """One Keycloak in development mode on loopback; use as a context manager.

    >>> with Keycloak() as keycloak:                                   # doctest: +SKIP
    ...     keycloak.create_realm("kafka")
    ...     client = keycloak.create_client("kafka", "proxy", "proxy-secret", audience="kafka")
    ...     keycloak.token("kafka", "proxy", "proxy-secret")
    """

    def __init__(
        self,
        *,
        workdir: Path | None = None,
        version: str = KEYCLOAK_VERSION,
        home: Path | None = None,
        heap: str = "512m",
        startup_timeout: float | None = None,
        stop_timeout: float = 30.0,
        host: str = "127.0.0.1",
        admin_user: str = "admin",
        admin_password: str = "admin-secret",
        jvm_options: tuple[str, ...] = (),
    ) -> None:
        """`startup_timeout` defaults to KEYCLOAK_STARTUP_TIMEOUT or 300 s (a start takes 20-70 s on two busy cores)."""
        super().__init__(f"http://{host}:0", admin_user, admin_password)
        self.version = version
        self.heap = heap
        self.startup_timeout = startup_timeout if startup_timeout is not None else float(os.environ.get("KEYCLOAK_STARTUP_TIMEOUT", "300"))
        self.stop_timeout = stop_timeout
        self.host = host
        self.jvm_options = tuple(jvm_options)
        self.startup_seconds: float | None = None
        self._home = home
        self._own_workdir = workdir is None
        self._workdir = workdir
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: Any = None
        self.port = 0
        self.management_port = 0

    @property
    def workdir(self) -> Path:
        if self._workdir is None:
            raise KeycloakError("Keycloak has not been started")
        return self._workdir

    @property
    def log_path(self) -> Path:
        return self.workdir / "keycloak.log"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, limit: int = 6000) -> str:
        return _tail(self.log_path, limit)

    def __enter__(self) -> Keycloak:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def _instance_home(self, dist: Path) -> Path:
        """bin/kc.sh and conf copied (kc.sh takes its home from its own path), the rest linked to the cache."""
        home = self.workdir / "keycloak"
        (home / "bin").mkdir(parents=True, exist_ok=True)
        shutil.copy2(dist / "bin" / "kc.sh", home / "bin" / "kc.sh")
        shutil.copytree(dist / "conf", home / "conf", dirs_exist_ok=True)
        for name in _LINKED:
            link = home / name
            if not link.exists():
                link.symlink_to(dist / name, target_is_directory=True)
        return home

    def start(self) -> None:
        if self._process is not None:
            raise KeycloakError("already started")
        dist = self._home or ensure_keycloak(self.version)
        java = find_java()
        if java is None:
            raise ToolingMissing("java not found (set JAVA_HOME or put java on PATH): Keycloak 25 needs Java 17+")
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="keycloak-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        home = self._instance_home(dist)
        self.port = free_port(self.host)
        self.management_port = free_port(self.host)
        while self.management_port == self.port:
            self.management_port = free_port(self.host)
        self.base_url = f"http://{self.host}:{self.port}"
        command = [
            str(home / "bin" / "kc.sh"),
            "start-dev",
            *BUILD_OPTIONS,
            f"--http-host={self.host}",
            f"--http-port={self.port}",
            f"--http-management-port={self.management_port}",
            f"--hostname={self.base_url}",  # the issuer, however a token is asked for
        ]
        environment = {
            **os.environ,
            "JAVA_HOME": str(Path(java).resolve().parent.parent),
            "KEYCLOAK_ADMIN": self.username,
            "KEYCLOAK_ADMIN_PASSWORD": self.password,
            "JAVA_OPTS_KC_HEAP": f"-Xms64m -Xmx{self.heap}",
            # C1 only: a shorter start on a small machine, fast enough for a test's few requests
            "JAVA_OPTS_APPEND": " ".join(("-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true", *self.jvm_options)),
        }
        self._log_file = open(self.log_path, "ab")  # closed in stop()
        self._log_file.write(f"$ {' '.join(command)}\n".encode())
        self._log_file.flush()
        began = time.monotonic()
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=self._log_file,
                stderr=subprocess.STDOUT,
                cwd=self.workdir,
                env=environment,
                start_new_session=True,  # Ctrl-C in a terminal reaches us, and we stop Keycloak in order
            )
            self._wait_ready(began)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = round(time.monotonic() - began, 1)

    def _wait_ready(self, began: float) -> None:
        deadline = began + self.startup_timeout
        url = f"{self.base_url}/realms/master/.well-known/openid-configuration"
        while True:
            if self._process is None or self._process.poll() is not None:
                code = None if self._process is None else self._process.returncode
                raise KeycloakError(f"Keycloak exited (code {code}) before it was ready\n{self.log_tail()}")
            with contextlib.suppress(KeycloakError):
                status, _, _ = _request("GET", url, timeout=5.0)
                if status == 200:
                    break
            if time.monotonic() > deadline:
                raise KeycloakError(f"Keycloak was not ready within {self.startup_timeout:.0f}s\n{self.log_tail()}")
            time.sleep(0.5)
        if b"Updating the configuration" in self.log_path.read_bytes():
            # Not fatal, but each start then pays for a build: the cached distribution was built with other options.
            print(f"keycloak: rebuilt at start (cached build options differ from {BUILD_OPTIONS})", file=sys.stderr)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._own_workdir and self._workdir is not None and os.environ.get("KEYCLOAK_KEEP_WORKDIR") != "1":
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


# --------------------------------------------------------------------------- by hand


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.interop.keycloak", description="Run a throwaway Keycloak with one realm and one client.")
    parser.add_argument("--realm", default="kafka")
    parser.add_argument("--client-id", default="proxy")
    parser.add_argument("--secret", default="proxy-secret")
    parser.add_argument("--audience", default="kafka")
    args = parser.parse_args(argv)
    with Keycloak() as keycloak:
        keycloak.create_realm(args.realm)
        client = keycloak.create_client(args.realm, args.client_id, args.secret, audience=args.audience)
        token = keycloak.token(args.realm, args.client_id, args.secret)
        print(f"Keycloak {keycloak.version} at {keycloak.base_url} (admin {keycloak.username}/{keycloak.password}), ready in {keycloak.startup_seconds}s")
        print(f"  issuer   {keycloak.issuer(args.realm)}")
        print(f"  jwks     {keycloak.jwks_url(args.realm)}")
        print(f"  token    {keycloak.token_url(args.realm)}  (client {client.client_id}/{client.secret}, sub {client.service_account_user_id})")
        print(f"  claims   {json.dumps(_claims(token))}")
        print("Ctrl-C stops it.")
        with contextlib.suppress(KeyboardInterrupt):
            while keycloak.running:
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
