#!/usr/bin/env bash
# The steps of examples/ci/lens.yml, kept in one script so that they can be run (and tested) outside GitHub Actions.
# Copy it to .github/lens-ci.sh in your repository, next to .github/workflows/lens.yml.
#
#   bash .github/lens-ci.sh install          # a virtual environment with CPU-only torch and pytest-lens
#   bash .github/lens-ci.sh base BASE_SHA    # benchmark the pull request's base commit, save it as "base"
#   bash .github/lens-ci.sh head             # benchmark the checkout, compare with "base", gate on a regression
#
# Environment (the workflow sets these; defaults in brackets):
#   LENS_ADAPTER          your adapter, module:Class, importable from the repository root  (required)
#   LENS_INSTALL          pip requirement for pytest-lens  [pytest-lens[embeddings]]
#                         until it is on the package index: "pytest-lens[embeddings] @ git+https://HOST/OWNER/pytest-lens@TAG"
#   LENS_TORCH            pip arguments installing torch first  [torch --index-url https://download.pytorch.org/whl/cpu]
#                         (the CPU build: the package index's default torch pulls ~2.7 GB of CUDA wheels); "none" skips it
#   LENS_PROJECT_INSTALL  pip arguments installing your project's own dependencies, run in each tree, e.g. "-r requirements.txt"
#   LENS_ARGS             more pytest arguments for both runs, e.g. "--lens-max-drop=0.02 --lens-budget=8k"
#   LENS_VENV             the virtual environment  [$RUNNER_TEMP/lens-venv, else ~/.lens-venv]
#   LENS_CACHE_DIR        embedding cache and LLM request cache, kept between runs by the workflow
#                         [$RUNNER_TEMP/lens-cache on GitHub Actions, else ~/.cache/pytest-lens]
#   LENS_OUT              run artifacts, saved runs, JUnit XML and logs  [$RUNNER_TEMP/lens-artifacts, else ./lens-artifacts]
set -euo pipefail

: "${LENS_ADAPTER:?set LENS_ADAPTER to your adapter, module:Class (e.g. mypkg.memory:MyMemory)}"
LENS_INSTALL=${LENS_INSTALL:-"pytest-lens[embeddings]"}
LENS_TORCH=${LENS_TORCH:-"torch --index-url https://download.pytorch.org/whl/cpu"}
LENS_PROJECT_INSTALL=${LENS_PROJECT_INSTALL:-}
LENS_ARGS=${LENS_ARGS:-}
if [[ -n ${RUNNER_TEMP:-} ]]; then
    LENS_VENV=${LENS_VENV:-$RUNNER_TEMP/lens-venv}
    export LENS_CACHE_DIR=${LENS_CACHE_DIR:-$RUNNER_TEMP/lens-cache}
    LENS_OUT=${LENS_OUT:-$RUNNER_TEMP/lens-artifacts}
else
    LENS_VENV=${LENS_VENV:-$HOME/.lens-venv}
    export LENS_CACHE_DIR=${LENS_CACHE_DIR:-$HOME/.cache/pytest-lens}
    LENS_OUT=${LENS_OUT:-lens-artifacts}
fi
LENS_OUT=$(mkdir -p "$LENS_OUT" && cd "$LENS_OUT" && pwd)
REPO=$(git rev-parse --show-toplevel)
BASE_TREE=  # the base commit's worktree: a fresh temporary directory, made by `base` and removed when it exits
PYTEST=("$LENS_VENV/bin/pytest" -m lens -p no:cacheprovider
        "--lens-adapter=$LENS_ADAPTER"
        "--lens-storage=$LENS_OUT/runs"
        "--lens-llm-cache=$LENS_CACHE_DIR/llm-cache.sqlite")
# shellcheck disable=SC2206  # LENS_ARGS is split into words on purpose
EXTRA=($LENS_ARGS)

