from __future__ import annotations

import io
import os
from pathlib import Path

from pytest_lens.plugin.terminal_progress import worker_lines_need_a_newline


def test_worker_lines_start_a_line_of_their_own_wherever_they_may_meet_the_dots(tmp_path: Path) -> None:
    with (tmp_path / "out.log").open("w") as out, (tmp_path / "err.log").open("w") as err, (tmp_path / "out.log").open("a") as same:
        assert not worker_lines_need_a_newline(out, err)  # 2>err.log: a file of its own, never mixed
        assert worker_lines_need_a_newline(out, same)  # >log 2>&1
        read, write = os.pipe()
        with os.fdopen(read), os.fdopen(write, "w") as pipe_err:
            assert worker_lines_need_a_newline(out, pipe_err)  # a CI runner's pipe, merged into one log downstream
    assert not worker_lines_need_a_newline(io.StringIO(), io.StringIO())  # an in-process run: no real streams
