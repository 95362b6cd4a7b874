#!/usr/bin/env bash
# Runs the whole test suite: the Kubernetes manifests, formatting, lints, the dependency policy
# (deny.toml), the protobuf contract (buf), then every unit, integration and end-to-end test.
# PostgreSQL and Redis are reused when running, installed and started privately otherwise; the tests
# create and drop their own databases through TEST_DATABASE_URL and use unique stream prefixes.
#
# Usage: bash deploy/local/test.sh
# Honours: DATABASE_URL (its server is used for the test databases), REDIS_URL, CARGO_TARGET_DIR,
# LAB_STATE_DIR, CI (plain output; a missing kubectl fails the k8s step), LAB_REQUIRE_K8S_TOOLS=1
# (the same outside CI), LAB_K8S_VERSION (deploy/k8s/validate.sh), LAB_REQUIRE_ADVISORIES=1 (an
# advisory database that cannot be fetched fails the advisories step instead of skipping it).
set -euo pipefail

# shellcheck source=deploy/local/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LAB_REPO_ROOT"

ensure_curl
ensure_rust
ensure_postgres
ensure_redis
# The outbox test starts and stops a redis-server of its own, whatever Redis the suite uses.
have redis-server || ensure_apt_packages redis-server
# stripe verifies webhook signatures as receivers do; mcp is the official MCP Python SDK (it brings
# jsonschema, which checks every tool's output against its outputSchema); prometheus_client's
# OpenMetrics parser reads the metrics endpoints; aiosmtpd is the real SMTP server the label
# email reaches; kubernetes_validate checks the rendered Kubernetes manifests offline (the k8s step;
# pip accepts the import name for the package kubernetes-validate); grpcio and grpcio-reflection
# are the reflection client that is not ours, calling the services directly
# (tests/clients/python/grpc_reflection_flow.py); ministack is the S3 server that verifies SigV4
# presigned URLs in platform's blob tests (found at $LAB_STATE_DIR/venv/bin/ministack, or on PATH).
ensure_python_test_packages stripe mcp prometheus_client aiosmtpd kubernetes_validate \
    grpc=grpcio grpc_reflection=grpcio-reflection ministack=ministack==1.5.33
# The official MCP TypeScript SDK (tests/clients/node), driven by the e2e tests like the Python one,
# s3rver, the local S3 server of platform's blob tests, and buf, the proto contract check.
ensure_node_test_packages "$LAB_REPO_ROOT/tests/clients/node"
# The COA PDF tests read the document's text (pdftotext) and decode its QR code (pdftoppm + zbarimg).
{ have pdftotext && have pdftoppm && have zbarimg; } || ensure_apt_packages poppler-utils zbar-tools
# The stablecoin rail's tests run a real anvil (and solcjs regenerates their test ERC-20).
ensure_node_tools @foundry-rs/anvil solc
# Tests that cross-check with Python tools fail instead of skipping when those are missing.
export LAB_REQUIRE_PYTHON_TOOLS=1
# The hosted checkout page is tested in a real browser (chromium + npm playwright-core).
ensure_browser_test_tools
export LAB_REQUIRE_BROWSER=1
# Tests that run npm tools (s3rver) fail instead of skipping when those are missing.
export LAB_REQUIRE_NODE_TOOLS=1

# Tests connect as a superuser to the `postgres` database and create a fresh database per test.
export TEST_DATABASE_URL="$PG_ADMIN_URL"
export TEST_REDIS_URL="$REDIS_URL"
# Colour codes only clutter CI logs.
if [[ -n ${CI:-} ]]; then
    export CARGO_TERM_COLOR=never
fi
prefer_sqlx_offline
if [[ -n ${CARGO_TARGET_DIR:-} ]]; then
    log "cargo target directory: $CARGO_TARGET_DIR"
fi

locked="$(cargo_locked_flag)"
passed=()
skipped=()
failed=()

# step NAME COMMAND... — runs one step, records its failure and carries on, so that one run reports
# every broken step (formatting, lints and tests are independent). Exit status 77 (the automake
# convention) means the step could not check anything here: it is reported as skipped, not passed.
step() {
    local name="$1"
    shift
    log "$name: $*"
    local started=$SECONDS status=0
    "$@" || status=$?
    if [[ $status -eq 0 ]]; then
        log "$name: passed in $((SECONDS - started)) s"
        passed+=("$name")
    elif [[ $status -eq 77 ]]; then
        printf 'SKIPPED: %s (see above): %s\n' "$name" "$*" >&2
        skipped+=("$name")
    else
        printf 'FAILED: %s (exit status %d): %s\n' "$name" "$status" "$*" >&2
        failed+=("$name")
    fi
}

# $locked is empty or one word; it must vanish entirely when empty.
# shellcheck disable=SC2086
{
    # Seconds: kubectl kustomize renders the base and every overlay, then each document is
    # validated against the Kubernetes schemas and the project's rules (deploy/k8s/validate.sh).
    step "k8s" bash deploy/k8s/validate.sh
    step "fmt" cargo fmt --all -- --check
    step "clippy" cargo clippy --workspace --all-targets $locked -- -D warnings
    # Seconds: the dependency policy in deny.toml (licenses, duplicate versions, crates.io only),
    # then the RustSec advisories, skipped when their database cannot be fetched
    # (deploy/local/deny.sh).
    step "deny" bash deploy/local/deny.sh
    step "advisories" bash deploy/local/deny.sh advisories
    # Seconds: buf lint and buf breaking of proto/ against every state of proto/ on this branch
    # since the check exists (deploy/local/proto-check.sh; docs/internal-api.md).
    step "proto" bash deploy/local/proto-check.sh
    step "test" cargo test --workspace --no-fail-fast $locked
}

skipped_note=""
if [[ ${#skipped[@]} -gt 0 ]]; then
    skipped_note="; SKIPPED, nothing checked (see its log above): ${skipped[*]}"
fi
if [[ ${#failed[@]} -gt 0 ]]; then
    printf '\nTest suite FAILED; failing steps: %s%s\n' "${failed[*]}" "$skipped_note" >&2
    exit 1
fi
passed_list="${passed[*]}"
printf '\nTest suite passed: %s%s.\n' "${passed_list// /, }" "$skipped_note"
