"""LENS scope directories (the reference's V2 layout): loading, checkpoint semantics, defects."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_lens import CapabilityManifest, Document, MemoryAdapter, SearchResult
from pytest_lens.cli.main import main
from pytest_lens.datasets import DatasetError, LoadedScope, Severity, load_dataset, load_datasets
from pytest_lens.datasets.loader import expand_dataset_paths
from pytest_lens.execution.bridge import ToolBridge
from pytest_lens.execution.runner import LensRuntime
from pytest_lens.records.budget import BudgetTracker, parse_budget
from pytest_lens.records.settings import AdapterSpec
from tests.scope_dirs import reference_visible, write_scope_dir


@pytest.fixture
def parking(lens_v2_scope_path: Path) -> Path:
    return lens_v2_scope_path


def codes(issues: object) -> list[str]:
    return [issue.code for issue in issues]  # type: ignore[attr-defined]


def signal_checkpoints(scope_dir: Path) -> dict[str, int]:
    """question id -> checkpoint_after as written in questions.json (signal episodes), read without our loader."""
    return {q["question_id"]: q["checkpoint_after"] for q in json.loads((scope_dir / "generated/questions.json").read_text())}


class StoreAll(MemoryAdapter):
    """Returns every stored episode for any search, with its ingest meta echoed (carelessly) in the metadata."""

    def __init__(self) -> None:
        self.store: dict[str, tuple[str, dict[str, Any]]] = {}

    def reset(self, scope_id: str) -> None:
        self.store.clear()

    def ingest(self, episode_id: str, scope_id: str, timestamp: str, text: str, meta: dict[str, Any] | None = None) -> None:
        self.store[episode_id] = (text, dict(meta or {}))

    def search(self, query: str, filters: dict[str, Any] | None = None, limit: int | None = None) -> list[SearchResult]:
        return [SearchResult(ref, text[:40], 1.0, {"meta": meta, **meta}) for ref, (text, meta) in sorted(self.store.items())]

    def retrieve(self, ref_id: str) -> Document | None:
        found = self.store.get(ref_id)
        return Document(ref_id, found[0], found[1]) if found else None

    def get_capabilities(self) -> CapabilityManifest:
        return CapabilityManifest(max_results_per_search=1000)


def agent_visible(scope: LoadedScope, checkpoint: int, tmp_path: Path) -> tuple[set[str], str]:
    """Stream ``scope`` into a fresh :class:`StoreAll` up to ``checkpoint`` and search through the tool bridge, as an
    agent would: the real ids behind what the agent was shown, and the raw tool result text it read."""
    runtime = LensRuntime({"all": AdapterSpec("all", "tests.unit.datasets.test_scope_dir:StoreAll")}, tmp_path)
    try:
        assert runtime.advance("all", scope, checkpoint) == []
        caller = runtime.slot("all").caller
        assert caller is not None
        tracker = BudgetTracker(parse_budget("results=10000000,calls=5"))
        bridge = ToolBridge(caller, caller.capabilities(), tracker, label_keys=scope.label_keys, aliases=runtime.aliases(scope))
        outcome = bridge.call("memory_search", {"query": "anything", "limit": 1000})
        shown = json.loads(outcome.content)
        return {bridge.resolve_ref(hit["ref_id"]) for hit in shown}, outcome.content
    finally:
        runtime.close()


def test_the_shared_scope_loads_as_one_stream_with_its_defects(parking: Path) -> None:
    loaded = load_dataset(parking)
    (scope,) = loaded.scopes
    assert scope.scope_id == "parking_friction_16"
    assert len(scope.stream) == 40 and len(scope.questions) == 10
    assert sum(e.meta["episode_type"] == "signal" for e in scope.stream) == 20
    # The spec's timeline: 2025-01-06, every 4 days; a slot's distractor half an hour after its signal episode.
    assert [str(e.timestamp) for e in scope.stream[:3]] == ["2025-01-06 10:00:00", "2025-01-06 10:30:00", "2025-01-10 10:00:00"]
    assert [e.timestamp for e in scope.stream] == sorted(e.timestamp for e in scope.stream)
    assert scope.checkpoints == [12, 24, 32, 40]  # signal checkpoints 6, 12, 16, 20
    assert {q.question_id: q.meta["signal_checkpoint"] for q in scope.questions} == signal_checkpoints(parking)
    assert scope.ids_leak_labels and {"episode_type", "theme", "phase"} <= scope.label_keys
    assert len(loaded.sha256) == 64
    # Real defects of the reference data, reported where they are: q01 (signal checkpoint 6) requires signal episode 8.
    warnings = {(Path(i.path).name, i.field, i.code, i.question_id) for i in loaded.warnings}
    assert (
        "questions.json",
        "[0].ground_truth.required_evidence_refs[1]",
        "evidence_after_checkpoint",
        "pf16_q01_longitudinal",
    ) in warnings
    assert ("questions.json", "[1].ground_truth.key_facts", "empty_key_facts", "pf16_q02_null") in warnings
    assert "label_meta" not in codes(loaded.warnings)  # the labels in meta are ours, kept for scoring
    assert scope.defects["pf16_q01_longitudinal"] == ("evidence_after_checkpoint",)


def test_at_every_checkpoint_of_the_shared_scope_the_agent_sees_exactly_the_reference_set(parking: Path, tmp_path: Path) -> None:
    (scope,) = load_dataset(parking).scopes
    by_id = {q.question_id: q for q in scope.questions}
    seen_checkpoints = set()
    for question_id, signal_checkpoint in signal_checkpoints(parking).items():
        expected = reference_visible(parking, "parking_friction_16", signal_checkpoint)
        position = by_id[question_id].checkpoint_after
        assert scope.available_refs(position) == expected
        if position in seen_checkpoints:
            continue
        seen_checkpoints.add(position)
        shown, content = agent_visible(scope, position, tmp_path / question_id)
        assert shown == expected
        # What the agent read: opaque aliases, no ids, no labels (the adapter echoed its ingest meta).
        assert "parking_friction_16" not in content and "distractor" not in content and "signal" not in content
        assert "cooking_meals" not in content and "baseline" not in content
    assert len(seen_checkpoints) == 4


@pytest.mark.parametrize(
    ("signal", "distractors"),
    [
        pytest.param((1, 2, 3), {"weather": (1, 2, 3, 4, 5), "sports": (1, 2, 3)}, id="more-distractors-than-signal"),
        pytest.param((1, 2, 3, 4, 5, 6), {"weather": (1, 2)}, id="fewer-distractors-than-signal"),
        pytest.param((1, 2, 4, 7), {"b": (2, 9), "a": (2, 3), "c": (1,)}, id="gaps-and-tied-ordinals"),
        pytest.param((1, 2), {}, id="no-distractors"),
    ],
)
def test_odd_layouts_keep_the_reference_semantics_at_every_checkpoint(
    tmp_path: Path, signal: tuple[int, ...], distractors: dict[str, tuple[int, ...]]
) -> None:
    questions = [
        {
            "question_id": f"q{c}",
            "scope_id": "odd",
            "checkpoint_after": c,
            "question_type": "temporal",
            "prompt": "When?",
            "ground_truth": {"canonical_answer": "then", "key_facts": ["then"], "required_evidence_refs": []},
        }
        for c in range(1, 11)
    ]
    directory = write_scope_dir(tmp_path, "odd", signal=signal, distractors=distractors, questions=questions)
    (scope,) = load_dataset(directory).scopes
    for question in scope.questions:
        c = question.meta["signal_checkpoint"]
        assert scope.available_refs(question.checkpoint_after) == reference_visible(directory, "odd", c), c


def test_checkpoint_past_the_last_signal_episode_is_warned_but_kept(tmp_path: Path) -> None:
    directory = write_scope_dir(tmp_path, signal=(1, 2), distractors={"w": (1, 2, 3, 4)})
    questions = json.loads((directory / "generated/questions.json").read_text())
    questions.append({**questions[0], "question_id": "late", "checkpoint_after": 3})
    (directory / "generated/questions.json").write_text(json.dumps(questions))
    loaded = load_dataset(directory)
    (scope,) = loaded.scopes
    late = next(q for q in scope.questions if q.question_id == "late")
    assert late.checkpoint_after == 2 + 3
    assert scope.defects["late"] == ("checkpoint_after_last_signal",)


def test_a_directory_of_scope_directories_loads_them_all(tmp_path: Path) -> None:
    write_scope_dir(tmp_path, "alpha_01")
    write_scope_dir(tmp_path, "beta_02", signal=(1, 2, 3, 4))
    (tmp_path / "notes").mkdir()  # not a scope directory: ignored
    loaded = load_datasets([tmp_path])
    assert [d.scopes[0].scope_id for d in loaded] == ["alpha_01", "beta_02"]
    assert [len(d.scopes[0].stream) for d in loaded] == [5, 6]
    assert expand_dataset_paths([tmp_path]) == [tmp_path / "alpha_01", tmp_path / "beta_02"]


def test_the_same_scope_twice_is_a_clash(tmp_path: Path) -> None:
    write_scope_dir(tmp_path / "a", "same_01")
    write_scope_dir(tmp_path / "b", "same_01")
    with pytest.raises(DatasetError) as info:
        load_datasets([tmp_path / "a", tmp_path / "b"])
    assert codes(info.value.issues) == ["duplicate_scope_id"]


#: Nine levels of nine aliases: 9**9 (387 million) strings once expanded, from 500 bytes of YAML.
ALIAS_BOMB = "a: &a ['lol', 'lol', 'lol', 'lol', 'lol', 'lol', 'lol', 'lol', 'lol']\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n" for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
) + "scope_id: *i\n"


@pytest.mark.parametrize(
    ("breakage", "code", "file", "field"),
    [
        ("no_spec", "missing_file", "spec.yaml", "-"),
        ("no_questions", "missing_file", "questions.json", "-"),
        ("no_episodes", "missing_file", "episodes", "-"),
        ("bad_yaml", "invalid_yaml", "spec.yaml", "line 4, column 1"),
        ("spec_list", "invalid_spec", "spec.yaml", "-"),
        ("no_timeline", "missing_timeline", "spec.yaml", "episodes.timeline"),
        ("bad_interval", "invalid_timeline", "spec.yaml", "episodes.timeline.interval"),
        ("bad_start", "invalid_timeline", "spec.yaml", "episodes.timeline.start"),
        # issue 32: out-of-range timelines were OverflowError tracebacks
        ("huge_interval", "invalid_timeline", "spec.yaml", "episodes.timeline.interval"),
        ("last_day_start", "invalid_timeline", "spec.yaml", "episodes.timeline"),
        # issue 32: alias bombs expanded into memory and into the error message
        ("alias_bomb", "too_large", "spec.yaml", "-"),
        ("recursive_alias", "too_large", "spec.yaml", "-"),
        ("bad_json", "invalid_json", "questions.json", "-"),
        ("bad_question", "schema", "questions.json", "[1].checkpoint_after"),
        ("zero_checkpoint", "unreachable_checkpoint", "questions.json", "[0].checkpoint_after"),
        ("not_utf8", "invalid_text", "signal_002.txt", "-"),
        ("same_ordinal", "duplicate_episode_id", "signal_2.txt", "-"),
        ("empty_episodes", "empty_scope", "episodes", "-"),
    ],
)
def test_unusable_scope_directories_name_the_file_and_field(tmp_path: Path, breakage: str, code: str, file: str, field: str) -> None:
    directory = write_scope_dir(tmp_path)
    spec = directory / "spec.yaml"
    episodes = directory / "generated" / "episodes"
    questions = directory / "generated" / "questions.json"
    if breakage == "no_spec":
        spec.unlink()
    elif breakage == "no_questions":
        questions.unlink()
    elif breakage == "no_episodes":
        for path in episodes.iterdir():
            path.unlink()
        episodes.rmdir()
    elif breakage == "bad_yaml":
        spec.write_text("scope_id: x\nepisodes:\n  count: [1, 2\n", encoding="utf-8")
    elif breakage == "spec_list":
        spec.write_text("- just\n- a list\n", encoding="utf-8")
    elif breakage in ("no_timeline", "bad_interval", "bad_start", "huge_interval", "last_day_start"):
        text = spec.read_text()
        text = {
            "no_timeline": text.replace("  timeline:\n    start: '2025-01-06'\n    interval: 2d\n", ""),
            "bad_interval": text.replace("interval: 2d", "interval: fortnightly"),
            "bad_start": text.replace("start: '2025-01-06'", "start: soon"),
            "huge_interval": text.replace("interval: 2d", "interval: 99999999999w"),
            "last_day_start": text.replace("start: '2025-01-06'", "start: '9999-12-31'"),
        }[breakage]
        spec.write_text(text, encoding="utf-8")
    elif breakage in ("alias_bomb", "recursive_alias"):
        spec.write_text(ALIAS_BOMB if breakage == "alias_bomb" else "scope_id: &a [x, *a]\n", encoding="utf-8")
    elif breakage == "bad_json":
        questions.write_text("[{", encoding="utf-8")
    elif breakage == "bad_question":
        document = json.loads(questions.read_text())
        document[1]["checkpoint_after"] = "later"
        questions.write_text(json.dumps(document))
    elif breakage == "zero_checkpoint":
        document = json.loads(questions.read_text())
        document[0]["checkpoint_after"] = 0
        questions.write_text(json.dumps(document))
    elif breakage == "not_utf8":
        (episodes / "signal_002.txt").write_bytes(b"caf\xe9 \xff")
    elif breakage == "same_ordinal":
        (episodes / "signal_2.txt").write_text("another second episode", encoding="utf-8")
    elif breakage == "empty_episodes":
        for path in episodes.iterdir():
            path.unlink()
    with pytest.raises(DatasetError) as info:
        load_dataset(directory)
    found = [(Path(i.path).name, i.field, i.code) for i in info.value.issues]
    assert (file, field, code) in found, found
    assert all(issue.severity is Severity.ERROR for issue in info.value.issues)
    assert file in str(info.value)


def test_soft_defects_are_warnings_the_run_survives(tmp_path: Path) -> None:
    directory = write_scope_dir(
        tmp_path,
        signal=(1, 2, 4),
        distractors={"w": (1, 2)},
        spec={"episodes": {"count": 4, "timeline": {"start": "2025-01-06", "interval": "1w"}}},
    )
    episodes = directory / "generated" / "episodes"
    (episodes / "notes_005.txt").write_text("a stray file", encoding="utf-8")
    (episodes / "distractor_w_003.txt").write_text("   ", encoding="utf-8")
    (episodes / "README.md").write_text("not an episode", encoding="utf-8")
    document = json.loads((directory / "generated/questions.json").read_text())
    document[0]["scope_id"] = "someone_else"
    (directory / "generated/questions.json").write_text(json.dumps(document))
    loaded = load_dataset(directory)
    found = {(Path(i.path).name, i.code) for i in loaded.warnings}
    assert {
        ("episodes", "missing_signal_episode"),  # count 4, no signal_003.txt
        ("notes_005.txt", "unexpected_episode_file"),  # read as signal ordinal 5, as the reference does
        ("distractor_w_003.txt", "empty_episode"),
        ("questions.json", "question_scope_mismatch"),
    } <= found
    (scope,) = loaded.scopes
    assert "synthetic_01_ep_005" in {e.episode_id for e in scope.stream}  # the stray file, kept as the reference keeps it
    assert str(scope.stream[2].timestamp) == "2025-01-13 10:00:00"  # a weekly timeline
    with pytest.raises(DatasetError):
        load_dataset(directory, strict=True)


def test_declared_counts_are_checked(tmp_path: Path) -> None:
    directory = write_scope_dir(
        tmp_path,
        signal=(1, 2),
        spec={"episodes": {"count": 2, "timeline": {"start": "2025-01-06", "interval": "2d"}}, "distractors": {"count": 5}},
    )
    (issue,) = [i for i in load_dataset(directory).warnings if i.code == "count_mismatch"]
    assert issue.field == "distractors.count" and "says 5 distractors; 2 files found" in issue.message


def test_a_timeline_with_a_time_of_day_and_hours(tmp_path: Path) -> None:
    directory = write_scope_dir(tmp_path, spec={"episodes": {"count": 3, "timeline": {"start": "2025-01-06T08:15:00", "interval": "12h"}}})
    (scope,) = load_dataset(directory).scopes
    assert [str(e.timestamp) for e in scope.stream[:4]] == [
        "2025-01-06 08:15:00",
        "2025-01-06 08:45:00",
        "2025-01-06 20:15:00",
        "2025-01-06 20:45:00",
    ]


def test_stale_questions_against_the_spec_are_reported(tmp_path: Path) -> None:
    spec_questions = [{"id": "q_cp1", "checkpoint_after": 2}, {"id": "q_gone", "checkpoint_after": 1}]
    directory = write_scope_dir(tmp_path, spec={"questions": spec_questions})
    (issue,) = [i for i in load_dataset(directory).warnings if i.code == "stale_questions"]
    assert "q_gone" in issue.message and "q_cp1" in issue.message


def test_empty_directory_says_what_it_expected(tmp_path: Path) -> None:
    with pytest.raises(DatasetError) as info:
        load_datasets([tmp_path])
    assert "no scope directories" in str(info.value)


def test_lens_validate_names_the_file_inside_the_scope_directory(parking: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(parking.parent)]) == 0
    out = capsys.readouterr().out
    assert f"{parking}: 3 warning(s) - parking_friction_16 (40 episodes, 10 questions)" in out
    assert "warning generated/questions.json: [1].ground_truth.key_facts: question 'pf16_q02_null' has no key facts" in out
    assert main(["validate", "--strict", str(parking)]) == 1


def test_lens_validate_reports_a_broken_scope_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = write_scope_dir(tmp_path)
    (directory / "spec.yaml").write_text("scope_id: [\n", encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{directory}: INVALID" in out and "error   spec.yaml: line 2, column 1: not valid YAML" in out


def test_lens_import_lens_dir_writes_json_with_the_same_stream(parking: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "v2.json"
    assert main(["import", "lens-dir", str(parking.parent), "--out", str(out)]) == 0
    assert "1 scopes, 40 episodes, 10 questions" in capsys.readouterr().out
    (from_json,) = load_dataset(out).scopes
    (from_dir,) = load_dataset(parking).scopes
    assert [e.episode_id for e in from_json.stream] == [e.episode_id for e in from_dir.stream]
    assert [(q.question_id, q.checkpoint_after, q.meta) for q in from_json.questions] == [
        (q.question_id, q.checkpoint_after, q.meta) for q in from_dir.questions
    ]
    assert from_json.ids_leak_labels  # and so the agent sees aliases there too


def test_lens_import_lens_dir_refuses_a_broken_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    directory = write_scope_dir(tmp_path)
    (directory / "generated" / "questions.json").unlink()
    assert main(["import", "lens-dir", str(directory), "--out", str(tmp_path / "x.json")]) == 2
    assert "no generated/questions.json file" in capsys.readouterr().out
    assert not (tmp_path / "x.json").exists()
    assert main(["import", "lens-dir", str(tmp_path / "nothing"), "--out", str(tmp_path / "x.json")]) == 2


def test_scope_directories_of_the_first_release_are_skipped_with_a_warning(tmp_path: Path) -> None:
    """The reference's datasets/scopes/ also holds scopes 01-06, compiled lists without episode files."""
    write_scope_dir(tmp_path, "16_new")
    old = tmp_path / "01_old" / "generated"
    old.mkdir(parents=True)
    (old.parent / "spec.yaml").write_text("scope_id: old_01\n", encoding="utf-8")
    (old / "episodes.json").write_text("[]", encoding="utf-8")
    first, second = load_datasets([tmp_path])
    assert [s.scope_id for s in first.scopes] == [] and codes(first.warnings) == ["older_layout"]
    assert "scope_NN_with_distractors.json" in first.warnings[0].message
    assert [s.scope_id for s in second.scopes] == ["16_new"]
    with pytest.raises(DatasetError):
        load_datasets([tmp_path], strict=True)


