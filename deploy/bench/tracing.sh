#!/bin/sh
# What tracing costs (issue 13): builds release, installs wrk when missing, then measures
# `GET /orders/{id}` through the mesh run as separate processes with tracing disabled
# (OTEL_SDK_DISABLED=true), off (no exporter), sampled (10 %) and on (100 % exported over
# OTLP/gRPC), each once per round (two rounds unless --rounds says, alternating direction),
# pgbench -S beside every run, and prints the Markdown tables of docs/performance.md.
#
#   deploy/bench/tracing.sh [--seconds 10] [--connections 16] [--rounds 2] [--modes none,off,sampled,on]
#
# Environment: TEST_DATABASE_URL (admin URL, default postgres://postgres@127.0.0.1:5432/postgres),
# TEST_REDIS_URL (default redis://127.0.0.1:6379), RUST_LOG (default warn).
set -eu
cd "$(dirname "$0")/../.."

# shellcheck source=deploy/bench/common.sh
. deploy/bench/common.sh

export RUST_LOG="${RUST_LOG:-warn}"
export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
export TEST_REDIS_URL="${TEST_REDIS_URL:-redis://127.0.0.1:6379}"
export SQLX_OFFLINE="${SQLX_OFFLINE:-true}"
cargo build --release --quiet -p tests --example tracing_bench --bin lab-process
target_dir="${CARGO_TARGET_DIR:-target}"
exec "$target_dir/release/examples/tracing_bench" "$@"
