"""A run split into shards (``--lens-shard=I/N``, each its own process) and joined with ``lens merge`` is the one run.

The shards run as separate ``python -m pytest`` processes on a bundled scope under two budgets with bm25 and the
null control (four stream groups; null fails its hard gate, so the verdict and the exit status are a failing run's:
1), then ``lens merge`` joins their artifacts. Every result and every statistic must equal the single run's, timing fields aside.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_lens.cli.main import main as lens_main
from pytest_lens.records.rows import read_artifact_json, rows_path
from tests.integration.test_xdist import comparable as without_timing

RUN = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "--lens-adapter=bm25", "--lens-adapter=null")


def comparable(artifact: dict[str, Any]) -> dict[str, Any]:
    """The artifact without wall-clock fields and without the record of how it was made (shards, merge)."""
    found = without_timing(artifact)
    for key in ("merged_from", "shard", "resumed"):
        found["run"].pop(key, None)
    return found


def pytest_process(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", *RUN, *args], cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def bundled_two() -> list[str]:
    """One bundled scope under two budgets: four stream groups of 24 questions."""
    from pytest_lens.datasets.bundled import bundled_dataset_paths

    return [f"--lens-dataset={bundled_dataset_paths()[0]}", "--lens-budget=8k", "--lens-budget=16k"]


@pytest.fixture(scope="module")
def single_run(tmp_path_factory: pytest.TempPathFactory, bundled_two: list[str]) -> tuple[dict[str, Any], int]:
    """The reference: the whole run in one process (its artifact and pytest's exit status)."""
    where = tmp_path_factory.mktemp("single")
    done = pytest_process(where, "-p", "no:xdist", "-q", *bundled_two, "--lens-json=run.json")
    return read_artifact_json(where / "run.json"), done.returncode


@pytest.fixture(scope="module")
def three_shards(tmp_path_factory: pytest.TempPathFactory, bundled_two: list[str]) -> Path:
    """The same run as shards 1/3, 2/3 and 3/3, each its own process, without xdist."""
    where = tmp_path_factory.mktemp("shards")
    for index in (1, 2, 3):
        done = pytest_process(where, "-p", "no:xdist", *bundled_two, f"--lens-shard={index}/3", f"--lens-json=shard{index}.json")
        assert f"lens: shard {index}/3: " in done.stdout, done.stdout[-3000:]
    return where


@pytest.mark.parametrize("inner", [("-p", "no:xdist"), ("-n", "2")], ids=["serial_shards", "one_shard_under_xdist"])
def test_three_shards_merged_are_the_single_run(
    tmp_path: Path,
    bundled_two: list[str],
    single_run: tuple[dict[str, Any], int],
    three_shards: Path,
    inner: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    reference, status = single_run
    if inner == ("-p", "no:xdist"):
        where = three_shards
    else:
        # One shard under xdist, merged with the other two run serially: the merge cannot tell how a shard ran.
        where = tmp_path
        done = pytest_process(where, *inner, *bundled_two, "--lens-shard=1/3", "--lens-json=shard1.json")
        assert "scheduling tests via LensGroupScheduling" in done.stdout or "2 workers" in done.stdout, done.stdout[-3000:]
        for index in (2, 3):
            for name in (f"shard{index}.json", f"shard{index}.rows.jsonl"):
                shutil.copy(three_shards / name, where / name)
    shards = [read_artifact_json(where / f"shard{index}.json") for index in (1, 2, 3)]
    # Each shard ran a part: whole stream groups, none twice, together every group of the run.
    units = [shard["run"]["shard"]["units"] for shard in shards]
    assert all(units) and sum(len(u) for u in units) == len({u for found in units for u in found}) == 4
    assert sum(len(shard["results"]) for shard in shards) == len(reference["results"]) == 2 * 2 * 24
    monkeypatch.chdir(where)
    code = lens_main(["merge", "shard1.json", "shard2.json", "shard3.json", "--out", "run.json"])
    merged = capsys.readouterr()
    assert code == status == 1, merged.out + merged.err  # null fails its hard gate, in both
    artifact = read_artifact_json(where / "run.json")
    assert artifact["run"]["merged_from"] == ["shard1.json", "shard2.json", "shard3.json"]
    assert "shard" not in artifact["run"]
    assert comparable(artifact) == comparable(reference)
    assert artifact["verdict"] == reference["verdict"] and artifact["statistics"] == reference["statistics"]
    assert "LENS verdict: FAIL - null@8k: hard gate evidence_grounding" in merged.out and "lens merge: exit status 1" in merged.out


def test_the_merged_rows_are_the_shards_bytes_and_an_old_single_file_shard_merges_alike(
    tmp_path: Path,
    single_run: tuple[dict[str, Any], int],
    three_shards: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fan-in reads each shard's rows without their transcripts and copies their bytes into the merged rows file,
    # in the run's case order; a shard written before rows streamed (one file, results inline) is read whole.
    reference, _ = single_run
    for name in ("shard1.json", "shard1.rows.jsonl", "shard3.json", "shard3.rows.jsonl"):
        shutil.copy(three_shards / name, tmp_path / name)
    old = read_artifact_json(three_shards / "shard2.json")
    del old["rows"]
    (tmp_path / "shard2.json").write_text(json.dumps({**old, "schema_version": 1}))
    monkeypatch.chdir(tmp_path)  # the fan-in's checkout: not a git work tree, as the shards' was not
    shards = [str(tmp_path / f"shard{index}.json") for index in (1, 2, 3)]
    status = lens_main(["merge", *shards, "--out", "run.json", "--html", "report.html", "--save", "merged"])
    assert status == 1, capsys.readouterr()
    assert comparable(read_artifact_json(tmp_path / "run.json")) == comparable(reference)
    merged = (tmp_path / "run.rows.jsonl").read_bytes().splitlines()
    copied = {line for index in (1, 3) for line in (three_shards / f"shard{index}.rows.jsonl").read_bytes().splitlines()}
    assert len(merged) == len(reference["results"]) and copied <= set(merged)  # shards 1 and 3's rows, byte for byte
    # The report and the saved run hold the whole rows (read back from the merged file), not the ones read to compute.
    (saved,) = (tmp_path / ".lens").glob("*/0001_merged.json")
    assert saved.with_name("0001_merged.rows.jsonl").read_bytes().splitlines() == merged
    views = json.loads((tmp_path / "report.html").read_text().split('id="lens-transcripts">')[1].split("</script>")[0])
    assert len(views) == len(merged) and all(view["prompt"] and view["calls"] for view in views)


# -- refusals ----------------------------------------------------------------------------------------


def _merge(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str]:
    status = lens_main(["merge", *(str(arg) for arg in args)])
    return status, capsys.readouterr().err


def test_a_missing_shard_is_refused_by_name(three_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = _merge(capsys, three_shards / "shard1.json", three_shards / "shard3.json", "--out", tmp_path / "run.json")
    assert status == 2
    assert "missing shard 2/3 (given: 1/3 (" in err and "every shard is needed" in err
    assert not (tmp_path / "run.json").exists()


def test_a_duplicated_shard_is_refused_by_name(three_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = shutil.copy(three_shards / "shard2.json", tmp_path / "shard2-again.json")
    shutil.copy(three_shards / "shard2.rows.jsonl", tmp_path / "shard2-again.rows.jsonl")
    shards = [three_shards / f"shard{index}.json" for index in (1, 2, 3)]
    status, err = _merge(capsys, *shards, copy, "--out", tmp_path / "run.json")
    assert status == 2
    assert f"duplicated shard: shard 2/3 in {three_shards / 'shard2.json'}, {copy}; give each shard once" in err


def test_shards_of_different_splits_are_refused(three_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = read_artifact_json(three_shards / "shard3.json")
    other["run"]["shard"]["index"], other["run"]["shard"]["total"] = 2, 2
    (tmp_path / "half.json").write_text(json.dumps(other))
    status, err = _merge(capsys, three_shards / "shard1.json", tmp_path / "half.json", "--out", tmp_path / "run.json")
    assert status == 2 and "shards of different splits" in err and "half.json is 2/2" in err


def test_an_artifact_that_is_not_a_shard_is_refused(three_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = read_artifact_json(three_shards / "shard1.json")
    del plain["run"]["shard"]
    (tmp_path / "plain.json").write_text(json.dumps(plain))
    status, err = _merge(capsys, tmp_path / "plain.json", three_shards / "shard2.json", "--out", tmp_path / "run.json")
    assert status == 2 and "plain.json is not a shard's artifact: run each shard with --lens-shard=I/N" in err


# -- what each shard owed: a merge never loses or invents a result ------------------------------------


def _edit_results(source: Path, target: Path, edit: Any) -> None:
    """A copy of the shard ``source`` at ``target`` (document and rows file) with its results replaced by ``edit(results)``."""
    document = json.loads(source.read_text())
    results = edit(read_artifact_json(source)["results"])
    document["rows"] = {"file": rows_path(target).name, "format": "jsonl", "count": len(results), "sha256": None}
    target.write_text(json.dumps(document))
    rows_path(target).write_text("".join(json.dumps(result) + "\n" for result in results))


def _shards_with(three_shards: Path, index: int, replacement: Path) -> list[Path]:
    return [replacement if i == index else three_shards / f"shard{i}.json" for i in (1, 2, 3)]


def test_a_shard_run_with_another_selection_is_refused_naming_its_questions(
    three_shards: Path, tmp_path: Path, bundled_two: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    done = pytest_process(tmp_path, "-p", "no:xdist", "-q", *bundled_two, "--lens-shard=2/3", "-k", "q01", "--lens-json=shard2.json")
    assert "deselected" in done.stdout, done.stdout[-2000:]
    status, err = _merge(capsys, *_shards_with(three_shards, 2, tmp_path / "shard2.json"), "--out", tmp_path / "run.json")
    assert status == 2, err
    assert f"{tmp_path / 'shard2.json'} ran with another selection (-k q01) than {three_shards / 'shard1.json'} (none): " in err
    assert "questions of its stream groups were not run: " in err and "_q02_" in err and "rerun it as its siblings ran" in err
    assert not (tmp_path / "run.json").exists()


def test_a_shard_split_by_other_durations_is_refused(
    three_shards: Path,
    tmp_path: Path,
    bundled_two: list[str],
    single_run: tuple[dict[str, Any], int],
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Measured durations that make the last stream group the costliest: the four groups cost alike by estimate, so the
    # split by these differs from the estimate's whatever the machine measured (its own timings could split alike).
    artifact = single_run[0]
    last = [result[key] for key in ("adapter", "scope_id", "budget") for result in artifact["results"][-1:]]
    for result in artifact["results"]:
        result["duration_s"] = 100.0 if [result["adapter"], result["scope_id"], result["budget"]] == last else 1.0
    durations = tmp_path / "durations.json"
    durations.write_text(json.dumps(artifact))
    pytest_process(
        tmp_path, "-p", "no:xdist", "-q", *bundled_two, "--lens-shard=2/3", f"--lens-shard-durations={durations}", "--lens-json=shard2.json"
    )
    status, err = _merge(capsys, *_shards_with(three_shards, 2, tmp_path / "shard2.json"), "--out", tmp_path / "run.json")
    assert status == 2, err
    assert "the shards were split differently: " in err and "by estimated cost (no --lens-shard-durations)" in err
    assert f"{tmp_path / 'shard2.json'} by the durations of {durations} (sha256 " in err
    assert not (tmp_path / "run.json").exists()


def test_a_shard_with_half_its_results_deleted_is_refused_naming_them(
    three_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    halved = tmp_path / "shard1.json"
    _edit_results(three_shards / "shard1.json", halved, lambda results: results[: len(results) // 2])
    status, err = _merge(capsys, *_shards_with(three_shards, 1, halved), "--out", tmp_path / "run.json")
    assert status == 2, err
    assert f"{halved} (shard 1) lacks " in err and " questions it owed, with no result and no record of why: " in err
    assert "its artifact is incomplete or was edited: rerun the shard" in err
    assert not (tmp_path / "run.json").exists()


def _perfect(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Results with every score 1.0."""
    return [{**result, "metrics": dict.fromkeys(result["metrics"], 1.0), "composite": 1.0, "gated": False} for result in results]


def test_results_appended_to_another_shard_are_refused(three_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Shard 1's results, every score 1.0, appended to shard 3: today's gate turned from FAIL into PASS.
    first = read_artifact_json(three_shards / "shard1.json")["results"]
    padded = tmp_path / "shard3.json"
    _edit_results(three_shards / "shard3.json", padded, lambda results: results + _perfect(first))
    status, err = _merge(capsys, *_shards_with(three_shards, 3, padded), "--out", tmp_path / "run.json")
    assert status == 2, err
    assert f"{padded} has results already given ({three_shards / 'shard1.json'}): {len(first)} questions twice: " in err
    # Moved rather than copied (shard 1 without them): they are another shard's groups, and shard 1 lacks them.
    emptied = tmp_path / "shard1.json"
    _edit_results(three_shards / "shard1.json", emptied, lambda results: [])
    status, err = _merge(capsys, emptied, three_shards / "shard2.json", padded, "--out", tmp_path / "run.json")
    assert status == 2, err
    assert f"{padded} (shard 3) has {len(first)} results of stream groups it does not own: " in err
    # Twice within one shard: the second copy is refused when the artifact is read.
    doubled = tmp_path / "shard2.json"
    _edit_results(three_shards / "shard2.json", doubled, lambda results: results + _perfect(results[:1]))
    status, err = _merge(capsys, *_shards_with(three_shards, 2, doubled), "--out", tmp_path / "run.json")
    assert status == 2 and f"{rows_path(doubled)}:25: duplicates line 1 " in err
    assert not (tmp_path / "run.json").exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("adapters", "bm25", "setting adapters (--lens-adapter) is 'bm25', not a list of adapters"),
        ("repeat", 10**9, "setting repeat (--lens-repeat): must be a whole number of answers per question, from 1 to 1,000"),
        ("llm", None, "setting llm is missing"),
    ],
)
def test_shards_with_recorded_settings_of_the_wrong_type_are_refused_in_one_line(
    three_shards: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: object, message: str
) -> None:
    # On main: raw tracebacks, and MemoryError for repeat 10**9 (past the 1,000 the option allows).
    edited = []
    for index in (1, 2, 3):
        artifact = json.loads((three_shards / f"shard{index}.json").read_text())
        artifact["run"]["shard"]["settings"][field] = value
        edited.append(tmp_path / f"shard{index}.json")
        edited[-1].write_text(json.dumps(artifact))
    status, err = _merge(capsys, *edited, "--out", tmp_path / "run.json")
    assert status == 2 and err.startswith("lens merge: the shards' settings cannot be used: ") and message in err
    assert err.count("\n") == 1 and not (tmp_path / "run.json").exists()


GIT = ("git", "-c", "user.name=t", "-c", "user.email=t@example.invalid")


def test_shards_of_two_code_revisions_or_settings_are_refused(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    # A real git checkout: shard 1 runs at one commit, shard 2 after another commit; then a shard run with another seed.
    from tests.support import COLD_CHAIN_DEMO

    pytester.makefile(".txt", notes="first")
    subprocess.run([*GIT, "init", "-q"], cwd=pytester.path, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=pytester.path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "one"], cwd=pytester.path, check=True)
    args = (
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        "-q",
        "--lens-adapter=bm25",
        "--lens-adapter=kw=bm25",
        f"--lens-dataset={COLD_CHAIN_DEMO}",
    )
    pytester.runpytest(*args, "--lens-shard=1/2", "--lens-json=one.json")
    pytester.makefile(".txt", notes="second")
    subprocess.run([*GIT, "commit", "-qam", "two"], cwd=pytester.path, check=True)
    pytester.runpytest(*args, "--lens-shard=2/2", "--lens-json=two.json")
    status, err = _merge(capsys, pytester.path / "one.json", pytester.path / "two.json", "--out", pytester.path / "run.json")
    assert status == 2
    assert "shards differ in code revision: " in err and "one.json has {'id': '" in err and "two.json has {'id': '" in err
    # The same commit, but another seed: the setting is named.
    pytester.runpytest(*args, "--lens-shard=1/2", "--lens-seed=7", "--lens-json=seven.json")
    status, err = _merge(capsys, pytester.path / "seven.json", pytester.path / "two.json", "--out", pytester.path / "run.json")
    assert status == 2 and "shards differ in setting 'seed': " in err and "seven.json has 7" in err and "two.json has 42" in err
    # Shards of the same commit and settings merge, and exit as the single run does: 0, it passes.
    pytester.runpytest(*args, "--lens-shard=1/2", "--lens-json=one-again.json")
    single = pytester.runpytest(*args, "--lens-json=single.json")
    status = lens_main(
        ["merge", str(pytester.path / "one-again.json"), str(pytester.path / "two.json"), "--out", str(pytester.path / "run.json")]
    )
    assert status == single.ret == 0, capsys.readouterr()
    merged = read_artifact_json(pytester.path / "run.json")
    assert comparable(merged) == comparable(read_artifact_json(pytester.path / "single.json"))


SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "ci" / "lens-shards.sh"


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_ci_examples_laptop_script_runs_shards_side_by_side_and_gates_the_merged_run(tmp_path: Path) -> None:
    from tests.support import COLD_CHAIN_DEMO

    env = {
        **os.environ,
        "LENS_VENV": str(Path(sys.executable).parent.parent),  # this environment stands for the one `install` makes
        "LENS_ADAPTER": "bm25",
        "LENS_ARGS": f"-p no:hypothesispytest -p no:xdist --lens-adapter=kw=bm25 --lens-dataset={COLD_CHAIN_DEMO}",
        "LENS_OUT": str(tmp_path / "out"),
    }
    env.pop("RUNNER_TEMP", None)
    done = subprocess.run(["bash", str(SCRIPT), "laptop", "2"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "lens: shard 1/2: 1 of 2 stream groups, 8 questions" in done.stdout
    assert "lens: shard 2/2: 1 of 2 stream groups, 8 questions" in done.stdout
    assert "merged 2 shards: 16 results" in done.stdout and "LENS verdict: PASS" in done.stdout
    artifact = read_artifact_json(tmp_path / "out" / "lens-run.json")
    assert len(artifact["results"]) == 16 and (tmp_path / "out" / "lens-report.html").exists()
    # The fan-in's exit status is the run's: a shard gone missing fails it, naming the shard.
    (tmp_path / "out" / "shards" / "shard-2-of-2.json").unlink()
    merged = subprocess.run(["bash", str(SCRIPT), "merge"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False)
    assert merged.returncode == 2 and "missing shard 2/2" in merged.stderr


def test_a_shard_given_no_stream_group_says_so_and_exits_0(tmp_path: Path, bundled_two: list[str]) -> None:
    # Issue 46: a shard of more shards than stream groups exited 5 ("no tests ran"), which the example CI script
    # reports as "could not run". It owns nothing: it says so, exits 0 and leaves an artifact for the merge.
    done = pytest_process(tmp_path, "-p", "no:xdist", *bundled_two, "--lens-shard=5/5", "--lens-json=shard5.json")
    assert done.returncode == 0, done.stdout[-2000:]
    assert "lens: shard 5/5: 0 of 4 stream groups, 0 questions (it owns nothing: 5 shards for 4 stream groups; exit 0)" in done.stdout
    assert read_artifact_json(tmp_path / "shard5.json")["run"]["shard"]["index"] == 5
    # A shard that owns groups but whose selection leaves nothing is still pytest's "no tests ran".
    assert pytest_process(tmp_path, "-p", "no:xdist", *bundled_two, "--lens-shard=1/5", "-k", "no_such_q").returncode == 5