remove_base_tree() {
    # Whatever the exit (success, failure, set -e, a signal): no worktree stays registered or on disk. Nothing here may
    # fail, or the EXIT trap would replace the step's exit status.
    [[ -n $BASE_TREE ]] || return 0
    cd "$REPO" || true
    git -C "$REPO" worktree remove --force "$BASE_TREE" >/dev/null 2>&1 || rm -rf "$BASE_TREE" || true
    git -C "$REPO" worktree prune || true
}

project_install() {
    if [[ -n $LENS_PROJECT_INSTALL ]]; then
        # shellcheck disable=SC2086
        "$LENS_VENV/bin/pip" install --quiet $LENS_PROJECT_INSTALL
    fi
}

case "${1:-}" in
install)
    python3 -m venv "$LENS_VENV"
    if [[ $LENS_TORCH != none ]]; then
        # shellcheck disable=SC2086
        "$LENS_VENV/bin/pip" install --quiet $LENS_TORCH
    fi
    "$LENS_VENV/bin/pip" install --quiet "$LENS_INSTALL"
    mkdir -p "$LENS_CACHE_DIR"
    "$LENS_VENV/bin/python" -c "import pytest_lens, sys; print('pytest-lens', pytest_lens.__version__, 'on Python', sys.version.split()[0])"
    ;;
base)
    base_sha=${2:?usage: lens-ci.sh base BASE_SHA}
    BASE_TREE=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/lens-base-tree.XXXXXX")
    trap remove_base_tree EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    git -C "$REPO" worktree add --detach "$BASE_TREE" "$base_sha" >/dev/null
    cd "$BASE_TREE"
    # A pull request that adds the adapter has no baseline to compare with: say so, and let the head run go ungated.
    # (exit 3: the adapter cannot be loaded there; anything else, e.g. pytest-lens missing, is an error of this job)
    set +e
    "$LENS_VENV/bin/python" -c "import sys; from pathlib import Path; from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class
try:
    load_adapter_class(sys.argv[1], [Path.cwd()])
except AdapterLoadError as exc:
    print(exc, file=sys.stderr)
    sys.exit(3)" "$LENS_ADAPTER" 2>"$LENS_OUT/base-adapter-error.txt"
    found=$?
    set -e
    if [[ $found -ne 0 && $found -ne 3 ]]; then
        cat "$LENS_OUT/base-adapter-error.txt" >&2
        exit "$found"
    fi
    if [[ $found -eq 3 ]]; then
        echo "lens-ci: the base commit ${base_sha:0:12} has no usable adapter $LENS_ADAPTER; the head is benchmarked without a baseline:"
        sed 's/^/  /' "$LENS_OUT/base-adapter-error.txt"
        touch "$LENS_OUT/no-baseline"
        exit 0
    fi
    rm -f "$LENS_OUT/no-baseline"
    project_install
    set +e
    "${PYTEST[@]}" "${EXTRA[@]}" --lens-save=base --lens-json="$LENS_OUT/lens-base.json" | tee "$LENS_OUT/base.log"
    status=${PIPESTATUS[0]}
    set -e
    # Exit 1 means tests or gates failed on the base: it is still the baseline (saved all the same). Anything else is not.
    if [[ $status -ne 0 && $status -ne 1 ]]; then
        echo "lens-ci: the base run could not run (pytest exit status $status)"
        exit "$status"
    fi
    echo "lens-ci: base run saved (pytest exit status $status)"
    ;;
head)
    cd "$REPO"
    project_install
    gate=(--lens-baseline=base --lens-compare-fail)
    if [[ -e $LENS_OUT/no-baseline ]]; then
        gate=()
        echo "lens-ci: no baseline (the base commit has no adapter yet): this run is not compared"
    fi
    set +e
    "${PYTEST[@]}" "${EXTRA[@]}" "${gate[@]}" --lens-save=head --lens-json="$LENS_OUT/lens-run.json" \
        --junitxml="$LENS_OUT/lens-junit.xml" | tee "$LENS_OUT/head.log"
    status=${PIPESTATUS[0]}
    set -e
    echo "lens-ci: pytest exit status $status"
    exit "$status"
    ;;
*)
    echo "usage: lens-ci.sh install | base BASE_SHA | head" >&2
    exit 2
    ;;
esac
