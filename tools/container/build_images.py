"""`make image`: the proxy image and the audit image, built with podman or docker (tools/container/engine).

The base is python:3.11-slim-bookworm from Docker Hub when the engine can pull it. Where no container registry
is reachable, the base is made from Debian packages with mmdebstrap (Debian bookworm's python3 is 3.11) and
imported once; its tag names a digest of what went into it, so later builds reuse it. Either way the
Containerfiles are the same: the base is their PYTHON_IMAGE build argument.

pip in the build reaches the package index as pip on this host does: the host's pip settings and CA bundle are
build secrets (files under /run/secrets for one RUN, never in a layer), and wheels this host already has (its
pip cache holds PySpark's, built once from a 400 MB sdist) are handed over in deploy/container/wheels, so
nothing is downloaded twice.

    python3 tools/container/build_images.py [--python .venv/bin/python]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTAINER = ROOT / "deploy" / "container"
WHEELS = CONTAINER / "wheels"
LOCAL_FS_JAR = "hadoop-bare-naked-local-fs.jar"
ENGINE = str(ROOT / "tools" / "container" / "engine")

REGISTRY_BASE = "docker.io/library/python:3.11-slim-bookworm"
VERSION = re.search(r'^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
TAG = VERSION.group(1) if VERSION else "latest"
PROXY_IMAGE = os.environ.get("PROXY_IMAGE", f"localhost/kafka-envelope-proxy:{TAG}")
AUDIT_IMAGE = os.environ.get("AUDIT_IMAGE", f"localhost/kafka-envelope-proxy-audit:{TAG}")

# The local base: what python:3.11-slim-bookworm offers the Containerfiles (python, venv, CA certificates, apt,
# useradd), without documentation, manual pages or translations (as Debian's slim images).
SUITE = "bookworm"
BASE_PACKAGES = ["python3", "python3-venv", "python-is-python3", "ca-certificates"]
DPKG_OPTIONS = [
    "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*",
    "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
]
DEFAULT_SOURCES = f"""Types: deb
URIs: http://deb.debian.org/debian
Suites: {SUITE} {SUITE}-updates
Components: main

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: {SUITE}-security
Components: main
"""

# pip settings passed on to the build; paths of this host (cert, find-links) are replaced by the secret and the wheels.
PIP_KEYS = ("index-url", "extra-index-url", "trusted-host", "timeout", "default-timeout", "retries", "proxy")


def log(message: str) -> None:
    print(f"[image] {message}", flush=True)


def engine(*args: str, check: bool = True, capture: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run([ENGINE, *args], check=check, text=True, capture_output=capture)


def is_podman() -> bool:
    return engine("--version", capture=True).stdout.lower().startswith("podman")


def image_exists(name: str) -> bool:
    return engine("image", "inspect", name, check=False, capture=True).returncode == 0


# --------------------------------------------------------------------------- the base


def host_sources() -> str:
    """The host's Debian bookworm apt sources (deb822 stanzas or one-line entries); Debian's mirrors otherwise."""
    stanzas: list[str] = []
    lines: list[str] = []
    apt = Path("/etc/apt")
    for path in [apt / "sources.list", *sorted((apt / "sources.list.d").glob("*.sources")), *sorted((apt / "sources.list.d").glob("*.list"))]:
        if not path.is_file():
            continue
        text = path.read_text()
        if path.suffix == ".sources":
            for stanza in re.split(r"\n\s*\n", text):
                fields = dict(
                    (key.strip().lower(), value.strip())
                    for key, _, value in (line.partition(":") for line in stanza.splitlines() if line and not line.startswith("#"))
                )
                suites = fields.get("suites", "").split()
                if "deb" in fields.get("types", "").split() and suites and all(s.startswith(SUITE) for s in suites):
                    if fields.get("enabled", "yes").lower() != "no":
                        stanzas.append("\n".join(line for line in stanza.splitlines() if not line.startswith("#")))
        else:
            for line in text.splitlines():
                words = line.split()
                if len(words) >= 3 and words[0] == "deb" and any(w.startswith(SUITE) for w in words[2:3]):
                    lines.append(line)
    if lines and not stanzas:
        return "\n".join(lines) + "\n"
    if stanzas:
        return "\n\n".join(stanzas) + "\n"
    return DEFAULT_SOURCES


def local_base_tag(sources: str) -> str:
    recipe = "\n".join([SUITE, *BASE_PACKAGES, *DPKG_OPTIONS, sources])
    return f"localhost/kafka-envelope-proxy-base:{SUITE}-{hashlib.sha256(recipe.encode()).hexdigest()[:12]}"


def build_local_base() -> str:
    sources = host_sources()
    tag = local_base_tag(sources)
    if image_exists(tag):
        log(f"local base {tag} exists: reused")
        return tag
    mmdebstrap = shutil.which("mmdebstrap")
    if mmdebstrap is None:
        sys.exit(f"no registry base ({REGISTRY_BASE} cannot be pulled) and no mmdebstrap to build one: apt-get install mmdebstrap")
    log(f"building the local base {tag} from Debian {SUITE} packages with mmdebstrap")
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="envelope-proxy-base-") as tmp:
        rootfs = Path(tmp) / "rootfs.tar"
        command = [mmdebstrap, "--quiet", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}"]
        command += [f"--dpkgopt={option}" for option in DPKG_OPTIONS]
        command += [SUITE, str(rootfs), "-"]
        subprocess.run(command, input=sources, text=True, check=True)
        # The same defaults as python:3.11-slim: a shell command, a UTF-8 locale that needs no locales package.
        engine("import", "--change", 'CMD ["python3"]', "--change", "ENV LANG=C.UTF-8", str(rootfs), tag, capture=True)
    log(f"local base {tag} built in {time.monotonic() - started:.0f} s")
    return tag


def choose_base() -> str:
    chosen = os.environ.get("PYTHON_IMAGE")
    if chosen:
        log(f"base {chosen} (PYTHON_IMAGE)")
        return chosen
    if image_exists(REGISTRY_BASE):
        log(f"base {REGISTRY_BASE} (already pulled)")
        return REGISTRY_BASE
    pulled = engine("pull", "-q", REGISTRY_BASE, check=False, capture=True)
    if pulled.returncode == 0:
        log(f"base {REGISTRY_BASE} (pulled)")
        return REGISTRY_BASE
    reason = (pulled.stderr.strip().splitlines() or ["no reason given"])[-1]
    log(f"cannot pull {REGISTRY_BASE} ({reason}): using a base built from Debian packages")
    return build_local_base()


# --------------------------------------------------------------------------- pip's way to the index


def pip_secrets(python: str, directory: Path) -> list[str]:
    """`--secret` options: the host's pip settings (pip.conf) and CA bundle (ca-bundle), when it has them."""
    listed = subprocess.run([python, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False).stdout
    settings: dict[str, str] = {}
    cert = ""
    for line in listed.splitlines():
        name, _, value = line.partition("=")
        key = name.rpartition(".")[2]
        value = value.strip().strip("'\"")
        if key == "cert":
            cert = value
        elif key in PIP_KEYS:
            settings[key] = value
    options: list[str] = []
    if settings:
        conf = directory / "pip.conf"
        conf.write_text("[global]\n" + "".join(f"{key} = {value}\n" for key, value in sorted(settings.items())))
        options += ["--secret", f"id=pip.conf,src={conf}"]
    for candidate in (os.environ.get("PIP_CERT", ""), cert, os.environ.get("SSL_CERT_FILE", ""), os.environ.get("REQUESTS_CA_BUNDLE", "")):
        if candidate and Path(candidate).is_file():
            options += ["--secret", f"id=ca-bundle,src={candidate}"]
            break
    return options


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(files: list[Path]) -> set[tuple[str, str]]:
    """(name, version) of every `name==version` line of requirements files, following `-r`."""
    found: set[tuple[str, str]] = set()
    for path in files:
        for line in path.read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line.startswith("-r "):
                found |= pins([path.parent / line[3:].strip()])
            elif "==" in line:
                name, _, version = line.partition("==")
                found.add((_canonical(name), version.strip()))
    return found


def fill_wheelhouse(python: str) -> None:
    """The pinned wheels from this host's pip cache (or the index) into deploy/container/wheels, for the builds' --find-links.

    Only when the host's interpreter could use them (CPython 3.11 on Linux); pip in the build ignores wheels
    that do not fit its platform anyway and then asks the index."""
    probe = "import sys, platform; print(sys.implementation.name, sys.version_info[:2] == (3, 11), platform.system(), platform.machine())"
    facts = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    if facts[:3] != ["cpython", "True", "Linux"]:
        log(f"host Python is {' '.join(facts)}: no wheels handed over, the builds download their own")
        return
    files = [CONTAINER / "requirements-audit.txt", CONTAINER / "requirements-build.txt"]
    have = {(_canonical(w.name.split("-")[0]), w.name.split("-")[1]) for w in WHEELS.glob("*.whl")}
    if pins(files) <= have:
        log(f"wheels in {WHEELS.relative_to(ROOT)} are complete: reused")
        return
    started = time.monotonic()
    requirements = [option for path in files for option in ("-r", str(path))]
    subprocess.run([python, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", str(WHEELS), *requirements], check=True)
    log(f"wheels ready in {WHEELS.relative_to(ROOT)} ({time.monotonic() - started:.0f} s)")


def hand_over_local_fs_jar(python: str) -> None:
    """The audit job's local file system jar (spark_audit/local_fs.py, fetched with the host's Maven) into the wheels folder."""
    fetch = "from spark_audit.local_fs import local_fs_jar; print(local_fs_jar())"
    done = subprocess.run([python, "-c", fetch], capture_output=True, text=True, check=False)
    jar = Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None
    if jar is None or not jar.is_file():
        log(f"no local file system jar for the audit image (its job keeps Hadoop's): {done.stderr.strip()[-300:]}")
        return
    # Under a name without its version, the one Containerfile.audit copies (the version lives in spark_audit/local_fs.py).
    shutil.copy2(jar, WHEELS / LOCAL_FS_JAR)
    log(f"handed over {jar.name} as {LOCAL_FS_JAR}")


# --------------------------------------------------------------------------- the images


def build(containerfile: str, tag: str, base: str, secrets: list[str]) -> None:
    started = time.monotonic()
    log(f"building {tag} from {containerfile}")
    proxies = [f"--build-arg={name}={os.environ[name]}" for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY") if os.environ.get(name)]
    # podman writes OCI images by default, and the OCI format has no HEALTHCHECK: podman drops it (with a warning).
    docker_format = ["--format", "docker"] if is_podman() else []
    engine(
        "build", *docker_format, "--network", "host", "--file", str(CONTAINER / containerfile), "--build-arg", f"PYTHON_IMAGE={base}",
        *proxies, *secrets, "--tag", tag, str(ROOT),
    )  # fmt: skip
    log(f"built {tag} in {time.monotonic() - started:.0f} s")


def size(tag: str) -> str:
    raw = engine("image", "inspect", "--format", "{{.Size}}", tag, capture=True).stdout.strip()
    return f"{int(raw) / 1e6:.0f} MB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="the host Python whose pip settings and cache the builds use")
    args = parser.parse_args()
    started = time.monotonic()
    base = choose_base()
    fill_wheelhouse(args.python)
    hand_over_local_fs_jar(args.python)
    with tempfile.TemporaryDirectory(prefix="envelope-proxy-pip-") as tmp:
        secrets = pip_secrets(args.python, Path(tmp))
        build("Containerfile", PROXY_IMAGE, base, secrets)
        build("Containerfile.audit", AUDIT_IMAGE, base, secrets)
    log(f"{PROXY_IMAGE}: {size(PROXY_IMAGE)}; {AUDIT_IMAGE}: {size(AUDIT_IMAGE)}; base {base}")
    log(f"done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
