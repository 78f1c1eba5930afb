from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path

import pytest

from pytest_lens.datasets import DatasetError, KeyFact, Severity, load_dataset, load_datasets
from tests.support import episode, question, small_dataset, write_dataset


def codes(issues: object) -> list[str]:
    return [issue.code for issue in issues]  # type: ignore[attr-defined]


def test_real_lens_scope_loads_in_stream_order_with_its_known_defects(lens_scope_path: Path) -> None:
    loaded = load_dataset(lens_scope_path)
    (scope,) = loaded.scopes
    assert scope.scope_id == "cascading_failure_01"
    assert len(scope.stream) == 120 and len(scope.questions) == 24
    assert [e.timestamp for e in scope.stream] == sorted(e.timestamp for e in scope.stream)
    assert scope.checkpoints == [18, 38, 58, 79, 99, 119]
    warnings = loaded.warnings
    assert sorted(i.question_id for i in warnings if i.code == "empty_key_facts") == [
        "cf01_q02_null",
        "cf01_q09_longitudinal",
        "cf01_q10_evidence",
        "cf01_q23_null",
    ]
    assert {"label_meta", "id_label_leak"} <= set(codes(warnings))
    assert scope.ids_leak_labels
    assert {"episode_type", "phase", "signal_density"} <= scope.label_keys
    assert scope.defects["cf01_q09_longitudinal"] == ("empty_key_facts",)
    assert len(loaded.sha256) == 64


def test_invalid_json_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"version": "0.1.0", "scopes": [', encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    (issue,) = info.value.issues
    assert issue.path == str(path) and issue.code == "invalid_json"
    assert "not valid JSON" in str(info.value)


def test_schema_violation_names_the_field_path(tmp_path: Path) -> None:
    document = small_dataset()
    document["questions"][1]["checkpoint_after"] = "soon"
    del document["scopes"][0]["episodes"][2]["text"]
    with pytest.raises(DatasetError) as info:
        load_dataset(write_dataset(tmp_path / "d.json", document))
    fields = {issue.field for issue in info.value.issues}
    assert fields == {"questions[1].checkpoint_after", "scopes[0].episodes[2].text"}
    assert all(issue.severity is Severity.ERROR for issue in info.value.issues)


@pytest.mark.parametrize(
    ("mutate", "code", "field"),
    [
        (
            lambda d: d["scopes"][0]["episodes"].append(episode("e3", 9, "again")),
            "duplicate_episode_id",
            "scopes[0].episodes[6].episode_id",
        ),
        (lambda d: d["questions"].append(question("q1", 2, [], ["x"])), "duplicate_question_id", "questions[3].question_id"),
        (lambda d: d["questions"][0].update(checkpoint_after=7), "unreachable_checkpoint", "questions[0].checkpoint_after"),
        (lambda d: d["questions"][0].update(scope_id="nope"), "unknown_scope", "questions[0].scope_id"),
        (lambda d: d["questions"][0].update(question_type="vibes"), "unknown_question_type", "questions[0].question_type"),
        (lambda d: d["scopes"][0]["episodes"][0].update(scope_id="other"), "episode_scope_mismatch", "scopes[0].episodes[0].scope_id"),
    ],
)
def test_structural_defects_are_errors(tmp_path: Path, mutate: object, code: str, field: str) -> None:
    document = small_dataset()
    mutate(document)  # type: ignore[operator]
    with pytest.raises(DatasetError) as info:
        load_dataset(write_dataset(tmp_path / "d.json", document))
    assert (code, field) in {(i.code, i.field) for i in info.value.issues}


def test_evidence_after_checkpoint_is_a_flagged_warning_and_an_error_when_strict(tmp_path: Path) -> None:
    document = small_dataset()
    document["questions"][1]["ground_truth"]["required_evidence_refs"] = ["e1", "e5", "ghost"]
    path = write_dataset(tmp_path / "d.json", document)
    loaded = load_dataset(path)
    found = {(i.code, i.field) for i in loaded.warnings}
    assert ("evidence_after_checkpoint", "questions[1].ground_truth.required_evidence_refs[1]") in found
    assert ("unknown_evidence_ref", "questions[1].ground_truth.required_evidence_refs[2]") in found
    assert loaded.scopes[0].defects["q2"] == ("evidence_after_checkpoint", "unknown_evidence_ref")
    with pytest.raises(DatasetError) as info:
        load_dataset(path, strict=True)
    assert "arrives at stream position 5, after checkpoint 4" in str(info.value)


def test_stream_order_follows_timestamps_not_file_order(tmp_path: Path) -> None:
    document = small_dataset()
    document["scopes"][0]["episodes"].reverse()
    scope = load_dataset(write_dataset(tmp_path / "d.json", document)).scopes[0]
    assert [e.episode_id for e in scope.stream] == ["e1", "e2", "e3", "e4", "e5", "e6"]
    assert scope.position("e3") == 3 and scope.position("nope") is None
    assert scope.available_refs(2) == {"e1", "e2"}


def test_directory_loads_every_file_and_rejects_a_scope_defined_twice(tmp_path: Path) -> None:
    first = small_dataset()
    second = json.loads(json.dumps(small_dataset()).replace('"s1"', '"s2"'))
    write_dataset(tmp_path / "a.json", first)
    write_dataset(tmp_path / "b.json", second)
    loaded = load_datasets([tmp_path])
    assert [s.scope_id for d in loaded for s in d.scopes] == ["s1", "s2"]
    write_dataset(tmp_path / "c.json", first)
    with pytest.raises(DatasetError, match="scope 's1' is also defined in"):
        load_datasets([tmp_path])


def test_missing_path_and_empty_directory_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file or directory"):
        load_datasets([tmp_path / "missing.json"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match=r"no \.json dataset files"):
        load_datasets([tmp_path / "empty"])


def test_key_facts_accept_strings_and_aliases_and_round_trip() -> None:
    plain = KeyFact.model_validate("4.1 bar")
    aliased = KeyFact.model_validate({"fact": "5.9 bar", "aliases": ["5.9bar"]})
    assert plain.patterns == ("4.1 bar",) and aliased.patterns == ("5.9 bar", "5.9bar")
    assert plain.model_dump() == "4.1 bar"
    assert aliased.model_dump() == {"fact": "5.9 bar", "aliases": ["5.9bar"]}


def test_where_a_fact_is_first_printed_is_right_when_scoring_threads_race(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Concurrent questions score on several threads: two normalising the same episode at once must not shift the others."""
    import pytest_lens.text

    (scope,) = load_dataset(write_dataset(tmp_path / "d.json", small_dataset())).scopes
    real, first = pytest_lens.text.normalize, scope.stream[0].text
    both_there = threading.Barrier(2, timeout=2)

    def normalize(value: str) -> str:
        if value == first:  # hold each thread on the first episode until both have seen it unnormalised
            with contextlib.suppress(threading.BrokenBarrierError):
                both_there.wait()
        return real(value)

    monkeypatch.setattr(pytest_lens.text, "normalize", normalize)
    positions = {"forklift battery": 2, "staff on shift": 4}
    threads = [threading.Thread(target=scope.fact_printed, args=(KeyFact(fact=fact), at)) for fact, at in positions.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    normalized = scope._normalized
    assert [normalized[index] for index in range(len(normalized))] == [real(e.text) for e in scope.stream[: len(normalized)]]
    assert {fact: scope.fact_printed(KeyFact(fact=fact), at) for fact, at in positions.items()} == dict.fromkeys(positions, True)
    assert not scope.fact_printed(KeyFact(fact="staff on shift"), 3)  # printed by episode 4, not 3
