from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from pytest_lens.llm.cache import LLMCacheError, LLMCacheMiss, LLMCacheWarning, RequestCache, request_key

REQUEST = {"base_url": "http://127.0.0.1:1/v1", "model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0, "seed": 42}
RESPONSE = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop"}]}


def test_a_recorded_response_is_returned_for_the_same_request(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "c.sqlite", "record")
    key = request_key(REQUEST)
    assert cache.get(key, REQUEST, "test") is None
    cache.put(key, REQUEST, RESPONSE, purpose="test")
    assert cache.get(key, REQUEST, "test") == RESPONSE
    assert len(cache) == 1


@pytest.mark.parametrize(
    "change",
    [
        {"base_url": "http://127.0.0.1:2/v1"},
        {"model": "other"},
        {"messages": [{"role": "user", "content": "hi!"}]},
        {"tools": [{"type": "function", "function": {"name": "t", "parameters": {}}}]},
        {"temperature": 0.5},
        {"seed": 43},
        {"tool_choice": "none"},
        {"max_tokens": 10},
    ],
)
def test_every_part_of_the_request_is_in_the_key(change: dict[str, object]) -> None:
    assert request_key({**REQUEST, **change}) != request_key(REQUEST)


def test_key_ignores_dict_order() -> None:
    assert request_key(dict(reversed(list(REQUEST.items())))) == request_key(REQUEST)


def test_replay_miss_names_the_request(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    RequestCache(path, "record").put(request_key(REQUEST), REQUEST, RESPONSE, purpose="test")
    replay = RequestCache(path, "replay")
    other = {**REQUEST, "model": "other"}
    with pytest.raises(LLMCacheMiss, match=r"the judge request .*cannot be replayed: it is not in the cache.*--lens-llm-cache-mode=record"):
        replay.get(request_key(other), other, "the judge request")
    assert replay.get(request_key(REQUEST), REQUEST, "x") == RESPONSE


def test_replay_without_a_cache_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LLMCacheError, match=r"no LLM cache at .*record one first"):
        RequestCache(tmp_path / "missing.sqlite", "replay").check()


def test_a_file_that_is_not_sqlite_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not a database at all, just text" * 100)
    with pytest.raises(LLMCacheError, match=r"not a usable SQLite database.*delete it"):
        RequestCache(path, "record").check()


def test_off_mode_never_touches_the_disk(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "c.sqlite", "off")
    key = request_key(REQUEST)
    cache.put(key, REQUEST, RESPONSE, purpose="test")
    assert cache.get(key, REQUEST, "x") is None
    assert not (tmp_path / "c.sqlite").exists()


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("response", '{"choices": [], "tampered": true}', "checksum mismatch"),
        ("checksum", "0" * 64, "checksum mismatch"),
        ("request", "{}", "checksum mismatch"),
    ],
)
def test_corrupted_entries_are_ignored_with_a_warning_and_replaced(tmp_path: Path, column: str, value: str, problem: str) -> None:
    path = tmp_path / "c.sqlite"
    cache = RequestCache(path, "record")
    key = request_key(REQUEST)
    cache.put(key, REQUEST, RESPONSE, purpose="test")
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE llm_responses SET {column} = ?", [value])
    with pytest.warns(LLMCacheWarning, match=problem):
        assert cache.get(key, REQUEST, "x") is None
    assert cache.corrupted == 1
    with pytest.warns(LLMCacheWarning), pytest.raises(LLMCacheMiss, match="its cached entry is corrupted"):
        RequestCache(path, "replay").get(key, REQUEST, "the agent request")
    cache.put(key, REQUEST, RESPONSE, purpose="test")  # record mode heals the entry
    assert cache.get(key, REQUEST, "x") == RESPONSE


def test_an_entry_stored_under_the_wrong_key_is_detected(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "c.sqlite", "record")
    wrong = "f" * 64
    cache.put(wrong, REQUEST, RESPONSE, purpose="test")  # checksum is consistent, but the key is not the request's
    with pytest.warns(LLMCacheWarning, match="wrong key"):
        assert cache.get(wrong, REQUEST, "x") is None


def test_the_database_uses_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    cache = RequestCache(tmp_path / "c.sqlite", "record")
    cache.check()
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert cache._db.execute("PRAGMA busy_timeout").fetchone()[0] >= 10_000


def _writer(path: str, worker: int, count: int) -> None:
    cache = RequestCache(Path(path), "record")
    for index in range(count):
        # Half the keys are shared by every worker: concurrent writers of one key must be harmless.
        n = index if index % 2 else worker * 1000 + index
        request = {**REQUEST, "messages": [{"role": "user", "content": f"question {n}"}]}
        response = {"choices": [{"index": 0, "message": {"role": "assistant", "content": f"answer {n}"}}]}
        cache.put(request_key(request), request, response, purpose=f"worker{worker}")
        assert cache.get(request_key(request), request, "check") == response
    cache.close()


def test_several_processes_can_record_into_one_cache_at_once(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(path), worker, 60)) for worker in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
    assert [process.exitcode for process in workers] == [0, 0, 0, 0]
    cache = RequestCache(path, "replay")
    assert len(cache) == 4 * 30 + 30  # 30 private keys per worker, 30 shared
    for n in [1, 3, 59, 0, 1002, 3058]:
        request = {**REQUEST, "messages": [{"role": "user", "content": f"question {n}"}]}
        assert cache.get(request_key(request), request, "x") == {
            "choices": [{"index": 0, "message": {"role": "assistant", "content": f"answer {n}"}}]
        }