def test_only_regular_files_inside_the_scope_directory_are_read_and_every_other_entry_is_named(tmp_path: Path) -> None:
    # Issue 32, defect 5: an episode linked to /proc/self/environ put the environment (API keys) into the artifact;
    # links to /dev/zero, FIFOs, dangling and looping links were skipped without a word.
    import os

    directory = write_scope_dir(tmp_path, signal=(1, 2, 3))
    episodes = directory / "generated" / "episodes"
    inside = episodes / "signal_002.txt"
    (episodes / "signal_002.txt").rename(directory / "kept_here.txt")
    inside.symlink_to(directory / "kept_here.txt")  # a link to a regular file inside the scope directory: read
    (episodes / "signal_004.txt").symlink_to("/proc/self/environ")
    (episodes / "signal_005.txt").symlink_to("/dev/zero")
    os.mkfifo(episodes / "signal_006.txt")
    (episodes / "signal_007.txt").symlink_to(episodes / "nowhere.txt")
    (episodes / "signal_008.txt").symlink_to(episodes / "signal_008.txt")
    (episodes / "signal_009.txt").mkdir()
    with pytest.raises(DatasetError) as info:
        load_dataset(directory)
    refused = {Path(issue.path).name: issue.message for issue in info.value.issues if issue.code == "refused_file"}
    assert refused == {
        "signal_004.txt": f"not read: a symbolic link to {Path('/proc/self/environ').resolve()}, outside the scope directory {directory}",
        "signal_005.txt": f"not read: a symbolic link to /dev/zero, outside the scope directory {directory}",
        "signal_006.txt": "not read: a FIFO, not a regular file",
        "signal_007.txt": "not read: a symbolic link to nothing (it dangles)",
        "signal_008.txt": "not read: a symbolic link that loops, or cannot be followed",
        "signal_009.txt": "not read: a directory, not a regular file",
    }
    assert os.environ["PATH"] not in str(info.value)  # the environment was never read
    for name in refused:
        os.unlink(episodes / name) if name != "signal_009.txt" else (episodes / name).rmdir()
    (scope,) = load_dataset(directory).scopes  # the link inside the scope directory is an ordinary episode
    assert [episode.episode_id for episode in scope.stream if "_ep_" in episode.episode_id] == [
        "synthetic_01_ep_001",
        "synthetic_01_ep_002",
        "synthetic_01_ep_003",
    ]


