"""The report page as HTML, section by section, from a :class:`~pytest_lens.reports.html.report.ReportPage`.

Every piece of text goes through :class:`markupsafe.Markup` formatting, which escapes its arguments:
only markup written here is markup. (A template engine was measured first: compiling the template
cost half a second per report, about 1% of the run it reports; the page is tables of data built in
Python anyway.) Transcripts are laid out in the browser from JSON the page carries, so a run of
thousands of questions stays a small, quick file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from pytest_lens.analysis.format import METRIC_LABELS, format_delta, format_estimate, format_p
from pytest_lens.records.card import CARD_FIELDS, REFUSING
from pytest_lens.reports.html.report import GenericSection, ReportPage, build_page
from pytest_lens.reports.render import UNICODE_ARROWS, changed_counts, pair_result, status_text
from pytest_lens.scoring.composite import composite
from pytest_lens.scoring.headline import RETRIEVAL_SCORE_WEIGHTS, QuestionHeadlines

if TYPE_CHECKING:
    from pytest_lens.records.identity import AgentIdentity
    from pytest_lens.records.results import RunArtifact, ScopeEvidence
    from pytest_lens.records.statistics import AdapterStatistics, BaselineComparison, PairedTest, RunStatistics
    from pytest_lens.reports.views.transcript import Transcript

__all__ = ["PLOT_LIBRARIES", "asset", "element_id", "render_page", "render_report", "script_json"]


def element_id(prefix: str, *parts: str) -> str:
    """An HTML id from free text: ``prefix-part-part`` with anything but letters, digits, ``-_.`` replaced."""
    text = "-".join(parts)
    return prefix + "-" + "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


def script_json(value: Any) -> Markup:
    """JSON for a ``<script type="application/json">`` block: compact, every ``<`` escaped so no text can end the block."""
    return Markup(json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c"))


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _label(metric: str) -> str:
    return METRIC_LABELS.get(metric, metric)


def _join(parts: Iterable[Markup | str], separator: str = "") -> Markup:
    return Markup(separator).join(parts)


def _table(
    headers: Sequence[Markup | str], rows: Iterable[Sequence[Markup | str]], *, cls: str = "data", numeric: Sequence[bool] = ()
) -> Markup:
    """A table; ``numeric`` marks right-aligned columns. Cells that are :class:`Markup` are kept, others escaped."""
    head = _join(Markup("<th>{}</th>").format(h) for h in headers)
    body = _join(
        Markup("<tr>{}</tr>").format(
            _join(
                Markup('<td class="num">{}</td>').format(cell)
                if index < len(numeric) and numeric[index]
                else Markup("<td>{}</td>").format(cell)
                for index, cell in enumerate(row)
            )
        )
        for row in rows
    )
    return Markup('<div class="scroll"><table class="{}"><thead><tr>{}</tr></thead><tbody>{}</tbody></table></div>').format(cls, head, body)


def _badge(outcome: str) -> Markup:
    return Markup('<span class="badge {0}">{0}</span>').format(outcome)


def _qlink(item: Transcript, text: str | None = None) -> Markup:
    return Markup('<a class="qlink" href="#{}" title="{}">{}</a>').format(item.anchor, item.test_id, text or item.test_id)


def _figure(page: ReportPage, name: str) -> Markup:
    """The figure's place in the page: its Vega-Lite spec as JSON, drawn there by the page's script when viewed."""
    spec = page.figures.get(name)
    if not spec:
        return Markup()
    return Markup('<figure class="plot" data-figure="{}"><script type="application/json" class="lens-plot">{}</script></figure>').format(
        name, script_json(spec)
    )


def _section(anchor: str, title: str, *content: Markup | str) -> Markup:
    return Markup('<section id="{}" class="card"><h2>{}</h2>{}</section>').format(anchor, title, _join(content))


def _note(text: Markup | str) -> Markup:
    return Markup('<p class="note">{}</p>').format(text)


def _level(stats: RunStatistics | None) -> str:
    return f"{stats.confidence:.0%}" if stats is not None else "95%"


# -- overview ------------------------------------------------------------------------------------
def _verdict(page: ReportPage) -> Markup:
    artifact = page.artifact
    verdict = artifact.verdict
    if verdict is None:
        gated = "; ".join(
            f"{key} {'gated (' + ', '.join(s.gate_reasons) + ')' if s.gated else 'not gated'}" for key, s in page.summaries.items()
        )
        return Markup(
            '<p class="verdict unknown">Verdict not recorded in this artifact (written by an older pytest-lens). '
            "Hard gates from the summaries: {}</p>"
        ).format(gated or "none")
    parts = []
    notes = f" [{'; '.join(verdict.notes)}]" if verdict.notes else ""
    if verdict.exit_code == 0:
        parts.append(Markup('<p class="verdict pass">LENS verdict: PASS{}</p>').format(notes))
    else:
        parts.append(Markup('<p class="verdict fail">LENS verdict: FAIL{}</p>').format(notes))
        parts.append(Markup('<ul class="reasons">{}</ul>').format(_join(Markup("<li>{}</li>").format(r) for r in verdict.reasons)))
    gates = _join(
        Markup('<li class="{}"><code>{}</code></li>').format("pass" if line.startswith("pass") else "fail", line) for line in verdict.gates
    )
    parts.append(Markup('<h3>Gates</h3><ul class="gates">{}</ul>').format(gates))
    return _join(parts)


def _described(identity: AgentIdentity) -> str:
    """An agent's or judge's description (its name in runs that recorded none)."""
    return identity.description if "description" in identity.model_fields_set else identity.name


def _identity(page: ReportPage) -> Markup:
    artifact, run = page.artifact, page.artifact.run
    rows: list[tuple[str, Markup | str]] = []
    if run.agent is not None:
        rows.append(("agent", _described(run.agent)))
    rows.append(("judge", _described(run.judge) if run.judge is not None else "none (tier-2/3 metrics absent)"))
    budgets = run.budgets
    if budgets:
        rows.append(
            (
                "budgets",
                "; ".join(
                    f"{b.get('name')} ({b.get('result_token_cap', 0):,} result tokens, "
                    f"{b.get('max_tool_calls')} calls, {b.get('max_turns')} turns)"
                    for b in budgets
                    if isinstance(b, dict)
                ),
            )
        )
    adapters = run.adapters
    if adapters:
        rows.append(
            (
                "adapters",
                _join(
                    (
                        Markup("<code>{}</code> = {}{}").format(
                            a.get("label"), a.get("target"), f" {json.dumps(a['options'])}" if a.get("options") else ""
                        )
                        for a in adapters
                        if isinstance(a, dict)
                    ),
                    "; ",
                ),
            )
        )
    datasets = run.datasets
    if datasets:
        rows.append(
            (
                "data",
                "; ".join(
                    f"{str(d.get('path', '')).rsplit('/', 1)[-1]} ({d.get('suite')}, sha256 {str(d.get('sha256', ''))[:12]})"
                    for d in datasets
                    if isinstance(d, dict)
                ),
            )
        )
    if artifact.commit is not None:
        c = artifact.commit
        text = c.id[:12] + (f" on {c.branch}" if c.branch else "") + (" (uncommitted changes)" if c.dirty else "")
        rows.append(("commit", text))
    if artifact.machine is not None:
        m = artifact.machine
        rows.append(("machine", f"{m.machine_id} ({m.node}, {m.cpu_count} CPUs)"))
    merged = run.merged_from
    if merged is not None:
        rows.append(
            ("merged from", ", ".join(map(str, merged)) + " (summaries, statistics and hard gates recomputed over all their questions)")
        )
    rows.append(("pytest-lens", artifact.pytest_lens_version + (f"; artifact {page.source}" if page.source else "")))
    stats = artifact.statistics
    if "seed" in run.model_fields_set:
        extra = f" ({stats.resamples:,} bootstrap resamples, {stats.confidence:.0%} intervals)" if stats is not None else ""
        rows.append(("seed", f"{run.seed}{extra}"))
    return Markup('<dl class="identity">{}</dl>').format(_join(Markup("<dt>{}</dt><dd>{}</dd>").format(k, v) for k, v in rows))


def _card(page: ReportPage) -> Markup:
    """The comparability card: every field, the data file by file (fields marked * refuse an unlike baseline)."""
    card = page.artifact.card
    rows: list[tuple[str, Markup | str]] = []
    for name in CARD_FIELDS:
        shown = card.value(name)
        if shown is None:
            continue
        if name == "data":
            shown = _join((Markup("<code>{}</code> {}").format(file, sha) for file, sha in card.data.items()), Markup("<br>"))
        rows.append((name + ("*" if name in REFUSING else ""), shown))
    recorded = "" if page.artifact.run.card is not None else " Derived from a run written before cards: what it did not record is absent."
    return Markup('<h2>Comparability card</h2>{}<dl class="identity card-fields">{}</dl>').format(
        _note(
            "What these numbers depend on. lens compare and --lens-baseline refuse to compare this run with one whose card differs "
            "in a field marked *, unless that field is accepted by name (--accept-unlike, --lens-accept-unlike)." + recorded
        ),
        _join(Markup("<dt>{}</dt><dd>{}</dd>").format(k, v) for k, v in rows),
    )


def _estimate_cell(recorded: AdapterStatistics | None, name: str | None, fallback: float | None) -> str:
    if recorded is not None:
        estimate = recorded.composite if name is None else recorded.metrics.get(name)
        if estimate is not None:
            return format_estimate(estimate)
    return _num(fallback)


def _headline(page: ReportPage) -> Markup:
    if not page.keys:
        return Markup()
    stats = page.artifact.statistics
    headers: list[Markup | str] = ["adapter", "n", f"{page.score} [{_level(stats)} CI]" if stats else page.score]
    # The paper's composite beside another headline (labelled "tier-1 only" when no judge measured tiers 2-3).
    composite_label = next(iter(page.summaries.values())).composite_label if page.score != "composite" else None
    if composite_label:
        headers.append(composite_label)
    headers += [Markup('<span title="{}">{}</span>').format(m, _label(m)) for m in page.metrics]
    headers += ["res.tok/q", "calls/q", "faults", "gate"]
    rows = []
    for key, s in page.summaries.items():
        recorded = stats.adapters.get(key) if stats is not None else None
        gate = (
            Markup('<span class="fail">FAIL {}</span>').format("; ".join(s.gate_reasons))
            if s.gated
            else Markup('<span class="pass">pass</span>')
        )
        rows.append(
            [
                Markup('<a href="#questions" data-filter-link="adapter={}">{}</a>').format(s.adapter, key),
                f"{s.n_questions} ({s.missing} missing)" if s.missing else str(s.n_questions),
                _estimate_cell(recorded, None, s.headline),
                *([_num(s.composite)] if composite_label else []),
                *(_estimate_cell(recorded, m, s.metrics.get(m)) for m in page.metrics),
                f"{s.result_tokens_mean:,.0f}",
                f"{s.tool_calls_mean:.1f}",
                str(s.faults),
                gate,
            ]
        )
    numeric = [False, True, True, *([True] if composite_label else []), *([True] * len(page.metrics)), True, True, True, False]
    return Markup("<h2>Headline</h2>{}{}").format(_figure(page, "headline"), _table(headers, rows, numeric=numeric))


def _worst(page: ReportPage) -> Markup:
    if not page.worst:
        return Markup()
    groups = _join(
        Markup('<div class="worst-group"><h3>{}</h3>{}</div>').format(
            key,
            _table(
                ["headline", "outcome", "question", "type"],
                ([_num(i.headline), _badge(i.outcome), _qlink(i), i.result.question_type] for i in items),
                numeric=[True],
            )
            if items
            else _note("Every question scored 1.000."),
        )
        for key, items in page.worst.items()
    )
    return Markup('<h2>Worst questions</h2><div class="worst">{}</div>').format(groups)


def _overview(page: ReportPage) -> Markup:
    artifact = page.artifact
    warnings = _join(Markup('<p class="warning">{}</p>').format(line) for line in artifact.incomplete)
    defects = Markup()
    if artifact.dataset_warnings:
        defects = Markup(
            '<details class="warnings"><summary>{} dataset defect(s) touch this run\'s questions</summary><ul>{}</ul></details>'
        ).format(len(artifact.dataset_warnings), _join(Markup("<li>{}</li>").format(w) for w in artifact.dataset_warnings))
    return Markup('<section id="overview" class="card"><h1>Run of {}</h1>{}{}{}{}{}{}{}</section>').format(
        artifact.created, _verdict(page), warnings, _identity(page), _card(page), _headline(page), _worst(page), defects
    )


# -- breakdowns ------------------------------------------------------------------------------------
def _breakdown(page: ReportPage) -> Markup:
    if "types" not in page.figures and "scopes" not in page.figures:
        return Markup()
    stats = page.artifact.statistics
    table = Markup()
    if stats is not None:
        types = sorted({t for s in page.summaries.values() for t in s.by_type})
        rows = []
        for qtype in types:
            cells: list[Markup | str] = [qtype]
            for key in page.keys:
                found = stats.adapters.get(key)
                estimate = found.by_type.get(qtype) if found is not None else None
                cells.append(Markup('{} <span class="n">n={}</span>').format(format_estimate(estimate), estimate.n) if estimate else "-")
            rows.append(cells)
        table = _table(["type", *page.keys], rows, numeric=[False, *([True] * len(page.keys))])
    figures = Markup('<div class="figs">{}{}</div>').format(_figure(page, "types"), _figure(page, "scopes"))
    note = _note(f"The run's headline ({page.score}) of each group's metric means, as the summary's type table computes it.")
    return _section("breakdown", "By question type and by scope", note, figures, table)


def _stream(page: ReportPage) -> Markup:
    if "stream" not in page.figures:
        return Markup()
    note = _note(
        f"Mean evidence coverage at each checkpoint, over the questions asked there that require evidence (dot size: how many); "
        f"x: {page.stream_axis}."
    )
    return _section("stream", "Through the stream", note, _figure(page, "stream"))


def _budgets(page: ReportPage) -> Markup:
    return _section("budgets", "Across budgets", _figure(page, "budgets")) if "budgets" in page.figures else Markup()


def _test_cells(t: PairedTest) -> list[Markup | str]:
    return [
        str(t.n_pairs),
        _num(t.first),
        _num(t.second),
        format_delta(t.delta),
        format_p(t.p_adjusted),
        f"{t.effect_size:+.2f}",
        changed_counts(t, UNICODE_ARROWS),
    ]


def _pairs(page: ReportPage) -> Markup:
    stats = page.artifact.statistics
    if stats is None or not stats.pairs:
        return Markup()
    alpha = float((page.artifact.run.model_extra or {}).get("alpha", 0.05))
    several = len({p.budget for p in stats.pairs}) > 1
    rows = [
        [p.budget, p.first, p.second, *_test_cells(p.composite), pair_result(p.composite, alpha, p.second, UNICODE_ARROWS)]
        for p in stats.pairs
    ]
    numeric = [False, False, False, True, True, True, True, True, True, False, False]
    table = _table(
        ["budget", "first", "second", "n", "first", "second", "delta [CI]", "p (Holm)", "effect r", "changed", "result"],
        rows,
        numeric=numeric,
    )
    details = _join(
        Markup("<details><summary>{} vs {}{}: every metric</summary>{}</details>").format(
            p.first,
            p.second,
            f" @{p.budget}" if several else "",
            _table(
                ["metric", "n", "first", "second", "delta [CI]", "p (Holm)", "effect r", "changed"],
                ([_label(t.metric), *_test_cells(t)] for t in p.metrics),
                numeric=[False, True, True, True, True, True, True, False],
            ),
        )
        for p in stats.pairs
        if p.metrics
    )
    concordance = _join(
        Markup("<p>Kendall's W across {} scopes ({}, {} adapters): W={:.2f}, Friedman χ²={:.2f}, p={}</p>").format(
            len(c.scopes), c.budget, len(c.adapters), c.w, c.chi_square, format_p(c.p_value)
        )
        for c in stats.concordance
    )
    note = _note(
        f"Paired by question; two-sided {stats.pairs[0].composite.method if stats.pairs else 'paired t-test'} of the mean "
        f"difference, Holm over {len(stats.pairs)} pair(s); "
        f"delta = second − first with its {_level(stats)} CI."
    )
    return _section("pairs", "Paired comparisons", note, _figure(page, "pairs"), table, details, concordance)


def _question_anchor(page: ReportPage, adapter: str, scope_id: str, budget: str, question_id: str) -> Markup:
    anchor = page.anchors.get((adapter, scope_id, budget, question_id))
    text = f"{scope_id} / {question_id}"
    return Markup('<a href="#{}">{}</a>').format(anchor, text) if anchor else Markup("{}").format(text)


def _comparison(page: ReportPage, comparison: BaselineComparison) -> Markup:
    info = comparison.baseline
    origin = "".join(
        part for part in (f"; saved {info.created}" if info.created else "", f"; commit {info.commit[:10]}" if info.commit else "")
    )
    drop = f", max drop {comparison.max_drop:g}" if comparison.max_drop is not None else ""
    intro = Markup(
        "<p>Compared with <strong>{}</strong> ({}{}). One-sided {} of the mean drop, paired by question, Holm-corrected, alpha {}{}.</p>"
    ).format(info.name, info.path, origin, comparison.inference, f"{comparison.alpha:g}", drop)
    warnings = _join(Markup('<p class="warning">{}</p>').format(w) for w in comparison.warnings)
    rows = []
    for e in comparison.adapters:
        test = e.regression
        cells: list[Markup | str] = [e.key, *(_test_cells(test) if test else ["-"] * 7), status_text(e, UNICODE_ARROWS)]
        rows.append(cells)
    table = _table(
        ["adapter", "n", "baseline", "this run", "delta [CI]", "p (Holm)", "effect r", "changed", "result"],
        rows,
        numeric=[False, True, True, True, True, True, True, False, False],
    )
    flips = _join(
        Markup("<p><strong>{}</strong>: questions that changed state: {}</p>").format(
            e.key,
            _join(
                (
                    Markup("{} ({} → {})").format(_question_anchor(page, e.adapter, f.scope_id, e.budget, f.question_id), f.before, f.after)
                    for f in e.flipped
                ),
                ", ",
            ),
        )
        for e in comparison.adapters
        if e.flipped
    )
    return _join([intro, warnings, _figure(page, "baseline"), table, flips])


def _baseline(page: ReportPage) -> Markup:
    comparison = page.artifact.comparison
    if comparison is None and not page.question_deltas:
        return Markup()
    parts = [_comparison(page, comparison)] if comparison is not None else []
    if page.question_deltas:
        changed = [row for row in page.question_deltas if row.delta != 0]
        against = f" against {page.baseline_name}" if page.baseline_name else ""
        parts.append(Markup("<h3>Per-question deltas{} (largest drops first)</h3>").format(against))
        parts.append(
            _note(
                f"{len(changed)} of {len(page.question_deltas)} paired questions changed their {page.score}; "
                "both runs rescored with this run's headline (its weights and gates)."
            )
        )
        parts.append(
            _table(
                ["delta", "baseline", "this run", "outcome", "question", "type"],
                (
                    [
                        Markup('<span class="{}">{:+.3f}</span>').format("drop" if row.delta < 0 else "rise", row.delta),
                        _num(row.baseline),
                        _num(row.current),
                        _badge(row.transcript.outcome),
                        _qlink(row.transcript),
                        row.transcript.result.question_type,
                    ]
                    for row in changed
                ),
                numeric=[True, True, True],
            )
        )
    elif comparison is not None:
        parts.append(Markup("<h3>Largest drops</h3>"))
        parts.append(
            _note(
                Markup(
                    "The artifact keeps each adapter's largest drops; give the baseline "
                    "(<code>lens report RUN --baseline BASE</code>) for every question's delta."
                )
            )
        )
        parts.append(
            _table(
                ["adapter", "delta", "question"],
                (
                    [e.key, f"{d.delta:+.3f}", _question_anchor(page, e.adapter, d.scope_id, e.budget, d.question_id)]
                    for e in comparison.adapters
                    for d in e.largest_drops
                ),
                numeric=[False, True],
            )
        )
    return _section("baseline", "Against the baseline", *parts)


def _generic(section: GenericSection) -> Markup:
    tables = _join(
        Markup("{}{}").format(Markup("<h3>{}</h3>").format(title) if title else Markup(), _table(headers, rows))
        for title, headers, rows in section.tables
    )
    text = Markup('<pre class="raw">{}</pre>').format(section.text) if section.text else Markup()
    return _section(element_id("extra", section.title), section.title.capitalize(), tables, text)


def _suites(page: ReportPage) -> Markup:
    artifact = page.artifact
    if not artifact.suite_summaries:
        return Markup()
    retrieval = QuestionHeadlines.of_run(artifact.run).retrieval_suites
    parts = []
    for suite, by_key in artifact.suite_summaries.items():
        stats = artifact.suite_statistics.get(suite)
        names = list(dict.fromkeys(m for s in by_key.values() for m in s.metrics))
        headed = suite in retrieval
        rows = []
        for key, s in by_key.items():
            recorded = stats.adapters.get(key) if stats is not None else None
            beside = s.composite if headed else composite(s.metrics, RETRIEVAL_SCORE_WEIGHTS, ()).value
            rows.append(
                [
                    Markup('<a href="#questions" data-filter-link="adapter={}">{}</a>').format(s.adapter, key),
                    str(s.n_questions),
                    _estimate_cell(recorded, None, s.headline),
                    _num(beside),
                    *(_num(s.metrics.get(m)) for m in names),
                    str(s.faults),
                ]
            )
        heading = ["retrieval score", "suite score"] if headed else ["suite score", "retrieval score"]
        headers = ["adapter", "n", f"{heading[0]} (headline)", heading[1], *(_label(m) for m in names), "faults"]
        parts.append(Markup("<h3>{}</h3>{}").format(suite, _table(headers, rows, numeric=[False, *([True] * (len(names) + 4))])))
    note = _note(
        "Each suite's headline: the retrieval score under the offline agent (the suite's own score beside it), the suite's "
        "own score with an LLM agent or judge; its CI, paired tests and worst questions are of the headline."
    )
    return _section("suites", "Sibling suites", note, *parts)


def _ceilings(page: ReportPage) -> Markup:
    """Each ceiling (LENS's, then each suite's): adapters between the floor and the oracle, then the suspects."""
    artifact = page.artifact
    found = [("LENS", artifact.ceiling)] if artifact.ceiling is not None else []
    found += [(f"suite {name}", ceiling) for name, ceiling in artifact.suite_ceilings.items()]
    if not found:
        return Markup()
    parts = []
    for title, ceiling in found:
        floor = ", ".join(f"{b} {v:.3f}" for b, v in ceiling.floor_scores.items())
        top = ", ".join(f"{b} {v:.3f}" for b, v in ceiling.oracle_scores.items())
        rows = [
            [r.adapter, str(r.n), _num(r.score), format_estimate(r.share) if r.share is not None else "-", str(r.memory_losses)]
            for r in ceiling.rows
        ]
        suspects = [[s.scope_id, s.question_id, s.question_type, s.budget, _num(s.score)] for s in ceiling.suspects]
        parts.append(
            Markup("<h3>{} ({}): floor {} {}, ceiling {} {}</h3>{}{}").format(
                title,
                ceiling.metric,
                ceiling.floor or "none (0)",
                floor,
                ceiling.oracle,
                top,
                _table(["adapter", "n", "score", "share of range [CI]", "memory losses"], rows, numeric=[False, True, True, True, True]),
                Markup("<h4>Agent or answer-key suspects ({} of {})</h4>{}").format(
                    len(ceiling.suspects),
                    sum(ceiling.oracle_questions.values()),
                    _table(["scope", "question", "type", "budget", "oracle"], suspects, numeric=[False, False, False, False, True])
                    if suspects
                    else _note("None: the oracle passes every question."),
                ),
            )
        )
    note = _note(
        "The oracle control hands the agent each question's required evidence first, through the same budget and agent: its "
        "score is the ceiling. Share = (adapter - floor) / (oracle - floor) on the questions all three scored, with its 95% "
        "Student-t interval (jackknife standard error). Memory losses: questions the oracle passes and the adapter fails "
        f"(headline below {found[0][1].fails_below:g}). "
        "Suspects: questions even the oracle fails, the agent's or the answer key's, no memory's."
    )
    return _section("ceiling", "Floor and ceiling", note, *parts)


# -- questions ---------------------------------------------------------------------------------------
def _questions(page: ReportPage) -> Markup:
    budgets = "budget" in page.filters
    filters = _join(
        Markup('<label>{0} <select data-filter="{0}"><option value="">all</option>{1}</select></label>').format(
            name, _join(Markup('<option value="{0}">{0}</option>').format(v) for v in values)
        )
        for name, values in page.filters.items()
    )
    total = len(page.transcripts)
    head = ['<th data-sort="text">question</th>', '<th data-sort="text">adapter</th>']
    if budgets:
        head.append('<th data-sort="text">budget</th>')
    head += ['<th data-sort="text">scope</th>', '<th data-sort="num">cp</th>', '<th data-sort="text">type</th>']
    head += ['<th data-sort="text">outcome</th>', '<th data-sort="num" title="the question\'s headline score">headline</th>']
    metric_heads = _join(Markup('<th data-sort="num" title="{}">{}</th>').format(m, _label(m)) for m in page.metrics)
    # One row per question: the page's largest table, so its rows are escaped with markupsafe's C ``escape`` and put
    # together with f-strings (Markup.format's Python-level formatter was most of the page's writing time).
    rows = []
    for item in page.transcripts:
        r = item.result
        anchor, adapter, budget, scope, qtype = (escape(v) for v in (item.anchor, r.adapter, r.budget, r.scope_id, r.question_type))
        text = escape(f"{item.test_id} {r.prompt} {r.answer[:300]}")
        budget_cell = f"<td>{budget}</td>" if budgets else ""
        composite = _num(item.headline) if r.skipped is None else "-"
        metric_cells = "".join(f'<td class="num">{_num(r.metrics.get(m))}</td>' for m in page.metrics)
        rows.append(
            Markup(
                f'<tr id="row-{anchor}" data-adapter="{adapter}" data-budget="{budget}" data-scope="{scope}" data-type="{qtype}" '
                f'data-outcome="{escape(item.outcome)}" data-text="{text}"><td><a class="qlink" href="#{anchor}" '
                f'title="{escape(item.test_id)}">{escape(r.question_id)}</a></td><td>{adapter}</td>{budget_cell}<td>{scope}</td>'
                f'<td class="num">{r.checkpoint}</td><td>{qtype}</td><td>{_badge(item.outcome)}</td><td class="num">{composite}</td>'
                f'{metric_cells}<td class="num">{len(r.tool_calls)}</td><td class="num">{r.result_tokens}</td></tr>'
            )
        )
    return Markup(
        '<section id="questions" class="card"><h2>Questions</h2><div class="filters" role="search">{filters}'
        '<label>text <input type="search" data-filter="text" placeholder="id, prompt or answer"></label>'
        '<span class="count" id="shown-count">{total} of {total} shown</span></div>{note}'
        '<div class="table-pane"><table class="data sortable" id="question-table"><thead><tr>{head}{metrics}'
        '<th data-sort="num">calls</th><th data-sort="num">res.tok</th>'
        "</tr></thead><tbody>{rows}</tbody></table></div></section>"
    ).format(
        filters=filters,
        total=total,
        note=_note("Click a question to read its transcript; click a column heading to sort."),
        head=Markup("".join(head)),
        metrics=metric_heads,
        rows=_join(rows),
    )


def _nav(page: ReportPage) -> Markup:
    links: list[tuple[str, str]] = [("overview", "Overview")]
    checks: list[tuple[str, str, Callable[[], bool]]] = [
        ("breakdown", "Types & scopes", lambda: "types" in page.figures or "scopes" in page.figures),
        ("stream", "Through the stream", lambda: "stream" in page.figures),
        ("budgets", "Budgets", lambda: "budgets" in page.figures),
        ("pairs", "Comparisons", lambda: bool(page.artifact.statistics and page.artifact.statistics.pairs)),
        ("baseline", "Baseline", lambda: page.artifact.comparison is not None or bool(page.question_deltas)),
    ]
    links += [(anchor, title) for anchor, title, present in checks if present()]
    links += [(element_id("extra", s.title), s.title.capitalize()) for s in page.generic]
    if page.artifact.ceiling is not None or page.artifact.suite_ceilings:
        links.append(("ceiling", "Floor & ceiling"))
    if page.artifact.suite_summaries:
        links.append(("suites", "Suites"))
    links.append(("questions", f"Questions ({len(page.transcripts)})"))
    return _join(Markup('<a href="#{}">{}</a>').format(anchor, title) for anchor, title in links)


def _episodes(evidence: Mapping[str, ScopeEvidence]) -> Markup:
    return script_json({scope: {ref: [e.timestamp, e.text] for ref, e in found.texts.items()} for scope, found in evidence.items()})


def render_page(page: ReportPage, *, css: str, script: str, libraries: Sequence[str] = ()) -> str:
    """The whole document; ``css``, the ``libraries`` (in order) and then ``script`` are inlined."""
    artifact = page.artifact
    title = "pytest-lens report" + (f" - {page.source}" if page.source else "")
    body = _join(
        [
            _overview(page),
            _breakdown(page),
            _stream(page),
            _budgets(page),
            _pairs(page),
            _baseline(page),
            *(_generic(section) for section in page.generic),
            _ceilings(page),
            _suites(page),
            _questions(page),
        ]
    )
    return str(
        Markup(
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<title>{title}</title><style>{css}</style></head><body>"
            '<header class="top"><div class="brand">pytest-lens report</div><nav>{nav}</nav></header><main>{body}'
            '<section id="transcript" class="card" hidden aria-live="polite"></section>'
            '<noscript><p class="card">Figures and transcripts are drawn with JavaScript: the tables hold every number, and '
            "<code>lens show</code> prints transcripts in a terminal.</p></noscript>"
            "</main>"
            '<aside id="episode-panel" hidden><div class="panel-head"><span id="episode-title"></span>'
            '<button type="button" id="episode-close" aria-label="close">×</button></div>'
            '<pre id="episode-body" class="episode-text"></pre></aside>'
            "<footer>Generated by pytest-lens {version}. Self-contained: viewing this page uses no network.</footer>"
            '<script type="application/json" id="lens-transcripts">{transcripts}</script>'
            '<script type="application/json" id="lens-episodes">{episodes}</script>'
            "{libraries}<script>{script}</script></body></html>\n"
        ).format(
            title=title,
            css=Markup(css),
            nav=_nav(page),
            body=body,
            version=artifact.pytest_lens_version,
            transcripts=script_json(page.transcript_views),
            episodes=_episodes(artifact.evidence),
            libraries=_join(Markup("<script>{}</script>").format(Markup(library)) for library in libraries),
            script=Markup(script),
        )
    )


def asset(*path: str) -> str:
    """The text of a file under the package's ``html/assets``."""
    return resources.files("pytest_lens.reports.html").joinpath("assets", *path).read_text(encoding="utf-8")


#: The plotting libraries the page's figures are drawn with, in load order (Vega-Lite needs Vega).
PLOT_LIBRARIES = ("vega.min.js", "vega-lite.min.js")


def render_report(artifact: RunArtifact, *, baseline: RunArtifact | None = None, baseline_name: str | None = None, source: str = "") -> str:
    """The report page as one HTML document."""
    page = build_page(artifact, baseline=baseline, baseline_name=baseline_name, source=source)
    libraries = [asset("vendor", name) for name in PLOT_LIBRARIES] if page.figures else []
    return render_page(page, css=asset("report.css"), script=asset("report.js"), libraries=libraries)
