"""The run artifact: building the ``--lens-json`` document, writing it with its rows, and saving the run (``--lens-save``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pytest_lens import __version__
from pytest_lens.records.results import ResultRows, RunArtifact
from pytest_lens.runs.analysis import RunAnalysis
from pytest_lens.runs.evidence import collect_evidence
from pytest_lens.runs.storage import SavedRunError, commit_info, machine_info, write_run

__all__ = ["INTERRUPTED", "PENDING", "build_artifact", "save_run", "write_artifact"]

#: Why an artifact lacks statistics, comparison and verdict. numpy (OpenBLAS) is first imported when they are computed,
#: and a process whose memory an adapter exhausted dies there, without an exception: so the artifact is written first
#: without them, then again whole. This one stays only when the run died in between.
PENDING = (
    "written before the statistics, the baseline comparison and the verdict; the run ended before they were computed "
    "(e.g. out of memory importing numpy): every result and summary here is complete"
)


#: Why a run document has no count of its rows: it is the one written when the run started, and the run never finished
#: (killed, or its machine lost). Its rows file holds every result recorded until then.
INTERRUPTED = (
    "written when the run started; the run did not finish (it was killed): the rows file holds every result it "
    "recorded, and the summaries, statistics and verdict here are not the run's"
)


def build_artifact(analysis: RunAnalysis, results: ResultRows, *, statistics: bool = True) -> RunArtifact:
    """The ``--lens-json`` document of ``analysis``'s results, and ``results``: its rows, whole.

    Without ``statistics``: no statistics, comparison or verdict (nothing imports numpy; see :data:`PENDING`).
    """
    measured: dict[str, Any] = (
        {  # computing these imports numpy (and scipy for paired tests)
            "statistics": analysis.statistics if analysis.lens_results else None,
            "comparison": analysis.comparison,
            "suite_statistics": analysis.suite_statistics,
            "suite_comparisons": analysis.suite_comparisons,
            "verdict": analysis.recorded_verdict,
            "sensitivity": analysis.sensitivity,
            "ceiling": analysis.ceiling,
            "suite_ceilings": analysis.suite_ceilings,
            "repetitions": analysis.repetition_variance if analysis.setup.settings.repeat > 1 else [],
        }
        if statistics
        else {"pending": PENDING}
    )
    return RunArtifact(
        pytest_lens_version=__version__,
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        run=analysis.identity,
        results=results,
        summary=analysis.summaries,
        incomplete=analysis.incomplete,
        dataset_warnings=analysis.warnings,
        suite_summaries=analysis.suite_summaries,
        machine=machine_info(),
        commit=commit_info(analysis.setup.settings.rootdir),
        evidence=collect_evidence(analysis.ledger.results.values(), analysis.setup.scopes),
        judge_agreement=analysis.judge_agreement,
        **measured,
    )


def write_artifact(path: Path, artifact: RunArtifact) -> None:
    """Write ``artifact``'s rows beside ``path`` and its document at ``path``, each whole or not at all."""
    write_run(path, artifact)


def save_run(analysis: RunAnalysis, artifact: Callable[[], RunArtifact]) -> Path | None:
    """Save the run's ``artifact()`` under ``--lens-save``'s name; the path, or ``None`` when not asked to or nothing ran.

    An incomplete run (interrupted, stopped by ``-x``/``--maxfail``, a crashed worker) is not saved: saved under
    the name, it would *be* that baseline from then on, and later runs would be compared on its few questions.
    """
    setup, ledger = analysis.setup, analysis.ledger
    name = setup.settings.save_name
    if not name or not ledger.results:
        return None
    missing = len(ledger.missing())
    if missing:
        raise SavedRunError(
            f"not saved as {name!r}: the run is incomplete ({missing} of {len(ledger.expected)} selected questions have no "
            f"result), and a partial run would become baseline {name!r}; rerun it to the end (the --lens-json artifact, "
            "if asked for, has what did run)"
        )
    return setup.run_store().save(artifact(), name)
