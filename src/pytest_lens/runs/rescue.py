"""The watcher process of a run, and what it writes before it kills a run whose adapter call holds the GIL.

The run's process (:meth:`~pytest_lens.runs.watch.RunRescue.start`) leaves the watcher its settings and a journal of the selected questions
and every result recorded; the watcher (``python -m pytest_lens.runs.rescue PID DIR``) watches it
(:func:`~pytest_lens.execution.watchdog.watch`) and, should a timed call hold the GIL past its timeout, opens the
same run from the settings, records the journal's results and the stuck question as an ``abandoned`` fault, and
finishes it as the run would have (artifact, HTML report, summary; never a saved run: it is incomplete) before the
run's process is killed. Nothing heavy is imported until then.
"""

from __future__ import annotations

import json
import pickle
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_lens.runs.watch import JOURNAL, SETTINGS

if TYPE_CHECKING:
    from pytest_lens.records.cases import LensCase
    from pytest_lens.records.results import QuestionResult
    from pytest_lens.records.settings import LensSettings

__all__ = ["main", "rescue_run", "stuck_message"]


def stuck_message(call: dict[str, Any], silent_s: float) -> str:
    """What happened, for the fault and the run's problems."""
    return (
        f"adapter {call['adapter']!r} {call['method']}() held Python's interpreter lock: the run's process could not run "
        f"for {silent_s:.0f} s, past --lens-call-timeout and its grace, so no thread could give up on the call; "
        "the run was ended (killed) once what it had was written"
    )


def rescue_run(directory: Path, call: dict[str, Any], silent_s: float) -> int:
    """Finish the stuck run from ``directory``'s settings and journal: artifact, HTML report, summary. Its exit code."""
    from pytest_lens.answering.engine import answer_case, score_case
    from pytest_lens.execution.bridge import RefAliases
    from pytest_lens.records.results import AdapterFault, QuestionResult
    from pytest_lens.runs.session import LensSession

    with (directory / SETTINGS).open("rb") as file:
        settings: LensSettings = pickle.load(file)
    session = LensSession.open(replace(settings, save_name=None))  # incomplete: never saved as a baseline
    cases = {case.item_key: case for case in session.cases}
    results: list[QuestionResult] = []
    expected: list[LensCase] = []
    for line in (directory / JOURNAL).read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if "expect" in entry:
            expected = [cases[key] for raw in entry["expect"] if (key := _key(raw)) in cases]
        elif "result" in entry:
            results.append(QuestionResult.model_validate(entry["result"]))
    session.expect(expected)
    session.plan(expected)
    for result in results:
        session.record(result)
    message = stuck_message(call, silent_s)
    question = call.get("question")
    case = cases.get(_key(question)) if question else None
    if case is not None:
        fault = AdapterFault(adapter=call["adapter"], method=call["method"], kind="abandoned", message=message)
        setup = session.setup
        answered = answer_case(case, None, [fault], setup.agent, RefAliases(case.scope.scope_id, [], enabled=False))
        session.record(score_case(answered, setup.scoring_for(case), {}))
    session.add_problems([message])
    outcome = session.finish(encoding=getattr(sys.stdout, "encoding", None))
    print("=" * 20 + " LENS summary (written by the watchdog) " + "=" * 20)
    for shown in outcome.lines:
        print(shown.text)
    sys.stdout.flush()
    return 1


def _key(raw: Any) -> tuple[str, str, str, str, int]:
    adapter, scope, budget, question, repetition = raw
    return (str(adapter), str(scope), str(budget), str(question), int(repetition))


def main(argv: list[str]) -> int:
    """``python -m pytest_lens.runs.rescue PID DIR rescue|kill``: watch the run's process until it closes the pipe."""
    from pytest_lens.execution.watchdog import watch

    pid, directory, mode = int(argv[0]), Path(argv[1]), argv[2]

    def on_stuck(call: dict[str, Any], silent_s: float) -> None:
        print(f"\npytest-lens: {stuck_message(call, silent_s)}", file=sys.stderr, flush=True)
        if mode == "rescue":
            rescue_run(directory, call, silent_s)

    try:
        return watch(pid, on_stuck)
    finally:
        if mode == "rescue":
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