def test_a_spec_linked_outside_the_scope_directory_is_refused(tmp_path: Path) -> None:
    directory = write_scope_dir(tmp_path)
    outside = tmp_path / "elsewhere.yaml"
    (directory / "spec.yaml").rename(outside)
    (directory / "spec.yaml").symlink_to(outside)
    with pytest.raises(DatasetError) as info:
        load_dataset(directory)
    assert codes(info.value.issues) == ["refused_file"]
    assert f"a symbolic link to {outside}, outside the scope directory" in str(info.value)


def test_an_alias_bomb_is_refused_at_once_with_a_short_message_naming_the_limit(tmp_path: Path) -> None:
    import time

    from pytest_lens.datasets.scope_dir import MAX_SPEC_VALUES

    directory = write_scope_dir(tmp_path)
    (directory / "spec.yaml").write_text(ALIAS_BOMB, encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(DatasetError) as info:
        load_dataset(directory)
    assert time.perf_counter() - started < 5
    message = str(info.value)
    assert f"expands to more than {MAX_SPEC_VALUES:,} values through YAML aliases" in message and len(message) < 1000
    # A spec that uses a few aliases, as specs do, still loads.
    fine = write_scope_dir(tmp_path / "fine")
    spec = fine / "spec.yaml"
    spec.write_text(spec.read_text() + "defaults: &d {density: low}\nother: *d\n", encoding="utf-8")
    assert load_dataset(fine).scopes[0].scope_id == "synthetic_01"


def test_a_huge_scope_id_is_quoted_short_in_its_error(tmp_path: Path) -> None:
    directory = write_scope_dir(tmp_path)
    (directory / "spec.yaml").write_text("scope_id: [" + ", ".join(["'lol'"] * 50_000) + "]\n", encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_dataset(directory)
    assert "expected a non-empty string, got ['lol', 'lol', 'lol', 'lol', 'lol', 'lol', ...]" in str(info.value)
    assert len(str(info.value)) < 1000
