# Two entry points: `make demo` and `make test`. Both set up what they need.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# The setup targets run side by side (`make test`), and dpkg installs one package set at a time: every apt-get waits
# its turn on one lock instead of failing on dpkg's.
APT_GET := flock /tmp/kafka-envelope-proxy-apt.lock apt-get

.PHONY: demo test authorizer-tools class-archive lint typecheck layers tools browser krb5 kafka kafka-jars kafka-class-archive client-matrix-tools deploy-check image image-tools image-test image-when-possible bench-audit bench-forwarding bench-soak bench-idle fuzz clean

$(STAMP): pyproject.toml | krb5
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[spark,test,kerberos]'
	touch $(STAMP)

# MIT krb5: python-gssapi builds against libkrb5-dev, and the GSSAPI tests run a KDC of their own (krb5-kdc,
# kdb5_util and kadmin.local). Installed when missing and we may (root), before the venv; otherwise those tests skip locally.
krb5:
	@command -v krb5-config >/dev/null && command -v krb5kdc >/dev/null && command -v kadmin.local >/dev/null || { [ "$$(id -u)" = 0 ] && ($(APT_GET) update -qq && DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq --no-install-recommends krb5-kdc krb5-admin-server krb5-user libkrb5-dev) >/dev/null 2>&1; } || echo "MIT krb5 not installed (Debian packages krb5-kdc krb5-admin-server krb5-user libkrb5-dev): python-gssapi cannot build and the Kerberos tests will be skipped (fail when CI=true)"

# kcat and haproxy are Debian packages; installed when missing and we may (root), otherwise their tests skip locally.
tools:
	@command -v kcat >/dev/null || { [ "$$(id -u)" = 0 ] && ($(APT_GET) update -qq && $(APT_GET) install -y -qq kcat) >/dev/null 2>&1; } || echo "kcat not installed: its test will be skipped (fails when CI=true)"
	@command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || { [ "$$(id -u)" = 0 ] && ($(APT_GET) update -qq && $(APT_GET) install -y -qq --no-install-recommends haproxy) >/dev/null 2>&1; } || echo "haproxy not installed (Debian package haproxy): the tests behind a load balancer will be skipped (fail when CI=true)"
	@command -v promtool >/dev/null || { [ "$$(id -u)" = 0 ] && ($(APT_GET) update -qq && $(APT_GET) install -y -qq --no-install-recommends prometheus) >/dev/null 2>&1; } || echo "promtool not installed (Debian package prometheus): the deploy/prometheus checks will be skipped (fail when CI=true)"
	@command -v systemd-analyze >/dev/null || { [ "$$(id -u)" = 0 ] && ($(APT_GET) update -qq && $(APT_GET) install -y -qq --no-install-recommends systemd) >/dev/null 2>&1; } || echo "systemd-analyze not installed (Debian package systemd): the deploy/systemd checks will be skipped (fail when CI=true)"
	@command -v java >/dev/null || { echo "java not found: the Spark and interop tests need Java 17+"; [ "$$CI" != true ]; }
	@command -v javac >/dev/null || { echo "javac not found: the Java AdminClient interop test compiles a program"; [ "$$CI" != true ]; }
	@command -v mvn >/dev/null || { echo "mvn not found: needed once to download the Kafka jars for the interop tests"; [ "$$CI" != true ]; }

# Headless Chromium (Debian's chromium, and a font) for the report page's browser test (tests/spark_audit/test_report_page.py);
# installed when missing and we may (root), otherwise that test skips locally (and fails when CI=true).
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && ($(APT_GET) update -qq && DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq --no-install-recommends chromium fonts-dejavu-core) >/dev/null 2>&1; } || echo "chromium not installed (Debian package chromium): the report page's browser test will be skipped (fails when CI=true)"

# Kafka 4.x jars from Maven Central into ~/.cache/kafka-envelope-proxy (once).
kafka-jars: $(STAMP)
	$(PY) -c 'from devkit.kafka_node import ensure_kafka_jars; print(ensure_kafka_jars())'

