#!/usr/bin/env bash
# Docker where there is none: make `docker info` answer and make sure the
# project's base image exists. Idempotent: a second run takes seconds.
#
#   sudo docker/setup.sh            # as root on Debian when no daemon runs
#   docker/setup.sh                 # anywhere with a working daemon: image only
#
# Steps (each one skipped when already done, each one said out loud):
#   1. daemon: if `docker info` fails, apt-get install docker.io (+ debootstrap)
#      and start dockerd in the background (log: /var/log/sharedtask-dockerd.log).
#   2. base image $SHAREDTASK_BASE_IMAGE (default sharedtask/base:latest), built
#      from docker/base/Dockerfile. Skipped when the image's label
#      sharedtask.source-hash equals the hash of its inputs.
#   1b. the gVisor runtime: apt-get install runsc when missing, registered in
#      /etc/docker/daemon.json with --network=none, dockerd reloaded by SIGHUP.
#   3. the Dockerfile's BASE_IMAGE: the official python image when present or
#      pullable; otherwise (no registry, as on the project's machines, see
#      docker/README.md) a Debian trixie image made offline
#      with debootstrap and `docker import`, tagged sharedtask/os:trixie.
#
# Environment:
#   SHAREDTASK_BASE_IMAGE   name of the image to build (default sharedtask/base:latest)
#   SHAREDTASK_BUILD_FROM   force the Dockerfile's BASE_IMAGE (skips detection)
#   SHAREDTASK_FORCE_BUILD  =1 rebuilds the base image even when up to date
#   DEBIAN_MIRROR           mirror for debootstrap (default: deb.debian.org)
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${SHAREDTASK_BASE_IMAGE:-sharedtask/base:latest}"
OFFICIAL_BASE="python:3.12-slim-trixie"
OS_IMAGE="sharedtask/os:trixie"
DOCKERD_LOG="/var/log/sharedtask-dockerd.log"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
DAEMON_TIMEOUT="${SHAREDTASK_DAEMON_TIMEOUT:-60}"

