#!/usr/bin/env bash
# The steps of examples/ci/lens.yml, kept in one script so that they can be run (and tested) outside GitHub Actions.
# Copy it to .github/lens-ci.sh in your repository, next to .github/workflows/lens.yml.
#
#   bash .github/lens-ci.sh install          # a virtual environment with CPU-only torch and pytest-lens
#   bash .github/lens-ci.sh base BASE_SHA    # benchmark the pull request's base commit, save it as "base"
#   bash .github/lens-ci.sh head             # benchmark the checkout, compare with "base", gate on a regression
#
# `base` installs your project (LENS_PROJECT_INSTALL) in a temporary worktree of BASE_SHA first, then judges the adapter there:
#   - the base commit does not define it (no such module or package, or no such class in it; e.g. the pull request that
#     adds the adapter): it says so, and `head` runs without a baseline, not gated;
#   - it is defined but fails there (a dependency missing, an error while importing or constructing it, faults on more
#     questions than --lens-max-fault-rate allows, the run crashing), or the project does not install there: the job
#     fails, naming the error. A broken base is never taken for a missing one: that would let the pull request through ungated.
# `head` gates as `base` recorded in LENS_OUT; with no record there (no `base` before it, or a failed one) it fails.
#
# Environment (the workflow sets these; defaults in brackets):
#   LENS_ADAPTER          your adapter, module:Class, importable from the repository root or once LENS_PROJECT_INSTALL ran  (required)
#   LENS_INSTALL          pip requirement for pytest-lens  [pytest-lens[embeddings]]
#                         until it is on the package index: "pytest-lens[embeddings] @ git+https://HOST/OWNER/pytest-lens@TAG"
#   LENS_TORCH            pip arguments installing torch first  [torch --index-url https://download.pytorch.org/whl/cpu]
#                         (the CPU build: the package index's default torch pulls ~2.7 GB of CUDA wheels); "none" skips it
#   LENS_PROJECT_INSTALL  pip arguments installing your project's own dependencies, run in each tree before the adapter is
#                         imported there, e.g. "-r requirements.txt" or "."; it must install at the base commit too
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
BASE_RECORD=$LENS_OUT/base-record.txt  # written by `base`: "baseline SHA", or "none SHA" and why; read by `head`
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

# Run in the base tree by `base`. Exit 0: the adapter loads there; 3: that commit does not define it; 4: it is defined
# but cannot be loaded. The one-line reason goes to stdout; warnings and tracebacks go to stderr, i.e. to the log, and
# are never read as the reason (a DeprecationWarning is no error).
CHECK_ADAPTER=$(cat <<'PY'
import importlib
import sys
import traceback
import warnings
from importlib.metadata import entry_points
from pathlib import Path

label, sep, target = sys.argv[1].strip().partition("=")  # [LABEL=]TARGET, as --lens-adapter takes it
if not sep or ":" in label or not label.strip():
    target = sys.argv[1].strip()
target = target.strip()


def verdict(code, reason):
    print(reason)
    sys.exit(code)


def failed(what, exc):
    traceback.print_exc()
    verdict(4, f"{what} failed: {type(exc).__name__}: {exc}")


# The registry is pytest_lens.contract.registry; a pytest-lens from before the move into sub-packages (an older
# LENS_INSTALL tag) has it at pytest_lens.registry. A DeprecationWarning on importing an old path is no error, and
# is ignored here. pytest-lens itself missing is an error of this job (a traceback, exit 1).
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    try:
        from pytest_lens.contract.registry import AdapterLoadError, load_adapter_class
    except ModuleNotFoundError as exc:
        if exc.name not in ("pytest_lens.contract", "pytest_lens.contract.registry"):
            raise
        from pytest_lens.registry import AdapterLoadError, load_adapter_class

registered = {ep.name: ep.value for ep in entry_points(group="pytest_lens.adapters")}
module_name, sep, attribute = registered.get(target, target).partition(":")
if not sep:
    verdict(3, f"no adapter is registered under the name {target!r} there")

# "Not defined" is decided from the exception, not from the files: the module may come from the tree (this directory
# is sys.path[0], as pytest-lens puts the rootdir first when it holds the module) or from what LENS_PROJECT_INSTALL
# installed (a src/ layout, a package), so only the import system knows whether this commit has it. A
# ModuleNotFoundError naming the adapter's own module or one of its parent packages means it is not there; one naming
# any other module (a dependency, a sibling module it imports) was raised while importing it: defined, and broken.
try:
    module = importlib.import_module(module_name)
except ModuleNotFoundError as exc:
    if exc.name is not None and (exc.name == module_name or module_name.startswith(exc.name + ".")):
        verdict(3, f"no module named {exc.name!r} there")
    failed(f"importing {module_name!r}", exc)
except (Exception, SystemExit) as exc:  # a module calling sys.exit() must not pass for one of these exit statuses
    failed(f"importing {module_name!r}", exc)
obj = module
for part in attribute.split("."):
    try:
        obj = getattr(obj, part)
    except AttributeError:
        verdict(3, f"module {module_name!r} has no {attribute!r} there")
    except Exception as exc:  # e.g. a lazy module __getattr__ whose import fails
        failed(f"getting {attribute!r} from {module_name!r}", exc)
try:  # the checks pytest-lens makes (a class, with the contract's methods); the module is imported already
    load_adapter_class(target, [Path.cwd()])
except AdapterLoadError as exc:
    verdict(4, str(exc))
verdict(0, f"{target} loads, from {getattr(module, '__file__', None) or module_name}")
PY
)