# The class-data-sharing archive of Kafka's JVMs (devkit/kafka_class_archive.py): made once on this machine from a node
# and Kafka's tools (about 25 s, Kafka's jars fetched first), then mapped by every Kafka node, tool and compiled client
# the tests start (a tool's JVM in about half the CPU). Never fails the build: without it those JVMs start as before.
kafka-class-archive: $(STAMP)
	@$(PY) -m devkit.kafka_class_archive >/dev/null || echo "no Kafka class archive: Kafka's JVMs start without one"

# The client matrix's Go (franz-go kadm) and Node (kafkajs) clients, built and installed once into
# ~/.cache/kafka-envelope-proxy/client-matrix from the pinned tests/interop/client_matrix/{kadm,kafkajs} (Go module
# proxy, npm registry; about a minute the first time, nothing after). Without go or node their matrix cells fail.
client-matrix-tools:
	@$(PYTHON) -m devkit.client_tools >/dev/null || { echo "the client matrix's Go and Node clients could not be made (see above)"; [ "$$CI" != true ]; }

# The OPA server (built from its Go module, about 160 CPU-s) and the OPA plug-in's jars (Maven Central) into
# ~/.cache/kafka-envelope-proxy, once, for tests/interop/test_authz_probe_kafka.py; nothing after. Like the client tools,
# this needs no venv (devkit's builders use the standard library alone), so `make test` makes both beside the pip install.
authorizer-tools:
	@$(PYTHON) -m devkit.authorizer_plugins >/dev/null || { echo "the OPA server or the OPA plug-in could not be made (see above)"; [ "$$CI" != true ]; }

# A real KRaft node (broker+controller, SASL_PLAINTEXT, StandardAuthorizer) for manual use; prints the proxy settings.
kafka: kafka-jars
	$(PY) -m devkit.kafka_node

demo: $(STAMP)
	$(VENV)/bin/envelope-proxy demo --workdir demo-output

lint: $(STAMP)
	$(VENV)/bin/ruff check .

typecheck: $(STAMP)
	$(VENV)/bin/mypy envelope apiversions authz proxy controller spark_audit envelope_proxy fuzz devkit

# The import rules of docs/architecture.md (import-linter contracts in pyproject.toml).
layers: $(STAMP)
	$(VENV)/bin/lint-imports

# tests/images runs the images `image-when-possible` just built; without a container engine it skips (loudly).
# Setup side by side, then the tiers. The pip install (PySpark's 400 MB sdist made into a wheel, gssapi compiled) keeps
# one core busy for about two minutes on a fresh machine, and the apt installs, the Go and Node clients and the OPA
# server need no venv: they run beside it (the apt installs one at a time, on APT_GET's lock). The checks, the images
# and the class archives (the Spark driver's, Kafka's JVMs') follow the venv, side by side; a failed check still fails
# the target.
test:
	$(MAKE) --no-print-directory -j6 -Otarget lint typecheck layers image-when-possible class-archive kafka-class-archive client-matrix-tools authorizer-tools tools browser
	$(PY) -m devkit.test_tiers

# The Spark driver's class archive (spark_audit/class_archive.py): made once on this machine from a job over 20,000
# generated lines (about 90 s), then mapped by every Spark session the package starts. Never fails the build.
class-archive: $(STAMP)
	@$(PY) -m spark_audit.make_class_archive --exists >/dev/null || { sample=$$(mktemp -d) && $(PY) bench/audit/generate.py "$$sample" --records 20000 >/dev/null && $(PY) -m spark_audit.make_class_archive --input "$$sample"; made=$$?; rm -rf "$$sample"; [ $$made = 0 ]; } || echo "no class archive: Spark sessions start without one"

# Only the offline checks of deploy/ (container, Kubernetes, Prometheus, Grafana, systemd files); part of `make test`.
deploy-check: $(STAMP) tools
	$(PY) -m pytest -q tests/deploy

