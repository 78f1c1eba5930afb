#!/usr/bin/env bash
# The steps of examples/ci/lens-shards.yml: one LENS run split into N shards (a CI job matrix), then one fan-in step
# that merges them, writes the HTML report and gates the whole run. The same steps run on a laptop:
#
#   bash lens-shards.sh install               # a virtual environment with CPU-only torch and pytest-lens
#   bash lens-shards.sh shard I N             # shard I of N: its artifact in $LENS_OUT/shards/shard-I-of-N.json
#   bash lens-shards.sh merge                 # every shard in $LENS_OUT/shards -> lens-run.json, lens-report.html; the verdict
#   bash lens-shards.sh laptop N              # N shards side by side on this machine, then merge (what the workflow does)
#
# A shard's own exit status is 0 when it ran (its questions failing gates is the fan-in's to judge: 1 counts as ran),
# and the fan-in's is the whole run's, as one pytest run would give it: 0 passed, 1 failed, 2 the shards cannot be
# merged (a shard missing or given twice, shards of different code, settings or data: the message names it).
# Each shard keeps its finished stream groups in $LENS_OUT/kept (--lens-resume): a shard job that is retried after
# a crash or a timeout runs only what it had not finished, provided the directory is restored (actions/cache).
#
# Environment (defaults in brackets):
#   LENS_ADAPTER   your adapter, module:Class or a registered name  (required)
#   LENS_ARGS      more pytest arguments for every shard (the same in each!), e.g. "--lens-repeat=3 --lens-budget=8k"
#   LENS_INSTALL   pip requirement for pytest-lens  [pytest-lens[embeddings,html]]
#   LENS_TORCH     pip arguments installing torch first  [torch --index-url https://download.pytorch.org/whl/cpu]; "none" skips it
#   LENS_VENV      the virtual environment  [$RUNNER_TEMP/lens-venv, else ~/.lens-venv]
#   LENS_OUT       shard artifacts, the merged run, the report and logs  [$RUNNER_TEMP/lens-artifacts, else ./lens-artifacts]
set -euo pipefail

LENS_INSTALL=${LENS_INSTALL:-"pytest-lens[embeddings,html]"}
LENS_TORCH=${LENS_TORCH:-"torch --index-url https://download.pytorch.org/whl/cpu"}
LENS_ARGS=${LENS_ARGS:-}
if [[ -n ${RUNNER_TEMP:-} ]]; then
    LENS_VENV=${LENS_VENV:-$RUNNER_TEMP/lens-venv}
    LENS_OUT=${LENS_OUT:-$RUNNER_TEMP/lens-artifacts}
else
    LENS_VENV=${LENS_VENV:-$HOME/.lens-venv}
    LENS_OUT=${LENS_OUT:-lens-artifacts}
fi
LENS_OUT=$(mkdir -p "$LENS_OUT/shards" && cd "$LENS_OUT" && pwd)
# shellcheck disable=SC2206  # LENS_ARGS is split into words on purpose
EXTRA=($LENS_ARGS)

shard() {
    local index=${1:?usage: lens-shards.sh shard I N} total=${2:?usage: lens-shards.sh shard I N}
    : "${LENS_ADAPTER:?set LENS_ADAPTER to your adapter, module:Class or a registered name}"
    set +e
    "$LENS_VENV/bin/python" -m pytest -m lens -p no:cacheprovider "--lens-adapter=$LENS_ADAPTER" "${EXTRA[@]}" \
        "--lens-shard=$index/$total" "--lens-resume=$LENS_OUT/kept" \
        "--lens-json=$LENS_OUT/shards/shard-$index-of-$total.json" >"$LENS_OUT/shard-$index-of-$total.log" 2>&1
    local status=$?
    set -e
    grep -E "^lens: (shard|resume)" "$LENS_OUT/shard-$index-of-$total.log" || true
    if [[ $status -gt 1 ]]; then
        tail -n 40 "$LENS_OUT/shard-$index-of-$total.log" >&2
        echo "lens-shards: shard $index/$total could not run (pytest exit status $status)" >&2
        return "$status"
    fi
    echo "lens-shards: shard $index/$total ran (pytest exit status $status; the fan-in gates the whole run)"
}

merge() {
    shopt -s nullglob
    local shards=("$LENS_OUT"/shards/shard-*.json)
    if [[ ${#shards[@]} -eq 0 ]]; then
        echo "lens-shards: no shard artifact in $LENS_OUT/shards" >&2
        return 2
    fi
    local html=()
    if "$LENS_VENV/bin/python" -c "import markupsafe" 2>/dev/null; then
        html=(--html "$LENS_OUT/lens-report.html")
    fi
    "$LENS_VENV/bin/python" -m pytest_lens.cli.main merge "${shards[@]}" --out "$LENS_OUT/lens-run.json" "${html[@]}"
}

case "${1:-}" in
install)
    python3 -m venv "$LENS_VENV"
    if [[ $LENS_TORCH != none ]]; then
        # shellcheck disable=SC2086
        "$LENS_VENV/bin/pip" install --quiet $LENS_TORCH
    fi
    "$LENS_VENV/bin/pip" install --quiet "$LENS_INSTALL"
    ;;
shard)
    shard "${2:-}" "${3:-}"
    ;;
merge)
    merge
    ;;
laptop)
    total=${2:?usage: lens-shards.sh laptop N}
    rm -f "$LENS_OUT"/shards/shard-*-of-*.json "$LENS_OUT"/shards/shard-*-of-*.rows.jsonl
    pids=()
    for ((index = 1; index <= total; index++)); do
        shard "$index" "$total" &
        pids+=($!)
    done
    failed=0
    for pid in "${pids[@]}"; do
        wait "$pid" || failed=1
    done
    [[ $failed -eq 0 ]] || echo "lens-shards: a shard could not run; the merge names what is missing" >&2
    merge
    ;;
*)
    echo "usage: lens-shards.sh install | shard I N | merge | laptop N" >&2
    exit 2
    ;;
esac
