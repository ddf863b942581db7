#!/usr/bin/env bash
# One command from a fresh clone to a working sharedtask (see README.md):
#
#   bash setup.sh            install, start Docker, build images, run the demo on the bundled samples
#   bash setup.sh --test     install, start Docker, build images, run the whole test suite
#   bash setup.sh --install  install and start Docker only
#
# Idempotent: every step is skipped when already done, and says so.
# Extra arguments after --test go to pytest (e.g. `bash setup.sh --test -m "not docker"`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

MODE=demo
case "${1:-}" in
    --test) MODE=test; shift ;;
    --install) MODE=install; shift ;;
    --demo) MODE=demo; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
esac

say() { printf '[sharedtask] %s\n' "$*"; }
VENV="${SHAREDTASK_VENV:-.venv}"
PY="${PYTHON:-python3}"

# 1. Python environment -------------------------------------------------------
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "[sharedtask] ERROR: Python >= 3.11 is needed ($PY is $("$PY" --version 2>&1))" >&2; exit 1; }
if [ ! -x "$VENV/bin/python" ]; then
    say "creating the virtual environment $VENV"
    "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.sharedtask-installed"
WANT="$(sha256sum pyproject.toml | cut -c1-16)"
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$WANT" ]; then
    say "installing sharedtask and its test dependencies into $VENV (pip, a few minutes the first time)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test]'
    echo "$WANT" > "$STAMP"
else
    say "sharedtask is installed in $VENV (pyproject.toml unchanged)"
fi
# Bytecode for every module, whatever the environment: with PYTHONDONTWRITEBYTECODE=1 set (common in
# containers and CI) an editable install would compile the package on every start (pip compiles a
# wheel's modules itself). compileall skips modules whose .pyc is current, so this is quick when done.
say "compiling the package's bytecode (src/sharedtask)"
"$VENV/bin/python" -m compileall -q -j 0 src/sharedtask >/dev/null

# 2. Docker daemon and base image --------------------------------------------
say "checking Docker (daemon, base image)"
if [ "$(id -u)" = 0 ]; then bash docker/setup.sh; else sudo bash docker/setup.sh; fi

# 3. Test tools from Debian, test mode only: chromium (headless browser for the report and
#    service pages), busybox-static (the tiny FROM-scratch images the service tests upload),
#    postgresql (the service's database tests start their own server on a loopback port),
#    gcc (the ARQMath conversion's C reader, which the tests build and compare with Python),
#    curl (the README's HTTP examples, which tests/test_docs.py runs as written) --
if [ "$MODE" = test ]; then
    MISSING=""
    command -v curl >/dev/null 2>&1 || MISSING="$MISSING curl"
    command -v cc >/dev/null 2>&1 || MISSING="$MISSING gcc libc6-dev"
    command -v chromium >/dev/null 2>&1 || MISSING="$MISSING chromium"
    dpkg -s busybox-static >/dev/null 2>&1 || MISSING="$MISSING busybox-static"
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || MISSING="$MISSING postgresql"
    # mkfs.ext4: the sandbox's kernel-enforced output and disk limits (sandbox/limitfs.py)
    command -v mkfs.ext4 >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v mkfs.ext4 >/dev/null 2>&1 \
        || MISSING="$MISSING e2fsprogs"
    if [ -n "$MISSING" ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            say "installing from Debian for the tests:$MISSING"
            # shellcheck disable=SC2086
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $MISSING >/dev/null \
                || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $MISSING >/dev/null; }
        else
            say "missing for the tests:$MISSING (their tests will be skipped; install them with apt-get)"
        fi
    fi
fi

# 3b. A real broker, a tiny static shell and a registry for the compute-worker tests (Debian's redis-server,
#     busybox-static and docker-registry), test mode only; the tests start their own redis-server on a free loopback port.
if [ "$MODE" = test ]; then
    for pair in redis-server:redis-server busybox:busybox-static docker-registry:docker-registry; do
        bin=${pair%%:*}; pkg=${pair#*:}
        if ! command -v "$bin" >/dev/null 2>&1 || { [ "$bin" = busybox ] && ! dpkg -s busybox-static >/dev/null 2>&1; }; then
            if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
                say "installing Debian's $pkg (for the compute-worker tests)"
                DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null \
                    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$pkg" >/dev/null; }
            else
                say "$pkg is missing: the compute-worker tests will be skipped (install it: apt-get install $pkg)"
            fi
        fi
    done
    # Debian starts a system redis-server on 6379 when it installs it; the tests never use it.
fi

# 4. The job ------------------------------------------------------------------
case "$MODE" in
    install) say "done: activate with 'source $VENV/bin/activate', then run 'sharedtask --help'" ;;
    test) say "running the test suite"; exec "$VENV/bin/python" -m pytest "$@" ;;
    demo) say "running the demo on the bundled samples (then 'source $VENV/bin/activate' puts sharedtask on the PATH)"
          exec "$VENV/bin/sharedtask" demo "$@" ;;
esac
