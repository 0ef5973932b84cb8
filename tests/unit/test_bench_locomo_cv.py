"""The LoCoMo cross-validation (bench/locomo_cv.py) and the on-disk vector cache
(bench/vector_cache.py): fold selection never looks at the held-out conversation, the
simulated channel fusion equals the library's own search, cached vectors are the
model's bit for bit. No timing asserts."""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import __main__ as bench_main  # noqa: E402
from bench import locomo, locomo_cv  # noqa: E402
from bench.vector_cache import DiskCachedModel  # noqa: E402
from powercontext.core import rrf, search_admission  # noqa: E402
from powercontext.core.models import EmbeddingProfile, EmbeddingResult  # noqa: E402
from powercontext.core.rrf import RankKey  # noqa: E402
from tests.unit.test_bench_smoke import SAMPLE  # noqa: E402


class CountingModel:
    profile = EmbeddingProfile("p", "m", 3)

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    async def embed(self, texts: tuple[str, ...]) -> EmbeddingResult:
        self.calls.append(texts)
        return EmbeddingResult(tuple((len(t) / 7.0, 1 / 3, -0.1) for t in texts))


def test_cached_vectors_are_the_models_and_are_read_back_from_disk(tmp_path: Path) -> None:
    inner = CountingModel()
    first = DiskCachedModel(inner, tmp_path)
    got = asyncio.run(first.embed(("a", "bb", "a")))
    assert got.vectors == ((1 / 7.0, 1 / 3, -0.1), (2 / 7.0, 1 / 3, -0.1), (1 / 7.0, 1 / 3, -0.1))
    assert inner.calls == [("a", "bb")] and first.embedded == 2
    first.close()
    again = DiskCachedModel(CountingModel(), tmp_path)
    assert asyncio.run(again.embed(("bb",))).vectors == ((2 / 7.0, 1 / 3, -0.1),)
    assert again.embedded == 0  # read from disk, not embedded
    again.close()
    other = CountingModel()
    other.profile = EmbeddingProfile("q", "m", 3)  # another profile: another key
    third = DiskCachedModel(other, tmp_path)
    asyncio.run(third.embed(("bb",)))
    assert third.embedded == 1
    third.close()


def _conv(sample_id: str, n: int) -> locomo.Conversation:
    return locomo.Conversation(sample_id, [], [locomo.Question("q", 4, frozenset({"D1:1"}))] * n)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1), min_size=2, max_size=2), min_size=3, max_size=3))
def test_a_fold_chooses_its_setting_without_the_held_out_conversation(
    scores: list[list[float]],
) -> None:
    """Changing the held-out conversation's figures never changes the fold's choice."""
    grid = [locomo_cv.Setting("date", (2, 0.25), 0.35), locomo_cv.Setting("date", (2, 0.25), 0.5)]
    convs = [_conv(f"c{i}", 2) for i in range(3)]

    def measured(per_conv: list[list[float]]) -> dict:
        return {
            s: {m: [[(4, [per_conv[c][j]] * 3)] * 2 for c in range(3)] for m in locomo.MODES}
            for j, s in enumerate(grid)
        }

    base = locomo_cv.folds(convs, measured(scores))
    for i in range(3):
        changed = copy.deepcopy(scores)
        changed[i] = [1.0 - x for x in changed[i]]
        assert locomo_cv.folds(convs, measured(changed))["folds"][i]["chosen"] == (
            base["folds"][i]["chosen"])


def test_folds_mean_over_folds_and_pooled() -> None:
    grid = [locomo_cv.Setting("speaker", (2, 0.25), 0.4)]
    convs = [_conv("a", 1), _conv("b", 3)]
    measured = {grid[0]: {m: [[(4, [1.0, 1.0, 1.0])], [(4, [0.0, 0.0, 0.0])] * 3]
                          for m in locomo.MODES}}
    out = locomo_cv.folds(convs, measured)
    assert out["modes"]["hybrid"]["mean_over_folds"]["r@5"] == 50.0
    assert out["modes"]["hybrid"]["pooled"]["overall"]["r@5"] == 25.0
    assert [f["chosen"]["vector_min_cosine"] for f in out["folds"]] == [0.4, 0.4]
    assert out["modes"]["fts_default"] == out["modes"]["fts"]  # the default is the setting


def test_fts_default_is_the_chosen_text_at_the_library_fts_admission() -> None:
    """fts_default: the held-out fts figures at the chosen entry text and the default
    fts admission, whatever fts admission the fold chose."""
    strict = locomo_cv.Setting("date", (3, 0.5), 0.4)
    base = locomo_cv.Setting("date", (2, 0.25), 0.4)
    convs = [_conv("a", 1), _conv("b", 1)]

    def rows(x: float) -> dict:
        return {m: [[(4, [x] * 3)]] * 2 for m in locomo.MODES}

    measured = {base: rows(0.0), strict: rows(1.0)}
    out = locomo_cv.folds(convs, measured)
    assert [f["chosen"]["fts_min_matched"] for f in out["folds"]] == [3, 3]
    assert out["modes"]["fts"]["mean_over_folds"]["r@5"] == 100.0
    assert out["modes"]["fts_default"]["mean_over_folds"]["r@5"] == 0.0


