"""The `envelope-proxy` command as an operator meets it (issue 50, "The CLI as operators expect it"): the installed
entry point run as a process in an empty working directory, which must stay empty.

--version; a description and the exit codes in every command's --help; --log-level's choices; a warning for each
key nothing reads, with a "did you mean"; errors that name the key to fix and the listener; `audit --input` saying
why it found nothing."""

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import pytest

from devkit.processes import write_properties
from envelope_proxy.config_keys import check_keys
from envelope_proxy.embedded import controller_properties, proxy_properties
from spark_audit import audit_input

REPO_ROOT = Path(__file__).resolve().parents[2]
COMMAND = Path(sys.executable).parent / "envelope-proxy"
DOCS = REPO_ROOT / "docs" / "configuration.md"


@pytest.fixture
def cwd(tmp_path: Path) -> Iterator[Path]:
    """An empty working directory for the command; nothing may be left in it (no .hypothesis/, no ./audit)."""
    directory = tmp_path / "cwd"
    directory.mkdir()
    yield directory
    assert sorted(path.name for path in directory.iterdir()) == []


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    directory = tmp_path / "conf"
    directory.mkdir()
    return directory


def envelope_proxy(cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if key not in ("KAFKA_OPTS", "PYTHONPATH")}
    environment.update(env or {})
    return subprocess.run([str(COMMAND), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout, check=False)


def proxy_config(conf: Path, **extra: str) -> Path:
    props = proxy_properties(9093, conf / "audit")
    props.update(extra)
    return write_properties(conf / "proxy.properties", props)


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


# --------------------------------------------------------------------------- --version, --help, --log-level


def test_version_prints_the_package_version(cwd: Path) -> None:
    result = envelope_proxy(cwd, "--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"envelope-proxy {version('kafka-envelope-proxy')}"


def _exit_codes(help_text: str) -> set[int]:
    section = help_text.split("exit codes:", 1)[1]
    return {int(code) for code in re.findall(r"^\s+(\d)\s{2}", section, re.MULTILINE)}


@pytest.mark.parametrize(
    ("command", "codes", "described"),
    [
        ([], {0, 1, 2}, "EnvelopeRequest"),
        (["run"], {0, 1, 2}, "SIGTERM"),
        (["controller"], {0, 1, 2}, "embedded reference controller"),
        (["check-config"], {0, 1, 2}, "did you mean"),
        (["demo"], {0, 1, 2}, "confluent-kafka"),
        (["audit"], {0, 1, 2, 3}, "Spark"),
        (["scram"], {0, 1, 2}, "salted keys"),
        (["scram", "add-user"], {0, 2}, "replace its credentials"),
        (["scram", "remove-user"], {0, 1, 2}, "Remove every credential"),
        (["certs"], {0, 2}, "development CA"),
        (["authz"], {0, 1, 2}, "authorizer"),
        (["authz", "check"], {0, 1, 2}, "MISMATCH"),
        (["authz", "probe"], {0, 1, 2}, "dry form"),
        (["authz", "replay"], {0, 1, 2}, "new denials"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else None,
)
def test_every_command_help_has_a_description_and_its_exit_codes(cwd: Path, command: list[str], codes: set[int], described: str) -> None:
    result = envelope_proxy(cwd, *command, "--help")
    assert result.returncode == 0, result.stderr
    assert described in " ".join(result.stdout.split())
    assert "exit codes:" in result.stdout
    assert _exit_codes(result.stdout) == codes


def test_log_level_lists_its_choices_and_refuses_others(cwd: Path, conf: Path) -> None:
    help_text = envelope_proxy(cwd, "--help").stdout
    assert "--log-level {DEBUG,INFO,WARNING,ERROR,CRITICAL}" in help_text
    wrong = envelope_proxy(cwd, "--log-level", "LOUD", "check-config", "--config", str(proxy_config(conf)))
    assert wrong.returncode == 2
    assert "invalid choice: 'LOUD'" in wrong.stderr
    lower = envelope_proxy(cwd, "--log-level", "debug", "check-config", "--config", str(proxy_config(conf)))
    assert lower.returncode == 0, lower.stderr


# --------------------------------------------------------------------------- unknown keys


def test_a_misspelt_key_is_warned_about_with_the_key_it_was_meant_to_be(cwd: Path, conf: Path) -> None:
    path = proxy_config(conf)
    with path.open("a") as handle:
        handle.write(f"audit.log.dirr={conf / 'audit'}\nlistener.name.client.ssl.keystore.locaton=/x\n")

    result = envelope_proxy(cwd, "check-config", "--config", str(path))

    assert result.returncode == 0, result.stderr  # a warning is no error: the file is valid
    assert warnings_of(result.stderr) == [
        f"warning: {path}: unknown key audit.log.dirr: the proxy does not read it; did you mean audit.log.dir?",
        f"warning: {path}: unknown key listener.name.client.ssl.keystore.locaton: the proxy does not read it; "
        "did you mean listener.name.client.ssl.keystore.location?",
    ]
    strict = envelope_proxy(cwd, "check-config", "--strict", "--config", str(path))
    assert strict.returncode == 1
    assert len(warnings_of(strict.stderr)) == 2


def test_a_valid_configuration_has_no_warnings_and_strict_passes(cwd: Path, conf: Path) -> None:
    result = envelope_proxy(cwd, "check-config", "--strict", "--config", str(proxy_config(conf)))
    assert result.returncode == 0, result.stderr
    assert warnings_of(result.stderr) == []


def test_the_broker_example_gives_no_warning_and_the_brokers_own_file_lists_what_is_ignored(cwd: Path) -> None:
    example = REPO_ROOT / "docs" / "examples" / "broker-to-proxy"
    line = next(line for line in (example / "server.properties").read_text().splitlines() if line.startswith("# KAFKA_OPTS="))
    opts = line.removeprefix("# KAFKA_OPTS=").replace("/etc/kafka/kafka_server_jaas.conf", str(example / "kafka_server_jaas.conf"))

    proxy = envelope_proxy(cwd, "check-config", "--strict", "--config", str(example / "proxy.properties"), env={"KAFKA_OPTS": opts})
    broker = envelope_proxy(cwd, "check-config", "--config", str(example / "server.properties"), env={"KAFKA_OPTS": opts})

    assert proxy.returncode == 0, proxy.stderr
    assert warnings_of(proxy.stderr) == []
    assert broker.returncode == 0, broker.stderr
    assert warnings_of(broker.stderr) == [
        f"warning: {example / 'server.properties'}: ignored (a Kafka broker key the proxy does not use): sasl.mechanism.inter.broker.protocol"
    ]


def test_kafka_broker_keys_are_listed_once_as_ignored_and_listener_typos_named(cwd: Path, conf: Path) -> None:
    path = proxy_config(
        conf,
        **{
            "log.dirs": "/var/lib/kafka",
            "num.io.threads": "8",
            "zookeeper.connect": "zk:2181",
            "listener.name.clinet.security.ip.filter.list": "10.0.0.0/8",
            "embedded.broker.count": "3",
        },
    )

    result = envelope_proxy(cwd, "check-config", "--config", str(path))

    assert result.returncode == 0, result.stderr
    assert warnings_of(result.stderr) == [
        f"warning: {path}: listener.name.clinet.security.ip.filter.list names listener CLINET, which is not in listeners or "
        "controller.listener.names (CLIENT, PLAIN, CONTROLLER): the proxy does not read it; did you mean "
        "listener.name.client.security.ip.filter.list?",
        f"warning: {path}: embedded.broker.count is a key of the embedded controller: the proxy does not read it",
        f"warning: {path}: ignored (a Kafka broker key the proxy does not use): log.dirs, num.io.threads, zookeeper.connect",
    ]


def test_the_controller_warns_about_keys_it_does_not_read(cwd: Path, conf: Path) -> None:
    props = controller_properties(port=0)
    props.update({"log.retention.hours": "12", "audit.log.dir": "/x", "embedded.broker.cnt": "3", "super.user": "User:admin"})
    path = write_properties(conf / "controller.properties", props)

    result = envelope_proxy(cwd, "check-config", "--config", str(path))

    assert result.returncode == 0, result.stderr
    # log.retention.hours is the controller's static broker config (DescribeConfigs answers it): no warning
    assert warnings_of(result.stderr) == [
        f"warning: {path}: audit.log.dir is a key of the proxy: the embedded controller does not read it",
        f"warning: {path}: unknown key embedded.broker.cnt: the embedded controller does not read it; did you mean embedded.broker.count?",
        f"warning: {path}: unknown key super.user: the embedded controller does not read it; did you mean super.users?",
    ]


PLUGIN = """
from authz import AclAuthorizer

CONFIG_KEYS = ("guard.module.key",)


class Guard(AclAuthorizer):
    CONFIG_KEYS = ("guard.allowed.forwarders", "guard.cache.")

    def __init__(self, properties):
        super().__init__(frozenset())
"""


def test_an_authorizer_plugin_declares_its_own_keys(cwd: Path, conf: Path, tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "guard_plugin.py").write_text(PLUGIN)
    props = controller_properties(port=0)
    props.update(
        {
            "authorizer.class.name": "guard_plugin:Guard",
            "guard.allowed.forwarders": "User:proxy",
            "guard.cache.size": "10",
            "guard.cache.ttl.ms": "100",
            "guard.module.key": "x",
            "guard.allowed.forwarder": "User:proxy",
        }
    )
    path = write_properties(conf / "controller.properties", props)

    result = envelope_proxy(cwd, "check-config", "--config", str(path), env={"PYTHONPATH": str(plugins)})

    assert result.returncode == 0, result.stderr
    assert warnings_of(result.stderr) == [
        f"warning: {path}: unknown key guard.allowed.forwarder: the embedded controller does not read it; "
        "did you mean guard.allowed.forwarders?"
    ]


def test_run_logs_the_warnings_at_start(cwd: Path, conf: Path) -> None:
    path = proxy_config(
        conf, **{"listeners": "CLIENT://127.0.0.1:0", "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"}
    )
    with path.open("a") as handle:
        handle.write("shutdown.timeout.msec=100\ncontroller.quorum.bootstrap.servers=127.0.0.1:1\n")
    log = conf / "run.log"
    environment = {key: value for key, value in os.environ.items() if key != "KAFKA_OPTS"}
    with log.open("w") as output:
        process = subprocess.Popen(
            [str(COMMAND), "run", "--config", str(path)], cwd=cwd, env=environment, stdout=output, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 60
        while "shutdown.timeout.msec" not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
    (warning,) = [line for line in log.read_text().splitlines() if "shutdown.timeout.msec" in line]
    assert " WARNING envelope_proxy.cli " in warning
    assert warning.endswith(f"{path}: unknown key shutdown.timeout.msec: the proxy does not read it; did you mean shutdown.timeout.ms?")


def _documented_keys(section: str) -> list[str]:
    """The plain keys of the tables of one section of docs/configuration.md (no `<l>` or `…` forms)."""
    text = DOCS.read_text().split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    keys = []
    for line in text.splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1]
            keys += [key for key in re.findall(r"`([a-z][a-z0-9.\-]*)`", first) if "." in key]
    return keys


@pytest.mark.parametrize(
    ("section", "role"),
    [
        ("Shared listener keys (proxy and embedded controller)", "proxy"),
        ("Shared listener keys (proxy and embedded controller)", "controller"),
        ("TLS (SSL and SASL_SSL listeners)", "proxy"),
        ("TLS (SSL and SASL_SSL listeners)", "controller"),
        ("Proxy", "proxy"),
        ("Audit", "proxy"),
        ("Embedded controller", "controller"),
    ],
)
def test_every_documented_key_is_known_to_its_server(section: str, role: str) -> None:
    keys = _documented_keys(section)
    assert len(keys) > 5
    report = check_keys(dict.fromkeys(keys, "x") | {"listeners": "CLIENT://:9092"}, [], role=role)
    assert report.unknown == ()
    assert report.ignored == ()


# --------------------------------------------------------------------------- errors that name the key to fix


SASL_SSL_MAP = "CLIENT:SASL_SSL,PLAIN:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT"


def test_a_tls_listener_without_a_keystore_names_the_listener_and_its_keys(cwd: Path, conf: Path) -> None:
    result = envelope_proxy(cwd, "check-config", "--config", str(proxy_config(conf, **{"listener.security.protocol.map": SASL_SSL_MAP})))

    assert result.returncode == 2
    assert result.stderr.startswith(
        "configuration error: listener.name.client.ssl.keystore.location (or ssl.keystore.location) is missing for listener CLIENT (SASL_SSL): "
    )
    assert "Invalid value None" not in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_a_tls_listener_with_keys_of_its_own_but_no_keystore_names_them(cwd: Path, conf: Path) -> None:
    path = proxy_config(conf, **{"listener.security.protocol.map": SASL_SSL_MAP, "listener.name.client.ssl.client.auth": "required"})
    result = envelope_proxy(cwd, "check-config", "--config", str(path))
    assert result.returncode == 2
    assert (
        "listener.name.client.ssl.keystore.location (or ssl.keystore.location) is missing for listener CLIENT (SASL_SSL)" in result.stderr
    )


def test_a_scram_listener_without_credentials_names_the_listener_key(cwd: Path, conf: Path) -> None:
    result = envelope_proxy(cwd, "check-config", "--config", str(proxy_config(conf, **{"sasl.enabled.mechanisms": "SCRAM-SHA-256"})))
    assert result.returncode == 2
    assert result.stderr.startswith(
        "configuration error: listener.name.client.sasl.scram.credentials.file (or sasl.scram.credentials.file) is missing for listener CLIENT"
    )


def test_a_listener_typo_blames_listeners(cwd: Path, conf: Path) -> None:
    path = proxy_config(conf, listeners="CLIENTT://127.0.0.1:0,PLAIN://127.0.0.1:0")
    result = envelope_proxy(cwd, "check-config", "--config", str(path))
    assert result.returncode == 2
    assert result.stderr == (
        "configuration error: Invalid value 'CLIENTT://127.0.0.1:0,PLAIN://127.0.0.1:0' for configuration listeners: "
        "listener CLIENTT is not in listener.security.protocol.map (CLIENT, PLAIN, CONTROLLER); did you mean CLIENT?\n"
    )


def test_a_listener_missing_from_the_map_says_to_map_it(cwd: Path, conf: Path) -> None:
    path = proxy_config(conf, listeners="CLIENT://127.0.0.1:0,EXTERNAL://127.0.0.1:0")
    result = envelope_proxy(cwd, "check-config", "--config", str(path))
    assert result.returncode == 2
    assert (
        "for configuration listeners: listener EXTERNAL has no security protocol: add EXTERNAL:<protocol> to listener.security.protocol.map"
        in result.stderr
    )


def test_a_controller_listener_typo_blames_controller_listener_names(cwd: Path, conf: Path) -> None:
    result = envelope_proxy(cwd, "check-config", "--config", str(proxy_config(conf, **{"controller.listener.names": "CONTROLER"})))
    assert result.returncode == 2
    assert (
        "for configuration controller.listener.names: controller listener CONTROLER is not in listener.security.protocol.map"
        in result.stderr
    )
    assert "did you mean CONTROLLER?" in result.stderr


@pytest.mark.parametrize("kind", ["missing", "directory", "not UTF-8"])
def test_an_unreadable_config_file_is_one_line_and_exit_2(cwd: Path, conf: Path, kind: str) -> None:
    path = {"missing": conf / "nope.properties", "directory": conf, "not UTF-8": conf / "latin1.properties"}[kind]
    if kind == "not UTF-8":
        path.write_bytes(b"node.id=\xff\n")
    for command in ("check-config", "run", "controller"):
        result = envelope_proxy(cwd, command, "--config", str(path))
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("error: ") and str(path) in result.stderr
        assert len(result.stderr.splitlines()) == 1


# --------------------------------------------------------------------------- audit --input


def test_audit_over_a_directory_without_records_says_where_it_looked(cwd: Path, tmp_path: Path) -> None:
    empty = tmp_path / "audit-empty"
    staged = tmp_path / "audit-staged" / "envelope-proxy-0" / ".staging"
    empty.mkdir()
    staged.mkdir(parents=True)
    (staged / "audit-1.jsonl").write_text("{}\n")

    nothing = envelope_proxy(cwd, "audit", "--input", str(empty), "--output", str(tmp_path / "out"))
    writing = envelope_proxy(cwd, "audit", "--input", str(staged.parents[1]), "--output", str(tmp_path / "out"))

    assert nothing.returncode == 2
    assert f"no audit records in {empty}" in nothing.stderr
    assert "*.jsonl" in nothing.stderr and f"{empty}/<proxy>/*.jsonl" in nothing.stderr
    assert writing.returncode == 2
    assert "1 file(s) are still being written in .staging/" in writing.stderr
    # the guide's glob over one directory per proxy: Spark would read it as zero records
    url = f"file://{staged.parents[1]}/*"
    glob = envelope_proxy(cwd, "audit", "--input", url, "--output", str(tmp_path / "out"))
    assert glob.returncode == 2
    assert f"no audit records in {url}: it matches {staged.parent}, and none holds a non-empty *.jsonl file; 1 file(s)" in glob.stderr
    assert not (tmp_path / "out").exists()


def test_the_guides_layout_one_directory_per_proxy_is_read(tmp_path: Path) -> None:
    root = tmp_path / "audit"
    for pod in ("envelope-proxy-0", "envelope-proxy-1"):
        (root / pod / ".staging").mkdir(parents=True)
        (root / pod / "audit-1.jsonl").write_text("{}\n")
    (root / "own.jsonl").write_text("{}\n")

    assert audit_input.resolve(str(root)) == audit_input.AuditInput(str(root))  # its own files first, as before
    (root / "own.jsonl").unlink()
    found = audit_input.resolve(str(root))
    assert found.path == f"{root}/*"
    assert found.note is not None and "envelope-proxy-0, envelope-proxy-1" in found.note
