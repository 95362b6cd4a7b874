#!/usr/bin/env bash
# Runs the whole system locally: every service, identity-svc and the gateway in one `labd` process, backed by a local
# PostgreSQL and Redis (reused when running, installed and started privately otherwise). Then it imports
# the demo catalog, creates a demo customer and an API key, and prints a first request to try.
#
# Usage: bash deploy/local/run.sh      (Ctrl-C stops labd; the private databases keep running)
# Honours: DATABASE_URL, REDIS_URL, LABD_HTTP_ADDR, CARGO_TARGET_DIR, LAB_STATE_DIR.
set -euo pipefail

# shellcheck source=deploy/local/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LAB_REPO_ROOT"

ensure_curl
ensure_rust
ensure_postgres
ensure_redis

# labd creates this database when it is missing, so a fresh server needs no manual step.
LABD_DATABASE_URL="${DATABASE_URL:-${PG_ADMIN_URL%/*}/lab}"
LABD_HTTP_ADDR="${LABD_HTTP_ADDR:-127.0.0.1:8080}"
# The address to call: a wildcard bind is reached through loopback.
http_port="${LABD_HTTP_ADDR##*:}"
http_host="${LABD_HTTP_ADDR%:*}"
case "$http_host" in
0.0.0.0 | "[::]" | "") http_host=127.0.0.1 ;;
esac
BASE_URL="http://$http_host:$http_port"

# A second labd (or anything else) on the port would answer our readiness probe and hide a failure.
if tcp_open "$http_host" "$http_port"; then
    die "something is already listening on $http_host:$http_port; stop it or set LABD_HTTP_ADDR"
fi

log "building labd and labctl (debug; the first build takes a few minutes)"
prefer_sqlx_offline
locked="$(cargo_locked_flag)"
# shellcheck disable=SC2086 # $locked is empty or one word
cargo build $locked -p labd -p labctl

target_dir="${CARGO_TARGET_DIR:-$LAB_REPO_ROOT/target}"
LABD_BIN="$target_dir/debug/labd"
LABCTL_BIN="$target_dir/debug/labctl"
[[ -x $LABD_BIN && -x $LABCTL_BIN ]] || die "built binaries not found under $target_dir/debug"

mkdir -p "$LAB_STATE_DIR"
LABD_LOG="$LAB_STATE_DIR/labd.log"
LABD_PID=""

# Stops labd however this script ends (error, Ctrl-C, kill), so no orphan keeps the port.
stop_labd() {
    if [[ -n $LABD_PID ]] && kill -0 "$LABD_PID" 2>/dev/null; then
        log "stopping labd (pid $LABD_PID)"
        kill -TERM "$LABD_PID" 2>/dev/null || true
        wait "$LABD_PID" 2>/dev/null || true
    fi
}
trap stop_labd EXIT
# A background job of a non-interactive shell ignores SIGINT, so the signal traps stop it explicitly
# (through the EXIT trap) and report the conventional exit status.
trap 'exit 130' INT
trap 'exit 143' TERM

# The local run is development mode: published development keys, pepper and sealing key, and the
# development operator whose published credential labctl uses below. A deployment never sets it.
export LAB_DEV_MODE=1
export LABCTL_CREDENTIAL="lab_op_devoperator00000_DevelopmentOperatorSecret0000000"

log "starting labd on $LABD_HTTP_ADDR in DEVELOPMENT MODE (log: $LABD_LOG)"
DATABASE_URL="$LABD_DATABASE_URL" REDIS_URL="$REDIS_URL" LABD_HTTP_ADDR="$LABD_HTTP_ADDR" \
    "$LABD_BIN" >"$LABD_LOG" 2>&1 &
LABD_PID=$!

if ! wait_http "$BASE_URL/api/ready" 120 "$LABD_PID"; then
    printf 'error: labd did not become ready on %s/api/ready; last lines of %s:\n' "$BASE_URL" "$LABD_LOG" >&2
    tail -n 40 "$LABD_LOG" >&2 || true
    exit 1
fi
log "labd is ready"

# json_field NAME — prints the string field NAME of the JSON document on stdin, or nothing. python3 when
# present (exact), otherwise the first `"NAME": "value"` pair found by grep (bare Debian has no python3).
json_field() {
    local doc
    doc="$(cat)"
    if have python3; then
        printf '%s' "$doc" |
            python3 -c 'import json, sys; print(json.load(sys.stdin).get(sys.argv[1], ""))' "$1" 2>/dev/null || true
    else
        printf '%s' "$doc" | tr -d '\n' |
            grep -o "\"$1\"[[:space:]]*:[[:space:]]*\"[^\"]*\"" | head -n 1 |
            sed 's/^"[^"]*"[[:space:]]*:[[:space:]]*"\(.*\)"$/\1/' || true
    fi
}

log "importing the demo catalog"
"$LABCTL_BIN" catalog import catalog-svc/data/catalog.json

log "creating the demo customer and API key"
customer_json="$("$LABCTL_BIN" --json customers ensure --name "Demo Lab Customer" --email demo@example.com)"
CUSTOMER_ID="$(printf '%s' "$customer_json" | json_field id)"
[[ -n $CUSTOMER_ID ]] || die "could not read the customer id from: $customer_json"

key_json="$("$LABCTL_BIN" --json keys create --customer "$CUSTOMER_ID" --name demo --scopes all)"
API_KEY="$(printf '%s' "$key_json" | json_field key)"
[[ -n $API_KEY ]] || die "could not read the API key from labctl's answer"

rule="================================================================================"
cat <<EOF

$rule
  The laboratory testing API is running on $BASE_URL
  DEVELOPMENT MODE: published development keys and secrets; never expose it.

  Demo customer : Demo Lab Customer <demo@example.com> ($CUSTOMER_ID)
  Demo API key  : $API_KEY
                  (shown once; every run of this script creates a new one)

  First request:
    curl -s -H "Authorization: Bearer $API_KEY" \\
      "$BASE_URL/api/v1/agent/catalog?limit=5"

  OpenAPI document : $BASE_URL/api/v1/openapi.json
  labd log         : $LABD_LOG
  Staff CLI        : LABCTL_CREDENTIAL=$LABCTL_CREDENTIAL \\
                       $LABCTL_BIN --help   (the development operator, every role)

  Ctrl-C stops labd. A private PostgreSQL or Redis started by this script keeps
  running (state in $LAB_STATE_DIR) so the next start is fast.
$rule

EOF

# Stay in the foreground with labd; its exit status becomes ours.
wait "$LABD_PID"
