from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from pytest_lens.records.results import RunArtifact
from pytest_lens.reports.html.page import PLOT_LIBRARIES, asset, render_report
from pytest_lens.reports.html.report import build_page
from pytest_lens.reports.views.transcript import transcripts
from tests.support import inline_artifact, run_lens_session


class _Page(HTMLParser):
    """What a browser would fetch or run: every tag with its attributes, and the text of each script block."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: dict[str, str] = {}
        self._script: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs).get("id") or "inline"
            self.scripts[self._script] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self.scripts[self._script] += data


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def test_one_self_contained_file(example_run: RunArtifact) -> None:
    html = render_report(example_run)
    page = parse(html)
    # Nothing is fetched at view time: no external script, style, image, font or frame; links stay in the page.
    for tag, attrs in page.tags:
        assert tag not in ("link", "iframe", "img", "object", "embed")
        assert "src" not in attrs, (tag, attrs)
        href = attrs.get("href")
        assert href is None or href.startswith("#"), (tag, href)
    # The page itself names no URL. (The plotting libraries it inlines hold namespace names and a schema id as
    # strings; that they fetch nothing is checked in a real browser: tests/integration/test_html_browser.py.)
    libraries = [asset("vendor", name) for name in PLOT_LIBRARIES]
    assert all(library in html for library in libraries)
    own = html
    for library in libraries:
        own = own.replace(library, "")
    assert not re.search(r"url\((?!#)|@import|https?://", own)
    figures = [attrs.get("data-figure") for tag, attrs in page.tags if tag == "figure"]
    assert figures == ["headline", "types", "scopes", "stream", "pairs"]
    # Each figure is its Vega-Lite spec, as JSON the page's script hands to Vega.
    specs = [json.loads(text) for text in re.findall(r'<script type="application/json" class="lens-plot">(.*?)</script>', html)]
    titles = [spec["title"] for spec in specs]
    assert titles[0] == "headline (retrieval_score) and metrics per adapter"
    assert titles[1:3] == ["retrieval_score by question type", "retrieval_score by scope"]
    assert {row["adapter"] for row in specs[0]["data"]["values"]} == {"bm25", "drops", "null"}


def test_every_question_row_links_to_its_transcript(example_run: RunArtifact) -> None:
    page = parse(render_report(example_run))
    views = json.loads(page.scripts["lens-transcripts"])
    anchors = [view["anchor"] for view in views]
    assert anchors == [item.anchor for item in transcripts(example_run)]
    rows = [attrs["id"] for tag, attrs in page.tags if tag == "tr" and (attrs.get("id") or "").startswith("row-")]
    assert rows == [f"row-{anchor}" for anchor in anchors]
    links = {attrs["href"] for tag, attrs in page.tags if tag == "a" and "qlink" in (attrs.get("class") or "")}
    assert {f"#{anchor}" for anchor in anchors} <= links
    episodes = json.loads(page.scripts["lens-episodes"])
    cited = {(r.scope_id, ref) for r in example_run.results for ref in r.cited_refs}
    assert cited and all(ref in episodes[scope] for scope, ref in cited)


def test_filters_offer_every_adapter_scope_type_and_outcome(example_run: RunArtifact) -> None:
    page = build_page(example_run)
    assert page.filters["adapter"] == ["bm25", "drops", "null"]
    assert page.filters["scope"] == ["cold_chain_demo"]
    assert set(page.filters["type"]) == {r.question_type for r in example_run.results}
    assert page.filters["outcome"] == ["gated", "ok"]
    html = render_report(example_run)
    for name in ("adapter", "scope", "type", "outcome", "text"):
        assert f'data-filter="{name}"' in html


def test_metrics_are_listed_from_the_artifact(example_run: RunArtifact) -> None:
    extra = [r.model_copy(update={"metrics": {**r.metrics, "shiny_new_metric": 0.25}}) for r in example_run.results]
    summary = {k: s.model_copy(update={"metrics": {**s.metrics, "shiny_new_metric": 0.25}}) for k, s in example_run.summary.items()}
    html = render_report(example_run.model_copy(update={"results": extra, "summary": summary}))
    assert html.count("shiny_new_metric") >= 2 + len(extra)  # headline column, question column, every transcript


def test_text_cannot_break_out_of_the_page(example_run: RunArtifact) -> None:
    evil = "</script><script>alert(1)</script><b>bold</b>"
    results = [example_run.results[0].model_copy(update={"prompt": evil, "answer": evil + " [ccd_e01]"}), *example_run.results[1:]]
    html = render_report(example_run.model_copy(update={"results": results}))
    assert "<script>alert(1)" not in html and "<b>bold</b>" not in html
    page = parse(html)
    assert set(page.scripts) == {"lens-transcripts", "lens-episodes", "inline"}
    assert json.loads(page.scripts["lens-transcripts"])[0]["prompt"] == evil


def test_per_question_deltas_against_a_baseline_largest_drops_first(tmp_path: Path, example_run: RunArtifact) -> None:
    # The degraded bm25 under bm25's label, against the healthy run as the baseline.
    degraded = run_lens_session(tmp_path, {"bm25": "lens_fixtures.adapters.degraded:DropsBestBM25Adapter"}).artifact()
    baseline = example_run.model_copy(update={"results": [r for r in example_run.results if r.adapter == "bm25"]})
    page = build_page(degraded, baseline=baseline, baseline_name="healthy")
    deltas = [row.delta for row in page.question_deltas]
    assert len(deltas) == len(degraded.results)
    assert deltas == sorted(deltas) and deltas[0] < 0  # something got worse, and it comes first
    html = render_report(degraded, baseline=baseline, baseline_name="healthy")
    assert "Per-question deltas against healthy (largest drops first)" in html
    first = page.question_deltas[0]
    assert html.index(f'href="#{first.transcript.anchor}"', html.index("Per-question deltas")) > 0


def test_paired_comparisons_are_shown(example_run: RunArtifact) -> None:
    html = render_report(example_run)
    assert example_run.statistics is not None and len(example_run.statistics.pairs) == 3
    assert 'id="pairs"' in html and "paired retrieval_score differences" in html
    for pair in example_run.statistics.pairs:
        assert f"<td>{pair.first}</td><td>{pair.second}</td>" in html


class _WithPower(RunArtifact):
    power: list[dict[str, Any]] = Field(default_factory=list)


def test_fields_added_to_the_artifact_appear_as_tables(example_run: RunArtifact) -> None:
    rows = [{"mutant": "drop_best", "detected": True, "delta": -0.24}, {"mutant": "shuffle", "detected": False, "delta": -0.01}]
    artifact = _WithPower(**example_run.model_dump(), results=example_run.results, power=rows)
    html = render_report(artifact)
    assert 'id="extra-power"' in html
    assert "<td>drop_best</td><td>True</td><td>-0.240</td>" in html


def test_artifacts_from_before_transcripts_still_render(example_run: RunArtifact) -> None:
    data = inline_artifact(example_run)
    del data["verdict"], data["evidence"]
    for result in data["results"]:
        for key in ("canonical_answer", "key_facts", "aliases"):
            del result[key]
        for call in result["tool_calls"]:
            del call["hits"], call["result_tokens_left"], call["calls_left"]
    html = render_report(RunArtifact.model_validate(data))
    assert "Verdict not recorded in this artifact" in html
    views = json.loads(parse(html).scripts["lens-transcripts"])
    assert views[0]["calls"][1]["returned"] and views[0]["calls"][1]["tokens_left"] is None


@pytest.mark.parametrize("budgets", [("4k", "16k")])
def test_several_budgets_get_a_budget_plot(tmp_path: Path, budgets: tuple[str, ...]) -> None:
    artifact = run_lens_session(tmp_path, {"bm25": "bm25"}, budgets=budgets).artifact()
    page = build_page(artifact)
    assert "budgets" in page.figures and page.filters["budget"] == ["4k", "16k"]
    assert page.figures["budgets"]["title"] == "composite across budgets"
    assert [row["budget"] for row in page.figures["budgets"]["data"]["values"]] == ["4k", "16k"]


def test_figures_show_the_run_s_headline_as_its_tables_do(example_run: RunArtifact) -> None:
    """Without a judge the headline is the retrieval score: the plot, the heatmaps and the tables all show it."""
    page = build_page(example_run)
    assert page.score == "retrieval_score"
    summaries = example_run.summary
    rows = {(row["adapter"], row["label"]): row for row in page.figures["headline"]["data"]["values"]}
    for key, summary in summaries.items():
        assert rows[key, "retrieval_score"]["value"] == example_run.statistics.adapters[key].composite.value == summary.headline
        # The paper's composite is beside it, labelled, and it is a different number.
        assert rows[key, "composite (tier-1 only)"]["value"] == summary.composite
    assert summaries["bm25"].headline != summaries["bm25"].composite
    cells = {(row["row"], row["column"]): row["value"] for row in page.figures["types"]["data"]["values"]}
    for key, summary in summaries.items():
        for qtype, group in summary.by_type.items():
            assert cells[qtype, key] == group.headline
    # One scope: its cell is the adapter's headline over every question.
    scope_cells = {row["column"]: row["value"] for row in page.figures["scopes"]["data"]["values"]}
    assert scope_cells == pytest.approx({key: summary.headline for key, summary in summaries.items()})
    html = render_report(example_run)
    assert "retrieval_score [95% CI]" in html and "<th>composite (tier-1 only)</th>" in html


def test_the_overview_shows_the_comparability_card(example_run: RunArtifact) -> None:
    html = render_report(example_run)
    card = html[html.index("<h2>Comparability card</h2>") :]
    card = card[: card.index("</dl>")]
    for field in ("data*", "selection", "budget*", "agent*", "judge*", "scoring*", "headline", "categories", "repetitions", "seed"):
        assert f"<dt>{field}</dt>" in card
    assert "<dd>offline</dd>" in card and "derived from a run written before cards" not in card.lower()
    # A run written before cards gets one derived from what it recorded, and says so.
    old = example_run.model_copy(update={"run": example_run.run.model_copy(update={"card": None})})
    assert "Derived from a run written before cards" in render_report(old)


def test_the_verdict_line_says_when_an_unlike_baseline_was_accepted(example_run: RunArtifact) -> None:
    assert example_run.verdict is not None
    outcome = "FAIL" if example_run.verdict.exit_code else "PASS"
    note = "compared with an unlike baseline 0001_main, accepted by --lens-accept-unlike=judge: judge differs: this run none"
    noted = example_run.model_copy(update={"verdict": example_run.verdict.model_copy(update={"notes": [note]})})
    assert f"LENS verdict: {outcome} [{note}]</p>" in render_report(noted)
    assert f"LENS verdict: {outcome}</p>" in render_report(example_run)
