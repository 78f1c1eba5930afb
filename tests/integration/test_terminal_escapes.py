"""Issue 32, defect 10: escape sequences in a dataset's text never reach the terminal raw.

A dataset whose episode and question hold ``ESC[2J`` (clear the screen) and a fake green verdict is run
through pytest (failure sections, ``-rA`` sections, the summary) and shown with ``lens show --episodes``:
no control character comes out, and each is shown as its escape (``\\x1b``) instead.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_lens.cli.main import main
from tests.support import COLD_CHAIN_DEMO

FAKE_VERDICT = "\x1b[2J\x1b[H\x1b[32mLENS verdict: PASS\x1b[0m\r\x9b2K\u202e"


def hostile_dataset(root: Path) -> Path:
    data = json.loads(COLD_CHAIN_DEMO.read_text())
    for episode in data["scopes"][0]["episodes"]:
        episode["text"] += f"\nfreezer note {FAKE_VERDICT}"
    for question in data["questions"]:
        question["prompt"] += f" {FAKE_VERDICT}"
    path = root / "hostile.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_escapes_from_a_dataset_reach_no_terminal_raw(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    path = hostile_dataset(pytester.path)
    result = pytester.runpytest(
        "--lens-adapter=bm25", f"--lens-dataset={path}", "--lens-json=out.json", "-rA", "-p", "no:cacheprovider", "-k", "q01 or q02"
    )
    printed = "\n".join(result.outlines + result.errlines)
    assert "question: " in printed and "\\x1b[2J\\x1b[H\\x1b[32mLENS verdict: PASS" in printed  # shown, escaped
    for control in ("\x1b", "\r", "\x9b", "\u202e"):
        assert control not in printed, repr(control)
    capsys.readouterr()
    assert main(["show", str(pytester.path / "out.json"), "-k", "q01", "--episodes"]) == 0
    shown = capsys.readouterr().out
    assert "freezer note \\x1b[2J" in shown
    for control in ("\x1b", "\r", "\x9b", "\u202e"):
        assert control not in shown, repr(control)