# A container engine (podman, runc) and mmdebstrap (the base image where no registry is reachable): Debian packages,
# installed when no engine is there and we may (root with apt-get); otherwise tests/images skips (and fails when CI=true
# on a machine where they could have been installed). A docker client without a reachable daemon is no engine.
image-tools:
	@tools/container/engine --version >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ($(APT_GET) update -qq && $(APT_GET) install -y -qq podman runc mmdebstrap) >/dev/null 2>&1; } || echo "!!! no container engine (podman or docker) and none could be installed: tests/images will be SKIPPED"
	@command -v podman >/dev/null && ! command -v mmdebstrap >/dev/null && [ "$$(id -u)" = 0 ] && ($(APT_GET) install -y -qq mmdebstrap) >/dev/null 2>&1 || true

# The proxy image and the audit image (deploy/container), with podman or docker; the base from Docker Hub, or built
# from Debian packages where no registry is reachable (tools/container/build_images.py, docs/deploy.md section 2).
image: $(STAMP) image-tools
	$(PY) tools/container/build_images.py --python $(PY)

# The images run as the manifests run them: controller and proxy containers, a real client, SIGTERM, the audit job.
image-test: image
	$(PY) -m pytest -q tests/images

image-when-possible: $(STAMP) image-tools
	@if tools/container/engine --version >/dev/null 2>&1; then $(MAKE) --no-print-directory image; else echo "!!! no container engine: the images are not built and tests/images will be SKIPPED"; fi

# On-demand benchmark of the Spark audit job on realistic records, beside a plain ingest and a JSON -> Parquet
# floor in the same run (not part of `make test`). N=1000000 for one size; AUDIT_ARGS=--compare adds DuckDB; prints JSON.
N ?= 1000000,5000000
AUDIT_ARGS ?=
bench-audit: $(STAMP)
	$(PY) -m pip install -q -e '.[spark,bench]'
	$(PY) bench/audit/run.py --records $(N) $(AUDIT_ARGS)

# On-demand benchmark of forwarding (not part of `make test`): the proxy beside a Kafka broker, direct Envelopes,
# a zero-work upstream and a bare trio relay, at 1, 8 and 32 connections; prints JSON, also to bench/forwarding/last-run.json.
# FORWARDING_ARGS=--quick for a smoke run. The Go load generator is built into bench/forwarding/bin/.
GO ?= $(shell command -v go || echo /usr/local/go/bin/go)
FORWARDING_ARGS ?=
bench-forwarding: $(STAMP) kafka-jars
	cd bench/forwarding/loadgen && $(GO) build -o ../bin/loadgen .
	$(PY) bench/forwarding/run.py $(FORWARDING_ARGS)

# On-demand: the proxy at its ceiling (zero-work upstream, 32 connections) for 10 minutes, its RSS sampled
# every 10 s; prints JSON with the growth after warm-up. SOAK_ARGS="--minutes 1" for a short run.
bench-soak: $(STAMP)
	cd bench/forwarding/loadgen && $(GO) build -o ../bin/loadgen .
	$(PY) bench/forwarding/soak.py $(SOAK_ARGS)

# On-demand: 2,000 authenticated connections left idle past connections.preauth.idle.ms; prints JSON with the proxy's
# memory per idle connection, and fails unless every one is still open. IDLE_ARGS="--connections 500" for fewer.
IDLE_ARGS ?=
bench-idle: $(STAMP)
	cd bench/forwarding/loadgen && $(GO) build -o ../bin/loadgen .
	$(PY) bench/forwarding/idle.py $(IDLE_ARGS)

# Structure-aware fuzzing of every decoder in worker processes under an address-space limit; prints JSON.
# `make test` runs a 20,000-input slice (tests/fuzz); this is the long run.
FUZZ_INPUTS ?= 1000000
fuzz: $(STAMP)
	$(PY) -m fuzz.run --inputs $(FUZZ_INPUTS) --crash-dir fuzz-crashes

clean:
	rm -rf $(VENV) demo-output .pytest_cache .mypy_cache .ruff_cache
