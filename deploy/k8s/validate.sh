#!/usr/bin/env bash
# Renders the Kubernetes manifests (the base and every overlay under deploy/k8s/overlays) with
# `kubectl kustomize` and checks each rendered document offline: strictly against the schemas of
# one Kubernetes version (PyPI kubernetes-validate), then against the project's own rules
# (deploy/k8s/check_manifests.py: requests and limits, probes, preStop and grace period, a PDB and
# an HPA per process, no inline Secret data outside dev, default-deny network policies, pinned
# production images, every production setting of production-settings.json without a sandbox
# value outside dev), and checks that those rules refuse a prod render with a sandbox default
# (test_check_manifests.py). No cluster is needed and nothing is sent anywhere. Takes seconds.
#
# Usage: bash deploy/k8s/validate.sh
# Honours: LAB_K8S_VERSION (the Kubernetes version to validate against, default 1.32.0; the
# schemas of kubernetes-validate cover 1.25 to 1.37), LAB_STATE_DIR (where the Python venv lives),
# CI and LAB_REQUIRE_K8S_TOOLS=1 (a missing kubectl fails instead of skipping).
#
# kubectl: Debian's main archive has no kubectl package and nothing can be downloaded here but
# packages from the registries, so this script cannot install it. Without kubectl it fails when CI
# is set or LAB_REQUIRE_K8S_TOOLS=1, and otherwise skips with a warning (exit status 0).
set -euo pipefail

# shellcheck source=deploy/local/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../local/common.sh"
cd "$LAB_REPO_ROOT"

K8S_DIR=deploy/k8s
K8S_VERSION="${LAB_K8S_VERSION:-1.32.0}"

if ! have kubectl; then
    if [[ -n ${CI:-} || ${LAB_REQUIRE_K8S_TOOLS:-} == 1 ]]; then
        die "kubectl is not installed: the Kubernetes manifests cannot be rendered. Install kubectl (its built-in kustomize renders the overlays; checked with kubectl 1.32) and run again."
    fi
    warn "************************************************************************************"
    warn "kubectl is not installed: the Kubernetes manifests were NOT rendered or validated."
    warn "Install kubectl, or set LAB_REQUIRE_K8S_TOOLS=1 to make this a failure."
    warn "************************************************************************************"
    exit 0
fi

# kubernetes-validate and the PyYAML it depends on, in the tests' venv. pip treats `_` and `-`
# alike, so the import name serves as the package name too.
ensure_python_test_packages kubernetes_validate

rendered="$(mktemp -d)"
trap 'rm -rf "$rendered"' EXIT

# deploy/k8s itself renders the plain base; then every overlay.
targets=("base=$K8S_DIR")
for overlay in "$K8S_DIR"/overlays/*/; do
    overlay="${overlay%/}"
    targets+=("$(basename "$overlay")=$overlay")
done

renders=()
failed=0
for target in "${targets[@]}"; do
    name="${target%%=*}"
    dir="${target#*=}"
    if kubectl kustomize "$dir" >"$rendered/$name.yaml" 2>"$rendered/$name.err"; then
        renders+=("$name=$rendered/$name.yaml")
    else
        printf 'FAILED %s: kubectl kustomize %s:\n' "$name" "$dir" >&2
        cat "$rendered/$name.err" >&2
        failed=1
    fi
done

if [[ ${#renders[@]} -gt 0 ]]; then
    python3 "$K8S_DIR/check_manifests.py" --kubernetes-version "$K8S_VERSION" "${renders[@]}" || failed=1
fi
# The checks themselves: the prod render with any production setting dropped or set to a
# sandbox value must fail them.
if [[ -f $rendered/prod.yaml ]]; then
    python3 "$K8S_DIR/test_check_manifests.py" "$rendered/prod.yaml" || failed=1
fi
if [[ $failed -ne 0 ]]; then
    printf 'Kubernetes manifests: FAILED\n' >&2
    exit 1
fi
log "Kubernetes manifests: ${#renders[@]} renders (${targets[*]%%=*}) valid for Kubernetes $K8S_VERSION"