T0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
say()  { printf '[setup %6ss] %s\n' "$(elapsed "$T0")" "$*"; }
die()  { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
step_start() { STEP_T=$(date +%s.%N); }
step_done()  { say "$1 (took $(elapsed "$STEP_T") s)"; }

# ---------------------------------------------------------------- 1. daemon
need_root() {
    [ "$(id -u)" = 0 ] || die "$1 needs root (run: sudo $0)"
}

apt_install_missing() {
    # Install only the packages whose commands are absent; one apt-get update.
    local pkgs=()
    command -v dockerd >/dev/null 2>&1 || pkgs+=(docker.io)
    command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || pkgs+=(debootstrap)
    if [ "${#pkgs[@]}" -eq 0 ]; then
        say "docker.io and debootstrap are installed"
        return
    fi
    need_root "installing ${pkgs[*]}"
    command -v apt-get >/dev/null 2>&1 || die "no apt-get: install Docker by hand (https://docs.docker.com/engine/install/)"
    step_start
    say "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    say "apt-get install -y ${pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
    step_done "installed ${pkgs[*]}"
}

ensure_daemon() {
    if docker info >/dev/null 2>&1; then
        say "docker daemon answers: nothing to do for the daemon"
        return
    fi
    say "docker daemon does not answer: installing/starting it"
    need_root "starting dockerd"
    apt_install_missing
    if pgrep -x dockerd >/dev/null 2>&1; then
        say "dockerd is already running (pid $(pgrep -x dockerd | head -1)); waiting for it"
    else
        say "starting dockerd in the background (log: $DOCKERD_LOG)"
        # setsid: the daemon must outlive this script and its terminal.
        setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
    fi
    step_start
    local waited=0
    until docker info >/dev/null 2>&1; do
        if [ "$waited" -ge "$DAEMON_TIMEOUT" ]; then
            tail -n 20 "$DOCKERD_LOG" >&2 || true
            die "dockerd did not answer within ${DAEMON_TIMEOUT} s (see $DOCKERD_LOG above)"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    step_done "docker daemon is up ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"
}

# ------------------------------------------------- 1b. gVisor (runsc) runtime
# `sharedtask run --runtime runsc` needs dockerd to know runsc. Debian ships it; the
# runtime gets --network=none itself (runsc's own netstack is not wanted: the
# sandbox never gives a container a network under gVisor). dockerd reloads
# runtimes on SIGHUP, so a running daemon is not restarted. SHAREDTASK_NO_RUNSC=1 skips.
ensure_runsc() {
    if [ "${SHAREDTASK_NO_RUNSC:-0}" = 1 ]; then say "runsc: skipped (SHAREDTASK_NO_RUNSC=1)"; return; fi
    if docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; then
        say "runsc (gVisor) is a docker runtime: nothing to do"
        return
    fi
    if [ "$(id -u)" != 0 ]; then say "runsc: not configured (needs root; --runtime runsc will be refused)"; return; fi
    if ! command -v runsc >/dev/null 2>&1; then
        if ! command -v apt-get >/dev/null 2>&1; then say "runsc: not installed and no apt-get; --runtime runsc will be refused"; return; fi
        step_start
        say "apt-get install -y runsc (gVisor)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends runsc >/dev/null 2>&1 \
            || { DEBIAN_FRONTEND=noninteractive apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends runsc >/dev/null; } \
            || { say "runsc: could not be installed; --runtime runsc will be refused"; return; }
        step_done "installed runsc ($(runsc --version 2>/dev/null | head -1))"
    fi
    mkdir -p /etc/docker
    python3 - "$(command -v runsc)" <<'PY'
import json, os, sys
path = "/etc/docker/daemon.json"
config = json.load(open(path)) if os.path.exists(path) and os.path.getsize(path) else {}
config.setdefault("runtimes", {})["runsc"] = {"path": sys.argv[1], "runtimeArgs": ["--network=none"]}
tmp = path + ".sharedtask.tmp"
with open(tmp, "w") as fh:
    json.dump(config, fh, indent=2)
os.replace(tmp, path)
PY
    say "added runsc to /etc/docker/daemon.json; reloading dockerd (SIGHUP)"
    pkill -HUP -x dockerd || true
    local waited=0
    until docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; do
        [ "$waited" -ge 20 ] && { say "runsc: dockerd did not pick it up (see $DOCKERD_LOG)"; return; }
        sleep 0.5; waited=$((waited + 1))
    done
    say "runsc (gVisor) is a docker runtime now"
}

# ---------------------------------------------------------- 2. image inputs
# The build context is staged from exactly the files the Dockerfile copies, so
# that (a) the hash covers what the image contains, (b) the legacy builder does
# not upload .venv/.git, and (c) a re-run can skip the build.
stage_context() {
    CONTEXT="$(mktemp -d "${TMPDIR:-/tmp}/sharedtask-base-ctx.XXXXXX")"
    trap 'rm -rf "$CONTEXT"' EXIT
    mkdir -p "$CONTEXT/docker/base"
    cp "$REPO_ROOT/docker/base/Dockerfile" "$CONTEXT/docker/base/Dockerfile"
    cp "$REPO_ROOT/pyproject.toml" "$CONTEXT/"
    if [ -f "$REPO_ROOT/README.md" ]; then cp "$REPO_ROOT/README.md" "$CONTEXT/"; else : >"$CONTEXT/README.md"; fi
    # tar keeps the tree; caches and bytecode are not inputs.
    tar -C "$REPO_ROOT" --exclude='__pycache__' --exclude='*.pyc' --exclude='.pytest_cache' \
        -cf - src tasks | tar -C "$CONTEXT" -xf -
}

context_hash() {
    # sha256 over sorted (path, content hash) pairs: independent of mtimes.
    (cd "$CONTEXT" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16
}

image_label() {
    docker image inspect -f '{{ index .Config.Labels "sharedtask.source-hash" }}' "$1" 2>/dev/null || true
}

# ------------------------------------------------------- 3. the OS base image
make_offline_os_image() {
    if docker image inspect "$OS_IMAGE" >/dev/null 2>&1; then
        say "offline OS image $OS_IMAGE exists: reusing it"
        return
    fi
    need_root "debootstrap"
    apt_install_missing
    local root
    root="$(mktemp -d /var/tmp/sharedtask-rootfs.XXXXXX)"
    step_start
    say "debootstrap trixie (minbase + python3, python3-venv, ca-certificates, openjdk-21-jre-headless) into $root from $MIRROR"
    debootstrap --variant=minbase \
        --include=python3,python3-venv,ca-certificates,openjdk-21-jre-headless \
        trixie "$root" "$MIRROR" >"$root.log" 2>&1 \
        || { tail -n 30 "$root.log" >&2; die "debootstrap failed (full log: $root.log)"; }
    step_done "debootstrap finished"
    # Only in this local image: builds here reach PyPI through a TLS-intercepting
    # proxy whose CA is in the host's bundle (docker/README.md).
    # Real users' Dockerfiles never see this.
    if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
        cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/host-ca-bundle.crt"
        say "copied the host's CA bundle into the image as /etc/ssl/certs/host-ca-bundle.crt (pip uses it)"
    fi
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    step_start
    say "docker import -> $OS_IMAGE"
    tar -C "$root" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'ENV PIP_CERT=/etc/ssl/certs/host-ca-bundle.crt' \
        --change 'ENV REQUESTS_CA_BUNDLE=/etc/ssl/certs/host-ca-bundle.crt' \
        --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/host-ca-bundle.crt' \
        --change 'LABEL sharedtask.origin=debootstrap-trixie-offline' \
        --change 'CMD ["/bin/bash"]' \
        - "$OS_IMAGE" >/dev/null
    rm -rf "$root" "$root.log"
    step_done "imported $OS_IMAGE ($(docker image inspect -f '{{.Size}}' "$OS_IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

choose_build_from() {
    if [ -n "${SHAREDTASK_BUILD_FROM:-}" ]; then
        BUILD_FROM="$SHAREDTASK_BUILD_FROM"
        say "BASE_IMAGE forced by SHAREDTASK_BUILD_FROM: $BUILD_FROM"
    elif docker image inspect "$OFFICIAL_BASE" >/dev/null 2>&1; then
        BUILD_FROM="$OFFICIAL_BASE"
        say "official $OFFICIAL_BASE is present locally: building FROM it"
    elif docker image inspect "$OS_IMAGE" >/dev/null 2>&1; then
        BUILD_FROM="$OS_IMAGE"
        say "no $OFFICIAL_BASE locally, offline image $OS_IMAGE exists: building FROM it"
    else
        say "trying to pull $OFFICIAL_BASE (20 s limit)"
        if timeout 20 docker pull -q "$OFFICIAL_BASE" >/dev/null 2>&1; then
            BUILD_FROM="$OFFICIAL_BASE"
            say "pulled $OFFICIAL_BASE"
        else
            say "no registry reachable: making the OS image offline with debootstrap"
            make_offline_os_image
            BUILD_FROM="$OS_IMAGE"
        fi
    fi
}

ensure_base_image() {
    stage_context
    local hash current
    hash="$(context_hash)"
    current="$(image_label "$IMAGE")"
    if [ "$current" = "$hash" ] && [ "${SHAREDTASK_FORCE_BUILD:-0}" != 1 ]; then
        say "$IMAGE is up to date (sharedtask.source-hash=$hash): not rebuilding"
        return
    fi
    if [ -n "$current" ]; then
        say "$IMAGE is stale (label $current, inputs $hash): rebuilding"
    else
        say "$IMAGE is missing or unlabelled: building (inputs $hash)"
    fi
    choose_build_from
    # The legacy builder is what a docker.io daemon without buildx offers.
    if ! docker buildx version >/dev/null 2>&1; then export DOCKER_BUILDKIT=0; fi
    step_start
    say "docker build -f docker/base/Dockerfile --build-arg BASE_IMAGE=$BUILD_FROM -t $IMAGE"
    docker build -q \
        -f "$CONTEXT/docker/base/Dockerfile" \
        --build-arg "BASE_IMAGE=$BUILD_FROM" \
        --label "sharedtask.source-hash=$hash" \
        --label "sharedtask.built-from=$BUILD_FROM" \
        -t "$IMAGE" "$CONTEXT" >"$CONTEXT.build.log" 2>&1 \
        || { tail -n 40 "$CONTEXT.build.log" >&2; die "docker build failed (log: $CONTEXT.build.log)"; }
    rm -f "$CONTEXT.build.log"
    step_done "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
}

smoke_test() {
    step_start
    local out
    out="$(docker run --rm --network none "$IMAGE" sh -c \
        'python -c "import sharedtask.formats, yaml, jsonschema, rich; import sharedtask; print(sharedtask.__version__)" && java -version 2>&1 | head -1')" \
        || die "smoke test of $IMAGE failed"
    step_done "smoke test: sharedtask $(echo "$out" | head -1), $(echo "$out" | tail -1)"
}

say "repository: $REPO_ROOT; image: $IMAGE"
ensure_daemon
ensure_runsc
ensure_base_image
smoke_test
say "done: docker is ready and $IMAGE exists"
