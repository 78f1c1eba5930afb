"""What each shard owed (``pytest_lens.runs.owed``): every refusal, over plain records and keys."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from pytest_lens.runs.owed import ItemKey, OwedError, ShardAccount, check_accounts

#: Two groups of three questions each.
RUN: dict[str, list[ItemKey]] = {f"a:s{scope}:8k": [("a", f"s{scope}", "8k", f"q{number}", 0) for number in range(3)] for scope in (1, 2)}
SPLIT = {"a:s1:8k": 1, "a:s2:8k": 2}
PARTITION = {"digest": "d", "durations": None}


def account(index: int, results: Sequence[ItemKey] | None = None, **changes: Any) -> ShardAccount:
    unit = f"a:s{index}:8k"
    fields: dict[str, Any] = {"units": frozenset({unit}), "results": RUN[unit] if results is None else results, "partition": PARTITION}
    fields.update(changes)
    return ShardAccount(f"shard{index}.json", index, **fields)


def refused(*accounts: ShardAccount, split: dict[str, int] | None = SPLIT) -> str:
    with pytest.raises(OwedError) as caught:
        check_accounts(accounts, RUN, split)
    return str(caught.value)


def test_shards_that_account_for_every_question_pass() -> None:
    check_accounts([account(1), account(2)], RUN, SPLIT)
    # A question missing with a record of why (a crashed worker) or left out by a selection all shards share.
    check_accounts([account(1, RUN["a:s1:8k"][:2], missing=[RUN["a:s1:8k"][2]]), account(2)], RUN, SPLIT)
    narrowed = {"selection": ("-k", "q0")}
    check_accounts(
        [
            account(1, RUN["a:s1:8k"][:1], not_selected=RUN["a:s1:8k"][1:], **narrowed),
            account(2, RUN["a:s2:8k"][:1], not_selected=RUN["a:s2:8k"][1:], **narrowed),
        ],
        RUN,
        SPLIT,
    )


def test_a_dropped_result_is_named_by_group_and_question() -> None:
    message = refused(account(1, RUN["a:s1:8k"][:1]), account(2))
    assert message == (
        "shard1.json (shard 1) lacks 2 questions it owed, with no result and no record of why: a:s1:8k (2: q1, q2); "
        "its artifact is incomplete or was edited: rerun the shard"
    )


def test_a_result_twice_or_in_another_shard_is_refused() -> None:
    assert "shard2.json has results already given (shard1.json): 1 questions twice: a:s1:8k (1: q0)" in refused(
        account(1), account(2, [*RUN["a:s2:8k"], RUN["a:s1:8k"][0]])
    )
    assert "shard2.json (shard 2) has 1 results of stream groups it does not own: a:s1:8k (1: q0)" in refused(
        account(1, RUN["a:s1:8k"][1:]), account(2, [*RUN["a:s2:8k"], RUN["a:s1:8k"][0]])
    )


def test_another_selection_is_refused_and_an_unexplained_one_too() -> None:
    message = refused(account(1), account(2, RUN["a:s2:8k"][:1], not_selected=RUN["a:s2:8k"][1:], selection=("-k", "q0")))
    assert message.startswith("shard2.json ran with another selection (-k q0) than shard1.json (none): 2 questions")
    assert "a:s2:8k (2: q1, q2)" in message
    assert "records 2 questions as not selected but no selection" in refused(
        account(1), account(2, RUN["a:s2:8k"][:1], not_selected=RUN["a:s2:8k"][1:])
    )


def test_another_partition_a_wrong_share_and_an_orphan_group_are_refused() -> None:
    durations = {"digest": "e", "durations": {"path": "run.json", "sha256": "ab" * 32}}
    message = refused(account(1), account(2, partition=durations))
    assert message.startswith("the shards were split differently: shard1.json by estimated cost (no --lens-shard-durations), ")
    assert "shard2.json by the durations of run.json (sha256 abababababab)" in message
    assert "shard1.json (shard 1) recorded the stream groups a:s2:8k beyond its share, and lacks a:s1:8k" in refused(
        account(1, RUN["a:s2:8k"], units=frozenset({"a:s2:8k"})), account(2, [], units=frozenset())
    )
    # Split by durations the fan-in does not have: their common split must still cover every group.
    assert "no shard ran 1 stream group(s) of the run: a:s2:8k (3: q0, q1, q2)" in refused(
        account(1), account(2, [], units=frozenset()), split=None
    )
    assert "stream group a:s1:8k is in both shard1.json and shard2.json" in refused(
        account(1), account(2, units=frozenset({"a:s1:8k", "a:s2:8k"})), split=None
    )


def test_a_missing_question_that_was_answered_or_is_not_owed_is_refused() -> None:
    assert "records question a/s1/8k/q0/0 twice, or as both answered and not run" in refused(
        account(1, missing=[RUN["a:s1:8k"][0]]), account(2)
    )
    assert "shard1.json: question a/s2/8k/q0/0 is not one of its stream groups' here" in refused(
        account(1, missing=[RUN["a:s2:8k"][0]]), account(2)
    )
