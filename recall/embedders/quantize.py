"""An int8-compute copy of the packaged model, derived locally and cached.

The packaged `model.onnx` stores its weights as int8 but computes in fp32:
each weight is cast back to float before its MatMul. ONNX Runtime's dynamic
quantization (per-channel int8 weights, activations quantized on the fly,
MatMulInteger on VNNI/AVX-512 or AVX2) runs the same network about twice as
fast on this class of CPU: 116 against 60 texts/s in bulk and 2.1 against
5.0 ms per query on 2 cores (tests/bench/bench_embedder.py), with a mean
cosine of 0.992 to the fp32 vectors (min 0.98 over 1,500 synthetic texts);
int8 kernels differ by CPU: on an AVX2 machine without VNNI, 404 LoCoMo
texts gave mean 0.991, min 0.969 ("ok"; `reduce_range` made it 0.949).
Retrieval quality is measured by `manage.py bench quality`.

The copy is derived from the verified packaged file (never downloaded): ORT
folds the weight casts into fp32 initializers (offline, basic level), then
`onnxruntime.quantization.quantize_dynamic` quantizes the MatMul weights
per channel (and the embedding tables, int8 in the package too: 23 MB). The
result is written atomically into a cache directory under a name that
carries the source's sha256 and the recipe, with a `.sha256` sidecar checked
on every load, so a torn or altered file is rebuilt rather than run.
Building takes about 2-4 s, once per machine and recipe. One text per
forward pass (see OnnxEmbedder): activation scales are per pass.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

from recall.errors import ConfigError

RECIPE = "dq8pc-v1"


def default_cache_dir() -> Path:
    """`$XDG_CACHE_HOME/recall/models`, else `~/.cache/recall/models`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "recall" / "models"


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def quantized_path(source: Path, source_sha256: str, cache_dir: Path) -> Path:
    """The dynamic-int8 copy of `source` (built on first use, then reused).

    `source` must already be verified against `source_sha256`. Raises
    ConfigError when the cache directory cannot be written or the
    quantization tools are missing.
    """
    target = cache_dir / f"minilm-{source_sha256[:16]}-{RECIPE}.onnx"
    sidecar = target.with_name(target.name + ".sha256")
    if (
        target.is_file()
        and sidecar.is_file()
        and sidecar.read_text().strip() == file_sha256(target)
    ):
        return target
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        _build(source, target)
        sidecar_tmp = sidecar.with_name(f".{sidecar.name}.{os.getpid()}")
        sidecar_tmp.write_text(file_sha256(target) + "\n")
        os.replace(sidecar_tmp, sidecar)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the quantized embedding model into {cache_dir}: {exc} "
            "(set RECALL_MODEL_CACHE_DIR to a writable directory)"
        ) from exc
    return target


def _build(source: Path, target: Path) -> None:
    try:
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:
        raise ConfigError(f"quantizing the embedding model needs the onnx package: {exc}") from exc
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".quantize-") as scratch:
        folded = Path(scratch) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        built = Path(scratch) / "quantized.onnx"
        logging.disable(logging.WARNING)  # its "consider pre-processing" advice, once
        try:
            quantize_dynamic(
                str(folded),
                str(built),
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul", "Gather"],
            )
        finally:
            logging.disable(logging.NOTSET)
        os.replace(built, target)