_KEYS = st.builds(lambda a, e: (f"a{a}", f"e{e}", "v"), st.integers(0, 2), st.integers(0, 40))


@settings(max_examples=200, deadline=None)
@given(st.lists(_KEYS, max_size=60), st.lists(_KEYS, max_size=60), st.integers(1, 30))
def test_fuse_top_is_the_librarys_rrf(fts: list, vec: list, n: int) -> None:
    """The integer fusion the grid uses orders exactly as core.rrf.fuse (exact fractions,
    ties by the spec's keys), repeated keys included."""
    fts_keys = [RankKey(*k) for k in fts]
    vec_keys = [RankKey(*k) for k in vec]
    want = [f.key for f in rrf.fuse({"fts": fts_keys, "vector": vec_keys})][:n]
    assert locomo_cv.fuse_top([fts_keys, vec_keys], n) == want


def test_vector_floor_restores_the_library_default() -> None:
    before = search_admission.VECTOR_MIN_COSINE
    with pytest.raises(RuntimeError), locomo_cv.vector_floor(0.9):
        assert search_admission.VECTOR_MIN_COSINE == 0.9
        raise RuntimeError
    assert before == search_admission.VECTOR_MIN_COSINE


def test_fts_admission_restores_the_library_default() -> None:
    before = search_admission.FTS_MIN_MATCHED, search_admission.FTS_MIN_COVERAGE
    with pytest.raises(RuntimeError), locomo_cv.fts_admission((3, 0.5)):
        assert search_admission.FTS_MIN_MATCHED == 3
        assert search_admission.FTS_MIN_COVERAGE == 0.5
        raise RuntimeError
    assert before == (search_admission.FTS_MIN_MATCHED, search_admission.FTS_MIN_COVERAGE)


def test_cross_validation_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    second = copy.deepcopy(SAMPLE[0])
    second["sample_id"] = "tiny-2"
    data = tmp_path / "two.json"
    data.write_text(json.dumps([SAMPLE[0], second]), "utf-8")
    out = tmp_path / "out"
    argv = ["locomo", "--data", str(data), "--out", str(out), "--model", "deterministic",
            "--cv-only"]
    assert bench_main.main(argv) == 0
    (path,) = out.glob("locomo-cv-*-deterministic.json")
    report = json.loads(path.read_text("utf-8"))
    # the held-out figures were checked against the library's own searches
    assert report["library_check"] == {"questions_x_modes": 2 * 4 * 3, "differing": 0}
    assert [f["held_out"] for f in report["folds"]] == ["tiny-1", "tiny-2"]
    for fold in report["folds"]:
        assert fold["chosen"]["vector_min_cosine"] in locomo_cv.FLOORS
    assert set(report["modes"]) == set(locomo_cv.ROWS)
    assert {f["chosen"]["text"] for f in report["folds"]} <= set(locomo_cv.TEXTS)
    assert (out / path.with_suffix(".md").name).exists()
    assert (out / ".cache" / "vectors" / "vectors.sqlite").exists()
    printed = capsys.readouterr().out
    assert "Cross-validated (leave one conversation out" in printed
    assert "| hybrid |" in printed
    # a second run embeds nothing: every vector comes from the cache
    assert bench_main.main(argv) == 0
    (path,) = out.glob("locomo-cv-*-deterministic.json")
    assert json.loads(path.read_text("utf-8"))["texts_embedded"] == 0


def test_cross_validation_needs_two_conversations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "one.json"
    data.write_text(json.dumps(SAMPLE), "utf-8")
    argv = ["locomo", "--data", str(data), "--out", str(tmp_path), "--model", "deterministic",
            "--cv-only"]
    assert bench_main.main(argv) == 0
    assert "cross-validation skipped" in capsys.readouterr().out


def test_loss_table_counts_every_question(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import locomo_loss

    data = tmp_path / "one.json"
    data.write_text(json.dumps(SAMPLE), "utf-8")
    argv = ["--data", str(data), "--model", "deterministic", "--cache", str(tmp_path / "v")]
    assert locomo_loss.main(argv) == 0
    rows = [r for r in capsys.readouterr().out.splitlines() if r.startswith("| ") and
            r[2].isdigit()]
    n = sum(len(c.questions) for c in locomo.load(data))
    assert sum(int(r.split("|")[2]) for r in rows) == n
    for r in rows:  # gains + losses never exceed the questions
        cells = [int(x) for x in r.split("|")[2:-1]]
        assert cells[1] + cells[2] <= cells[0]