# Run by `base` on its run artifact: exit 4 when the adapter failed there on more questions than --lens-max-fault-rate
# allows (e.g. it could not even be constructed): such a run is no baseline, every question of it is a failure.
CHECK_BASE_RUN=$(cat <<'PY'
import sys
from pathlib import Path

from pytest_lens.records.rows import read_artifact_json

run = read_artifact_json(Path(sys.argv[1]))  # the run document, with its rows (lens-base.rows.jsonl) as "results"
gates = (run.get("verdict") or {}).get("gates") or []
if any(line.startswith("FAIL") and "--lens-max-fault-rate" in line for line in gates):
    faults = [f for result in run.get("results", []) for f in result.get("faults") or []]
    first = faults[0] if faults else {}
    summary = "; ".join(line.split(None, 1)[1] for line in gates if "--lens-max-fault-rate" in line)
    print(f"{summary}; first: {first.get('adapter')}.{first.get('method')}(): {first.get('message')}")
    sys.exit(4)
PY
)

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
    rm -f "$BASE_RECORD" "$LENS_OUT/no-baseline"  # a record is written only once this base is judged
    BASE_TREE=$(mktemp -d "${RUNNER_TEMP:-${TMPDIR:-/tmp}}/lens-base-tree.XXXXXX")
    trap remove_base_tree EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    git -C "$REPO" worktree add --detach "$BASE_TREE" "$base_sha" >/dev/null
    cd "$BASE_TREE"
    # The project first: the adapter's module imports its dependencies, so before they are installed a perfectly good
    # adapter fails to import, and the base must not be judged on that.
    if ! project_install; then
        echo "lens-ci: installing the project at the base commit ${base_sha:0:12} failed (pip $LENS_PROJECT_INSTALL);" \
            "without a base run the pull request cannot be gated" >&2
        exit 1
    fi
    set +e
    "$LENS_VENV/bin/python" -c "$CHECK_ADAPTER" "$LENS_ADAPTER" >"$LENS_OUT/base-adapter.txt"
    found=$?
    set -e
    reason=$(cat "$LENS_OUT/base-adapter.txt")
    case $found in
    0)
        echo "lens-ci: base commit ${base_sha:0:12}: $reason"
        ;;
    3)
        echo "lens-ci: the base commit ${base_sha:0:12} does not define the adapter $LENS_ADAPTER ($reason):" \
            "the head is benchmarked without a baseline, and not gated"
        printf 'none %s\n%s\n' "$base_sha" "$reason" >"$BASE_RECORD"
        exit 0
        ;;
    4)
        echo "lens-ci: the base commit ${base_sha:0:12} defines the adapter $LENS_ADAPTER, but it cannot be loaded there: $reason" >&2
        echo "lens-ci: failing: the pull request cannot be compared with its base" >&2
        if [[ $reason == *ModuleNotFoundError* || $reason == *ImportError* ]]; then
            echo "lens-ci: (the adapter's dependencies are LENS_PROJECT_INSTALL's to install; it runs in each tree)" >&2
        fi
        exit 1
        ;;
    *)
        echo "lens-ci: checking the adapter at the base commit ${base_sha:0:12} failed (python exit status $found)" >&2
        exit "$found"
        ;;
    esac
    set +e
    "${PYTEST[@]}" "${EXTRA[@]}" --lens-save=base --lens-json="$LENS_OUT/lens-base.json" | tee "$LENS_OUT/base.log"
    status=${PIPESTATUS[0]}
    set -e
    # Exit 1 means tests or gates failed on the base: it is still the baseline (saved all the same), unless the adapter
    # itself failed there. Anything else is not.
    if [[ $status -ne 0 && $status -ne 1 ]]; then
        echo "lens-ci: the base run could not run (pytest exit status $status)" >&2
        exit "$status"
    fi
    if ! reason=$("$LENS_VENV/bin/python" -c "$CHECK_BASE_RUN" "$LENS_OUT/lens-base.json"); then
        echo "lens-ci: the adapter $LENS_ADAPTER failed at the base commit ${base_sha:0:12}: ${reason:-no readable run artifact}" >&2
        echo "lens-ci: failing: that run is no baseline to compare the pull request with" >&2
        exit 1
    fi
    printf 'baseline %s\n' "$base_sha" >"$BASE_RECORD"
    echo "lens-ci: base run saved (pytest exit status $status)"
    ;;
head)
    cd "$REPO"
    if [[ ! -e $BASE_RECORD ]]; then
        echo "lens-ci: no base run recorded in $LENS_OUT (run \`lens-ci.sh base BASE_SHA\` first; a failed one records none):" \
            "not running ungated" >&2
        exit 1
    fi
    read -r recorded base_sha <"$BASE_RECORD"
    project_install
    case $recorded in
    baseline)
        gate=(--lens-baseline=base --lens-compare-fail)
        ;;
    none)
        gate=()
        echo "lens-ci: no baseline: the base commit ${base_sha:0:12} does not define the adapter $LENS_ADAPTER" \
            "($(tail -n +2 "$BASE_RECORD")): this run is not compared"
        ;;
    *)
        echo "lens-ci: $BASE_RECORD is not a record of \`lens-ci.sh base\`" >&2
        exit 1
        ;;
    esac
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
