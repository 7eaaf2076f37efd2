#!/bin/sh
# pip in the build stage, reaching the package index as pip on the building host does: its settings and
# CA bundle come as build secrets (present only during this RUN, never in a layer), wheels the host already
# has come through the bind mount at /wheels. Without them pip uses PyPI directly.
#   pip-install.sh [--python INTERPRETER] ARGS...   (ARGS: those of `pip install`; INTERPRETER: the environment to install into)
set -eu
if [ -f /run/secrets/pip.conf ]; then
    PIP_CONFIG_FILE=/run/secrets/pip.conf
    export PIP_CONFIG_FILE
fi
if [ -f /run/secrets/ca-bundle ]; then
    PIP_CERT=/run/secrets/ca-bundle
    export PIP_CERT
fi
target=""
if [ "${1:-}" = --python ]; then
    target="--python=$2"
    shift 2
fi
# pip does not prefer --find-links over the index for the same version, so the handed-over wheels are tried alone
# first; when one is missing (nothing is installed then), the index is asked as well.
# shellcheck disable=SC2086 # $target is one word or none
if ls /wheels/*.whl >/dev/null 2>&1 \
    && /opt/build/bin/pip $target install --no-cache-dir --disable-pip-version-check --no-index --find-links /wheels "$@"; then
    exit 0
fi
# shellcheck disable=SC2086
exec /opt/build/bin/pip $target install --no-cache-dir --disable-pip-version-check --find-links /wheels "$@"
