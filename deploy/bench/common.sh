#!/bin/sh
# Shared by the benchmark scripts of deploy/bench: installs wrk (Debian package) when missing and
# insists on pgbench. Sourced from the repository root: `. deploy/bench/common.sh`.

if ! command -v wrk >/dev/null 2>&1; then
    echo "installing wrk (Debian package)" >&2
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get install -y --no-install-recommends wrk >/dev/null \
        || { $SUDO apt-get update >/dev/null && $SUDO apt-get install -y --no-install-recommends wrk >/dev/null; }
fi
command -v pgbench >/dev/null 2>&1 || {
    echo "pgbench is missing: apt-get install postgresql (Debian ships pgbench with the server package)" >&2
    exit 1
}
