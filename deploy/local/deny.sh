#!/usr/bin/env bash
# Checks the dependency tree against the policy in deny.toml with cargo-deny (docs/operations.md,
# "Dependency policy"): the `deny` and `advisories` steps of deploy/local/test.sh.
#
# Usage: bash deploy/local/deny.sh              licenses, duplicate versions (bans) and sources: a few
#                                               seconds, offline once the crates are downloaded
#        bash deploy/local/deny.sh advisories   RustSec advisories and yanked versions
#
# The advisories check needs the RustSec advisory database, which cargo-deny clones with git from its
# git host; no package registry ships it. When it cannot be fetched nothing is checked: the script
# says so and exits 77 (test.sh reports the step as skipped), or 1 with LAB_REQUIRE_ADVISORIES=1.
set -euo pipefail

# shellcheck source=deploy/local/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LAB_REPO_ROOT"

ensure_rust
ensure_cargo_deny
# A CI log has no terminal: no colour codes there.
if [[ -n ${CI:-} ]]; then
    export CARGO_TERM_COLOR=never
fi

# --locked when there is a Cargo.lock: the lock file is what gets checked, never a fresh resolution.
locked=()
if [[ -n $(cargo_locked_flag) ]]; then
    locked=(--locked)
fi

case "${1:-}" in
    "")
        cargo deny "${locked[@]}" check bans licenses sources
        ;;
    advisories)
        # cargo-deny fetches the database with the git command line.
        have git || ensure_apt_packages git
        fetch_log="$(mktemp)"
        trap 'rm -f "$fetch_log"' EXIT
        # Unreachable hosts usually fail at once (no DNS); the limit covers a network that drops.
        if ! timeout 300 cargo deny fetch db >"$fetch_log" 2>&1; then
            sed 's/^/    /' "$fetch_log" >&2
            if [[ ${LAB_REQUIRE_ADVISORIES:-} == 1 ]]; then
                die "advisories: the RustSec advisory database could not be fetched (cargo deny fetch db, above)"
            fi
            printf '%s\n' \
                "SKIPPED: advisories: the RustSec advisory database could not be fetched (cargo deny" \
                "fetch db, above), so no crate was checked against security advisories or for yanked" \
                "versions. Set LAB_REQUIRE_ADVISORIES=1 to make this a failure." >&2
            exit 77
        fi
        cargo deny "${locked[@]}" check advisories
        ;;
    *)
        die "usage: bash deploy/local/deny.sh [advisories]"
        ;;
esac
