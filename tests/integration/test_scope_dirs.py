"""LENS scope directories (the reference's V2 layout) as ``--lens-dataset``, end to end through pytester."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.records.rows import read_artifact_json
from tests.scope_dirs import reference_visible, write_scope_dir
from tests.support import assert_answered

NO_CACHE = ("-p", "no:cacheprovider")

#: Records, at every prepare, which episodes the memory holds (the runner's side of the checkpoint contract).
RECORDER = """
import json
from pathlib import Path
from tests.support import RecordingMemory

class Recorder(RecordingMemory):
    def prepare(self, scope_id, checkpoint):
        super().prepare(scope_id, checkpoint)
        log = Path(__file__).parent / "held.jsonl"
        with log.open("a") as out:
            out.write(json.dumps({"scope": scope_id, "checkpoint": checkpoint, "held": sorted(self.store)}) + "\\n")
"""


def test_the_shared_scope_directory_runs_and_holds_the_reference_set_at_each_checkpoint(
    pytester: pytest.Pytester, lens_v2_scope_path: Path
) -> None:
    pytester.makepyfile(recorder=RECORDER)
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--lens-adapter=recorder:Recorder", "--lens-adapter=bm25", f"--lens-dataset={lens_v2_scope_path}", "--lens-json=out.json", *NO_CACHE
    )
    assert_answered(result, 20)
    result.stdout.fnmatch_lines(
        ["*= LENS summary =*", "data: 1 scope(s), 40 episodes, 10 questions (16_parking_friction)", "*evidence_after_checkpoint*"]
    )
    artifact = read_artifact_json(pytester.path / "out.json")
    assert {r["checkpoint"] for r in artifact["results"]} == {12, 24, 32, 40}
    questions = {q["question_id"]: q["checkpoint_after"] for q in json.loads((lens_v2_scope_path / "generated/questions.json").read_text())}
    by_checkpoint = {r["checkpoint"]: questions[r["question_id"]] for r in artifact["results"]}
    held = [json.loads(line) for line in (pytester.path / "held.jsonl").read_text().splitlines()]
    assert [h["checkpoint"] for h in held] == [12, 24, 32, 40]
    for record in held:
        assert set(record["held"]) == reference_visible(lens_v2_scope_path, "parking_friction_16", by_checkpoint[record["checkpoint"]])
    # The agent was shown aliases, never the ids that tell signal from distractor.
    for result_record in artifact["results"]:
        assert "parking_friction_16" not in result_record["answer"]


def test_a_directory_of_scope_directories_runs_every_scope(pytester: pytest.Pytester) -> None:
    scopes = pytester.path / "scopes"
    write_scope_dir(scopes, "alpha_01", signal=(1, 2), distractors={"w": (1, 2, 3)})
    write_scope_dir(scopes, "beta_02", signal=(1, 2, 3))
    first_release = scopes / "01_first_release" / "generated"  # as in the reference's datasets/scopes/
    first_release.mkdir(parents=True)
    (first_release.parent / "spec.yaml").write_text("scope_id: first_01\n", encoding="utf-8")
    (first_release / "episodes.json").write_text("[]", encoding="utf-8")
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-dataset=scopes", "-v", *NO_CACHE)
    assert_answered(result, 5)
    result.stdout.fnmatch_lines(
        [
            "*bm25-alpha_01-cp002-q_cp1? GATED*",  # bm25 cites nothing it was shown in these tiny scopes
            "*bm25-beta_02-cp005-q_cp3? GATED*",
            "*01_first_release: -: skipped: a scope directory of the first LENS release*older_layout?",
        ]
    )


def test_an_unusable_scope_directory_is_a_usage_error_naming_the_file(pytester: pytest.Pytester) -> None:
    directory = write_scope_dir(pytester.path / "scopes")
    (directory / "spec.yaml").write_text("episodes: {timeline: {start: '2025-01-06'}}\n", encoding="utf-8")
    result = pytester.runpytest("--lens-adapter=bm25", "--lens-dataset=scopes", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*spec.yaml: episodes.timeline.interval: expected a positive duration like '4d'*invalid_timeline*"])
