#!/bin/sh
# The mesh benchmark in one command: builds release, installs wrk when missing, starts a mesh
# on a fresh database of the local PostgreSQL and Redis, and prints the Markdown table of
# docs/performance.md ("Through the mesh"). Arguments go to the benchmark, e.g. --seconds 20.
#
#   deploy/bench/mesh.sh [--seconds 10] [--connections 16] [--only reads|writes] [--routes order]
#
# Quick regression check of the latency floor (about a minute, exit status 1 when it fails):
#
#   deploy/bench/mesh.sh --only reads --routes order --seconds 3 --max-p50-ms 10
#
# Environment: BENCH_DATABASE_URL (admin URL, default postgres://postgres@127.0.0.1:5432/postgres),
# BENCH_REDIS_URL (default redis://127.0.0.1:6379), RUST_LOG (default warn, as measured).
set -eu
cd "$(dirname "$0")/../.."

# shellcheck source=deploy/bench/common.sh
. deploy/bench/common.sh

export RUST_LOG="${RUST_LOG:-warn}"
cargo build --release --quiet -p labd --example mesh_bench
target_dir="${CARGO_TARGET_DIR:-target}"
exec "$target_dir/release/examples/mesh_bench" "$@"
