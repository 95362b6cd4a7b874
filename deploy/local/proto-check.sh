#!/usr/bin/env bash
# The proto contract (docs/internal-api.md, "The proto contract"): `buf lint` with proto/buf.yaml's
# rule set, then `buf breaking` of proto/ as it is now against every state of proto/ on the
# current branch since the check exists, so that a removed field, a renumbered tag, a changed type,
# a removed rpc or enum value fails.
#
# Baselines: the check exists since the commit that added proto/buf.yaml. Every first-parent
# commit after it that changed proto/ had a parent whose proto/ callers may have built against;
# those parents, that commit itself and HEAD are the baselines (the 20 newest). Checking only
# HEAD~1 would miss a break made in an earlier commit of the same push. Older history is not
# checked: it was written before these rules.
#
# Usage: bash deploy/local/proto-check.sh
# Exit status: 0 compatible; 1 a lint or breaking failure (or buf missing with
# LAB_REQUIRE_NODE_TOOLS=1); 77 (reported as SKIPPED by deploy/local/test.sh) when buf or the git
# history is not available.
set -euo pipefail

# shellcheck source=deploy/local/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LAB_REPO_ROOT"

buf=""
for candidate in "$LAB_REPO_ROOT/tests/clients/node/node_modules/.bin/buf" \
    "$LAB_STATE_DIR/node/node_modules/.bin/buf" "$(command -v buf || true)"; do
    if [[ -n $candidate && -x $candidate ]]; then
        buf="$candidate"
        break
    fi
done
if [[ -z $buf ]]; then
    if [[ -n ${LAB_REQUIRE_NODE_TOOLS:-} ]]; then
        die "buf is not installed (npm @bufbuild/buf in tests/clients/node: bash deploy/local/test.sh installs it)"
    fi
    printf 'buf is not installed (npm ci in tests/clients/node installs it); nothing checked\n' >&2
    exit 77
fi

log "buf $("$buf" --version): lint proto/"
"$buf" lint proto

if ! git rev-parse --verify --quiet HEAD >/dev/null; then
    printf 'no git history here: the breaking-change check needs the commits of proto/\n' >&2
    exit 77
fi
# A worktree's .git is a file; buf reads the repository's common directory.
git_dir="$(cd "$(git rev-parse --git-common-dir)" && pwd)"
introduced="$(git log --diff-filter=A --format=%H -- proto/buf.yaml | tail -n 1)"
baselines=()
if [[ -n $introduced ]]; then
    mapfile -t changed < <(git rev-list --first-parent "$introduced..HEAD" -- proto)
    baselines+=(HEAD)
    for commit in "${changed[@]}"; do
        baselines+=("$commit^")
    done
    baselines+=("$introduced")
else
    # buf.yaml is not committed yet: the working tree against HEAD.
    baselines+=(HEAD)
fi

checked=0
missing=0
declare -A seen=()
for baseline in "${baselines[@]}"; do
    [[ $checked -lt 20 ]] || break
    if ! commit="$(git rev-parse --verify --quiet "$baseline^{commit}")"; then
        missing=$((missing + 1))
        printf 'baseline %s is not in this clone (shallow?); skipped\n' "$baseline" >&2
        continue
    fi
    [[ -z ${seen[$commit]:-} ]] || continue
    seen[$commit]=1
    log "buf breaking proto/ against $(git log -1 --format='%h %s' "$commit" | cut -c1-100)"
    "$buf" breaking proto --against "$git_dir#ref=$commit,subdir=proto"
    checked=$((checked + 1))
done
if [[ $checked -eq 0 ]]; then
    printf 'no baseline commit is available (%d missing): nothing compared\n' "$missing" >&2
    exit 77
fi
log "proto contract: lint clean, compatible with $checked state(s) of proto/"
