from __future__ import annotations

from pathlib import Path

import pytest

from pytest_lens.datasets.bundled import bundled_dataset_paths, bundled_suite_paths
from pytest_lens.datasets.loader import load_dataset
from pytest_lens.llm.cache import RequestCache
from pytest_lens.llm.client import ChatClient, LLMEndpoint
from pytest_lens.llm.stats import LLMStats
from pytest_lens.reports.terminal import LensReport
from pytest_lens.scoring.scorer import Scoring
from pytest_lens.suites import load_suite
from pytest_lens.suites.base import MECHANICAL
from pytest_lens.suites.meme.llm_judge import MemeLLMJudge
from pytest_lens.suites.meme.suite import MemeScorer
from pytest_lens.suites.selection import SuiteRun, default_dataset_paths, keep_suites


def test_default_data_is_lens_unless_suites_are_selected() -> None:
    assert default_dataset_paths(()) == bundled_dataset_paths()
    assert default_dataset_paths(("meme", "mab")) == [*bundled_suite_paths("meme"), *bundled_suite_paths("mab")]


@pytest.mark.parametrize(
    ("suite", "message"),
    [
        ("locomo", "no bundled data for suite 'locomo' (bundled: lens, meme, mab); locomo data is imported"),
        ("nonsense", "no bundled data for suite 'nonsense' (bundled: lens, meme, mab)"),
    ],
)
def test_unknown_or_import_only_suites_are_refused(suite: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        default_dataset_paths((suite,))


def test_keep_suites_filters_datasets_by_their_suite_field() -> None:
    datasets = [load_dataset(p) for p in default_dataset_paths(("lens", "meme"))]
    assert keep_suites(datasets, ()) == datasets
    assert [d.dataset.suite for d in keep_suites(datasets, ("meme",))] == ["meme"]
    with pytest.raises(ValueError, match=r"none of the datasets belongs to suite\(s\) mab \(their suites: lens, meme\)"):
        keep_suites(datasets, ("mab",))


def test_questions_are_scored_by_their_suite() -> None:
    run = SuiteRun.for_datasets([load_dataset(p) for p in default_dataset_paths(("lens", "mab"))])
    assert list(run.suites) == ["mab"]
    lens = Scoring.default()
    assert run.scoring("lens", lens) is lens
    mab = run.scoring("mab", lens)
    assert dict(mab.weights) == {"mab_score": 1.0}
    assert mab.gates == ()
    assert [s.name for s in mab.scorers] == ["mab"]


def test_an_unregistered_suite_name_falls_back_to_lens_metrics() -> None:
    suite = load_suite("my_suite")
    assert suite.name == "my_suite"
    assert suite.gates  # the grounding gate, as for LENS


def test_report_sections_follow_the_lens_tables_and_replace_the_empty_notice() -> None:
    class Section:
        @property
        def lines(self) -> list[str]:
            return ["MY SECTION"]

    assert "no LENS results were recorded" in LensReport({}).lines
    lines = LensReport({}, sections=[Section()]).lines
    assert "no LENS results were recorded" not in lines
    assert "MY SECTION" in lines


def test_with_an_llm_judge_meme_judges_through_it_and_other_suites_stay_mechanical(tmp_path: Path) -> None:
    client = ChatClient(
        LLMEndpoint("http://127.0.0.1:9/v1", api_key_env="LENS_TEST_NO_KEY"),
        "judge-m",
        cache=RequestCache(tmp_path / "c", "off"),
        stats=LLMStats(),
    )
    datasets = [load_dataset(p) for p in default_dataset_paths(("meme", "mab"))]
    judged = SuiteRun.for_datasets(datasets, llm_judge=client)
    meme_judge = judged.judge("meme")
    assert meme_judge is not None and meme_judge.name == "llm"
    assert meme_judge.description.startswith("llm (judge-m at http://127.0.0.1:9/v1; MEME per-task prompts")
    (scorer,) = judged.scoring("meme", Scoring.default()).scorers
    assert isinstance(scorer, MemeScorer) and isinstance(scorer.judge, MemeLLMJudge) and scorer.judge.client is client
    assert judged.judge("mab") == MECHANICAL
    assert judged.judge("lens") is None
    mechanical = SuiteRun.for_datasets(datasets)
    assert (mechanical.judge("meme"), mechanical.judge("mab")) == (MECHANICAL, MECHANICAL)
    (offline,) = mechanical.scoring("meme", Scoring.default()).scorers
    assert isinstance(offline, MemeScorer) and offline.judge is None
