#!/usr/bin/env bash
# Checks the protobuf contract with buf (docs/internal-api.md, "The proto contract"): the `proto`
# step of deploy/local/test.sh.
#
# Usage: bash deploy/local/proto-check.sh
#
# 1. `buf lint proto`: the rules and exceptions of proto/buf.yaml.
# 2. `buf breaking`: proto/ as it is in the working tree against earlier states of proto/ in git.
#    The baselines are the first parents of the (at most 20) newest commits on HEAD's first-parent
#    line that changed the contract (a .proto file under proto/, or proto/buf.yaml) and descend from
#    the commit that added proto/buf.yaml (that commit included), plus HEAD itself when the working
#    tree's contract differs from it (an uncommitted change). CI runs on main after a session of
#    several commits: comparing with HEAD~1 only would miss a break made in an earlier commit of the
#    session, while comparing with the state before every contract change since the check exists
#    means that no state of main that a caller may have been built against is broken. States
#    before proto/buf.yaml are not baselines: that history has changes made before the contract
#    rules existed (fields renamed to their legacy_* twins).
#
# buf is npm @bufbuild/buf, pinned in tests/clients/node/package.json (`npm ci` there, as test.sh
# does); also found in $LAB_STATE_DIR/node (deploy/local/common.sh, ensure_node_tools) or on PATH.
# Exit status: 0 when the contract holds, 1 when it does not, 77 (test.sh reports the step as
# skipped) when nothing could be checked: buf is missing (1 with LAB_REQUIRE_NODE_TOOLS=1) or the
# git history is unavailable (no git checkout, or a shallow clone without the baselines).
set -euo pipefail

# shellcheck source=deploy/local/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$LAB_REPO_ROOT"

# At most this many contract-changing commits are checked (their parents are the baselines).
max_baselines=20
# The contract: what buf reads (proto/src, proto/tests and the crate's files do not count).
contract_paths=(':(glob)proto/**/*.proto' proto/buf.yaml)

# skip REASON... — nothing more can be checked here: says why and exits 77.
skip() {
    printf 'SKIPPED: proto: %s\n' "$*" >&2
    exit 77
}

# find_buf — prints the buf to run: the same places as platform's s3rver (the test client packages,
# then the private node tools, then PATH).
find_buf() {
    local candidate
    for candidate in \
        "$LAB_REPO_ROOT/tests/clients/node/node_modules/.bin/buf" \
        "$LAB_STATE_DIR/node/node_modules/.bin/buf"; do
        if [[ -x $candidate ]]; then
            printf '%s' "$candidate"
            return 0
        fi
    done
    command -v buf 2>/dev/null
}

if ! buf="$(find_buf)"; then
    no_buf="buf is not installed (npm ci in tests/clients/node, as bash deploy/local/test.sh does)"
    if [[ ${LAB_REQUIRE_NODE_TOOLS:-} == 1 ]]; then
        die "$no_buf, and LAB_REQUIRE_NODE_TOOLS=1"
    fi
    skip "$no_buf: the proto contract was not checked. Set LAB_REQUIRE_NODE_TOOLS=1 to make this a failure."
fi
log "buf $("$buf" --version) ($buf)"

log "lint: buf lint proto (proto/buf.yaml)"
# Violations go to stderr with the rest of the report, so that they read in order.
"$buf" lint proto --error-format=msvs >&2 || die "buf lint found violations (above; rules: docs/internal-api.md)"
log "lint passed"

# --- Baselines ---------------------------------------------------------------------------------

have git || skip "lint passed, but git is not installed: no breaking-change check against the history"
git rev-parse --verify -q HEAD >/dev/null 2>&1 ||
    skip "lint passed, but $LAB_REPO_ROOT is not a git checkout with commits: no breaking-change check"
# `.git` is a file in a worktree: buf clones from the repository that holds the objects.
git_dir="$(cd "$(git rev-parse --git-common-dir)" && pwd -P)"
# proto/ as a path from the top of the git repository (the repository may hold this one deeper).
subdir="$(git rev-parse --show-prefix)proto"
shallow="$(git rev-parse --is-shallow-repository)"

# describe COMMIT — "abc1234 (subject)", a long subject cut to 72 characters.
describe() {
    local subject
    subject="$(git log -1 --format=%s "$1")"
    if [[ ${#subject} -gt 72 ]]; then
        subject="${subject:0:71}…"
    fi
    printf '%s (%s)' "$(git rev-parse --short "$1")" "$subject"
}

baselines=()
reasons=()

# The oldest commit that added proto/buf.yaml; none while it is not committed yet.
introduced="$(git log --diff-filter=A --format=%H -- proto/buf.yaml | tail -n 1)"
if [[ -z $introduced ]]; then
    log "proto/buf.yaml is not committed yet: no commit is a baseline"
else
    checked=0
    while read -r commit; do
        # First parents of a descendant of $introduced: once one is not, no older one is.
        git merge-base --is-ancestor "$introduced" "$commit" || break
        if ! parent="$(git rev-parse --verify -q "$commit^1")"; then
            if [[ $shallow == true ]]; then
                skip "lint passed, but this clone is shallow and lacks the parent of $(describe "$commit"):" \
                    "no breaking-change check (fetch the history: git fetch --unshallow)"
            fi
            # The root commit of the repository: there is no earlier state.
            break
        fi
        if ! git diff --quiet "$parent" "$commit" -- "${contract_paths[@]}"; then
            baselines+=("$parent")
            reasons+=("before $(describe "$commit")")
            checked=$((checked + 1))
            [[ $checked -lt $max_baselines ]] || break
        fi
    done < <(git rev-list --first-parent HEAD)
fi

# An uncommitted change of the contract (tracked or new files) is also checked against HEAD.
if ! git diff --quiet HEAD -- "${contract_paths[@]}" ||
    [[ -n $(git ls-files --others --exclude-standard -- "${contract_paths[@]}") ]]; then
    # A commit id, never the name HEAD: buf clones $git_dir, whose HEAD may be another worktree's.
    baselines=("$(git rev-parse HEAD)" "${baselines[@]}")
    reasons=("HEAD, the working tree's contract has uncommitted changes" "${reasons[@]}")
fi

if [[ ${#baselines[@]} -eq 0 ]]; then
    log "breaking: no baseline (no commit since proto/buf.yaml was added changed the contract," \
        "and the working tree matches HEAD)"
    printf 'proto contract: lint passed; no earlier state of proto/ to compare with.\n' >&2
    exit 0
fi

# --- Breaking changes --------------------------------------------------------------------------

broken=()
for i in "${!baselines[@]}"; do
    base="${baselines[$i]}"
    log "breaking: proto/ (working tree) against $(git rev-parse --short "$base"): ${reasons[$i]}"
    status=0
    "$buf" breaking proto --against "$git_dir#format=git,ref=$base,subdir=$subdir" --error-format=msvs >&2 ||
        status=$?
    if [[ $status -ne 0 ]]; then
        # 100: violations, listed above (a breaking change, or COMPILE when a file does not
        # compile); anything else: buf could not run the comparison (its error is above).
        broken+=("$(git rev-parse --short "$base") (buf exit status $status)")
    fi
done

if [[ ${#broken[@]} -gt 0 ]]; then
    broken_list="$(printf '%s, ' "${broken[@]}")"
    die "the proto contract is broken against ${broken_list%, } (rules for evolving messages:" \
        "docs/internal-api.md, \"The proto contract\")"
fi
printf 'proto contract: lint passed; no breaking change against %d baseline(s).\n' "${#baselines[@]}" >&2
