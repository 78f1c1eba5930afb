"""Shards, unit keys and kept results (``pytest_lens.runs.slicing``), without pytest runs."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from pytest_lens.datasets.bundled import bundled_dataset_paths
from pytest_lens.records.options import MAX_SHARDS, option, parse_shard
from pytest_lens.records.settings import AdapterSpec, LensSettings
from pytest_lens.runs.fanin import ShardError, settings_from_record
from pytest_lens.runs.setup import open_run
from pytest_lens.runs.slicing import ResumeStore, Unit, assign_shards, settings_record, unit_keys, units_of


def _settings(tmp_path: Path, **changes: object) -> LensSettings:
    fields: dict[str, object] = {
        "adapters": (AdapterSpec("bm25", "bm25"), AdapterSpec("n", "random", {"seed": 3})),
        "datasets": tuple(bundled_dataset_paths()[:3]),
        "budgets": ("8k", "16k"),
        "rootdir": tmp_path,
        "invocation_dir": tmp_path,
    }
    fields.update(changes)
    return LensSettings(**fields)  # type: ignore[arg-type]


def test_shards_take_every_unit_once_deterministically_and_balanced(tmp_path: Path) -> None:
    setup = open_run(_settings(tmp_path))
    units = units_of(setup.cases)
    assert len(units) == 2 * 3 * 2 and [u.name for u in units][:2] == ["bm25:capacity_regime_s01:8k", "bm25:capacity_regime_s01:16k"]
    for total in (1, 2, 3, 4, 5):
        assigned = assign_shards(units, total)
        assert assigned == assign_shards(list(units), total)  # the same split from the same cases, in any process
        assert sorted(assigned) == sorted(u.name for u in units) and set(assigned.values()) == set(range(1, total + 1))
        loads = [sum(u.cost for u in units if assigned[u.name] == shard) for shard in range(1, total + 1)]
        # Longest-processing-time first: no shard exceeds the mean by more than one unit.
        assert max(loads) <= sum(loads) / total + max(u.cost for u in units)


def test_balancing_by_cost_beats_an_even_count_when_units_differ() -> None:
    units = [Unit("big", (), 10.0), *(Unit(f"small{i}", (), 1.0) for i in range(10))]
    assigned = assign_shards(units, 2)
    assert [name for name, shard in assigned.items() if shard == 1] == ["big"]  # 10 against 10, not 6 units each
    costs = {u.name: u.cost for u in units}
    assert sum(costs[n] for n, s in assigned.items() if s == 1) == sum(costs[n] for n, s in assigned.items() if s == 2) == 10


def test_measured_durations_replace_the_estimate_and_scale_the_rest(tmp_path: Path) -> None:
    setup = open_run(_settings(tmp_path))
    estimated = {u.name: u.cost for u in units_of(setup.cases)}
    first, second = list(estimated)[:2]
    measured = {u.name: u.cost for u in units_of(setup.cases, {first: 30.0, second: 10.0})}
    assert measured[first] == 30.0 and measured[second] == 10.0
    scale = 40.0 / (estimated[first] + estimated[second])
    other = list(estimated)[5]
    assert measured[other] == pytest.approx(estimated[other] * scale)


def test_a_shard_record_reads_back_as_the_same_settings(tmp_path: Path) -> None:
    settings = _settings(tmp_path, seed=7, fail_under=0.2, weights={"a": 1.0}, mutants=("top2",), controls=True, shard=(2, 3))
    record = settings_record(settings)
    assert "shard" not in record and "rootdir" not in record and json.loads(json.dumps(record)) == record
    again = settings_from_record(record, rootdir=tmp_path, invocation_dir=tmp_path)
    assert settings_record(again) == record
    assert dataclasses.replace(settings, shard=None) == again


def test_unit_keys_change_with_what_determines_results_and_only_where_it_changed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    paths = [Path(shutil.copy(path, data / path.name)) for path in bundled_dataset_paths()[:2]]
    settings = _settings(tmp_path, datasets=tuple(paths), budgets=("16k",))
    setup = open_run(settings)
    units = units_of(setup.cases)
    keys = unit_keys(setup, units, code=None, versions={})
    assert len(set(keys.values())) == len(units) == 4
    assert unit_keys(open_run(settings), units, code=None, versions={}) == keys  # stable across processes
    reseeded = unit_keys(open_run(dataclasses.replace(settings, seed=1)), units, code=None, versions={})
    assert all(reseeded[name] != keys[name] for name in keys)
    assert all(v != keys[k] for k, v in unit_keys(setup, units, code={"id": "abc", "dirty": False}, versions={}).items())
    text = paths[0].read_bytes()
    paths[0].write_bytes(text.replace(b"the ", b"thE ", 1))  # one byte of the first scope
    changed_setup = open_run(settings)
    changed = unit_keys(changed_setup, units_of(changed_setup.cases), code=None, versions={})
    scope = json.loads(text)["scopes"][0]["scope_id"]
    assert {name for name in keys if changed[name] != keys[name]} == {f"bm25:{scope}:16k", f"n:{scope}:16k"}


def test_kept_results_are_reused_only_under_their_key(tmp_path: Path) -> None:
    from pytest_lens.records.results import QuestionResult

    store = ResumeStore(tmp_path / "kept")
    result = QuestionResult(
        adapter="bm25", scope_id="s", checkpoint=1, question_id="q", question_type="t", category="c", budget="16k", agent="a", prompt="p"
    )
    assert store.load("bm25:s:16k", "k1") == (None, "absent")
    store.save("bm25:s:16k", "k1", [result])
    assert store.load("bm25:s:16k", "k1") == ([result], "reused")
    assert store.load("bm25:s:16k", "k2") == (None, "changed")
    assert [p.name for p in (tmp_path / "kept").iterdir()] == [store.path("bm25:s:16k").name]  # no partial file left
    store.path("bm25:s:16k").write_text("{not json")
    assert store.load("bm25:s:16k", "k1") == (None, "unreadable")


@pytest.mark.parametrize(("text", "value"), [("1/3", (1, 3)), ("3/3", (3, 3)), (" 2/4 ", (2, 4))])
def test_shard_option_reads_i_of_n(text: str, value: tuple[int, int]) -> None:
    assert parse_shard(text) == value == option("--lens-shard").parse(text)


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0"])
def test_shard_option_refuses_what_is_not_i_of_n(text: str) -> None:
    with pytest.raises(ValueError, match=r"must be I/N with 1 <= I <= N \(e.g. 2/4\), got"):
        parse_shard(text)


def test_a_shard_count_past_the_bound_is_refused_and_a_large_one_splits_fast() -> None:
    # On main --lens-shard=1/1000000000000 was INTERNALERROR MemoryError (a load per shard, each scanned per unit).
    with pytest.raises(
        ValueError, match=r"must be I/N with N at most 10,000 \(a shard cannot split a stream group\), got '1/1000000000000'"
    ):
        parse_shard("1/1000000000000")
    assert parse_shard(f"1/{MAX_SHARDS}") == (1, MAX_SHARDS)
    units = [Unit(f"u{i}", (), float(i % 7 + 1)) for i in range(20_000)]
    assigned = assign_shards(units, MAX_SHARDS)
    assert len(set(assigned.values())) == MAX_SHARDS and assign_shards(units[:3], MAX_SHARDS) == {"u2": 1, "u1": 2, "u0": 3}


def _record(tmp_path: Path) -> dict[str, object]:
    return settings_record(_settings(tmp_path))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("adapters", "bm25", "setting adapters (--lens-adapter) is 'bm25', not a list of adapters"),
        ("adapters", [{"label": 1}], "setting adapters[0] (--lens-adapter) is {'label': 1}, not {label, target, options}"),
        ("seed", "x", "setting seed (--lens-seed): must be a whole number; got 'x'"),
        ("seed", None, "setting seed (--lens-seed) is null"),
        ("budgets", "16k", "setting budgets (--lens-budget) is '16k', not a list"),
        ("budgets", [{"results": 3}], "setting budgets (--lens-budget) is {'results': 3}, not a single value"),
        (
            "repeat",
            10**9,
            "setting repeat (--lens-repeat): must be a whole number of answers per question, from 1 to 1,000; got '1000000000'",
        ),
        ("alpha", 2, "setting alpha (--lens-alpha): must lie strictly between 0 and 1, got '2'"),
        ("strict", "yes", "setting strict (--lens-strict) is 'yes', not true or false"),
        ("weights", {"evidence_grounding": "heavy"}, "setting weights.evidence_grounding (--lens-weights) is 'heavy', not a finite number"),
        ("mutants", "top2", "setting mutants (--lens-mutants) is 'top2', not a list of names"),
        ("mutants", ["top3"], "unknown mutant(s) top3"),
        ("colour", "red", "setting colour is unknown to this pytest-lens"),
        ("llm", None, "setting llm is missing"),
        ("llm", {"retries": -1}, "setting llm.retries (--lens-llm-retries): must be a whole number, at least 0; got '-1'"),
        ("llm", {"judge": "human"}, "setting llm.judge (--lens-judge): must be one of none, offline, llm, got 'human'"),
    ],
)
def test_recorded_settings_are_checked_as_the_options_are(tmp_path: Path, field: str, value: object, message: str) -> None:
    # On main: raw tracebacks (TypeError, AttributeError, ...) from lens merge, and MemoryError for repeat 10**9.
    record = _record(tmp_path)
    record[field] = value
    with pytest.raises(ShardError) as refused:
        settings_from_record(record, rootdir=tmp_path, invocation_dir=tmp_path)
    assert str(refused.value).startswith("the shards' settings cannot be used: ") and message in str(refused.value)


def test_the_watchdogs_settings_file_holds_no_secret_and_still_opens_the_run(tmp_path: Path) -> None:
    import pickle

    from pytest_lens.llm.settings import LLMSettings
    from pytest_lens.runs.session import LensSession
    from pytest_lens.runs.watch import _without_secrets

    secret = "wd-SECRET-0123456789"
    (tmp_path / "keyed.py").write_text(
        "from lens_fixtures.adapters.bm25 import BM25Adapter\n\n\n"
        "class Keyed(BM25Adapter):\n"
        "    def __init__(self, storage_dir=None, *, api_key=''):\n"
        "        super().__init__(storage_dir)\n"
    )
    settings = _settings(
        tmp_path,
        adapters=(AdapterSpec("bm25", "bm25"), AdapterSpec("k", "keyed:Keyed", {"api_key": secret})),
        llm=LLMSettings(base_url=f"http://lens:{secret}@127.0.0.1:9/v1?api_key={secret}x"),
    )
    kept = pickle.dumps(_without_secrets(settings))
    assert secret.encode() not in kept
    again = pickle.loads(kept)
    assert again.adapters[1].options == {"api_key": "***"} and again.llm.base_url == "http://***@127.0.0.1:9/v1?api_key=***"
    LensSession.open(again).close()  # what the rescue does first
