"""``source add --jsonl`` reading (:func:`powercontext.entrypoints.cli.sources.read_jsonl`):
duplicate keys are refused naming the key (the first one seen twice), and the check is linear in
the number of keys (it counted each key in the list of keys: one line with 70,000
metadata keys took 56 s, 10,000 took 1.7 s). The figures are in
``python -m bench source-add``; this test only compares the growth of two sizes of the
same input, never a wall-clock target."""

from __future__ import annotations

import json
import time

import pytest

from powercontext.core.errors import InvalidInputError
from powercontext.entrypoints.cli.sources import read_jsonl


def _line(keys: int) -> str:
    return json.dumps({"kind": "note", "content": "release notes",
                       "metadata": {f"key{i}": f"value {i}" for i in range(keys)}})


@pytest.mark.parametrize("where", ["top", "metadata"])
def test_a_duplicate_key_is_refused_naming_it(where):
    if where == "top":
        line = '{"kind": "a", "content": "x", "kind": "b"}'
        repeated = "kind"
    else:
        keys = ", ".join(f'"k{i}": "v"' for i in range(50))
        line = '{"kind": "a", "content": "x", "metadata": {' + keys + ', "k7": "w"}}'
        repeated = "k7"
    with pytest.raises(InvalidInputError, match=f"duplicate key '{repeated}'") as got:
        read_jsonl(line, "in.jsonl")
    assert got.value.field == "in.jsonl:1"


def test_the_duplicate_key_check_grows_linearly_with_the_keys():
    """20,000 keys against 2,000: a linear reading takes about 10 times as long, the
    quadratic check took about 100 times (the best of two runs of each)."""
    def cpu(keys: int) -> float:
        line = _line(keys)
        best = float("inf")
        for _ in range(2):
            start = time.process_time()
            ((_, source),) = read_jsonl(line, "in.jsonl")
            best = min(best, time.process_time() - start)
            assert len(source.metadata) == keys
        return max(best, 1e-4)

    small, large = cpu(2_000), cpu(20_000)
    assert large / small < 40, (small, large)
