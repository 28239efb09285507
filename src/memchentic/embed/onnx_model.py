"""A sentence-transformers model run by ONNX Runtime: exported once, then no torch.

The local embedder's default runtime (:class:`~memchentic.embed.local.LocalEmbedder`).
A model folder whose modules are a transformer, mean pooling and (optionally)
normalisation (all-MiniLM-L6-v2's) is exported by plain ``torch.onnx.export``
the first time it is used, with the pooling and normalisation inside the graph
and dynamic batch and sequence axes. The export is kept in the cache folder
(``EMBEDDER_CACHE_DIR``, default ``~/.cache/memchentic``), in a folder named
after the model folder and the recipe, beside an ``onnx.json`` that records
the SHA-256 of the weights it was made from: when the weights change, it is
exported again. An int8 copy (``quantize_dynamic``, per-channel QInt8
weights) is made from it only when asked for.

Exporting needs torch, transformers and onnx (the ``memchentic[local]`` extra)
and takes about 20 s on two cores, under a file lock so that concurrent first
uses export once; it says so on a terminal. Running needs only onnxruntime,
``tokenizers`` and numpy: a process that only embeds never imports torch.

Texts are tokenised as sentence-transformers does: the model folder's fast
tokenizer, stripped texts, truncation at the model's ``max_seq_length``
(``sentence_bert_config.json``; 256 for MiniLM) and no padding beyond the
longest text of a batch. Batches are formed from texts of similar length.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memchentic.errors import EmbedderError
from memchentic.file_lock import file_lock

from .base import LoadOnce
from .distill import file_digest, torch_and_transformers
from .notice import announce, quiet_loading

__all__ = [
    "RECIPE",
    "ModelSpec",
    "OnnxEncoder",
    "default_threads",
    "ensure_export",
    "export_folder",
    "forget_encoder",
    "onnx_runtime_available",
    "read_spec",
    "shared_encoder",
]

#: Bumped when the export changes, so exports of an older recipe are made again.
RECIPE = 1
FP32, INT8, INFO = "model-fp32.onnx", "model-int8.onnx", "onnx.json"
_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
_POOLING = "sentence_transformers.models.Pooling"
_KNOWN_MODULES = {
    "sentence_transformers.models.Transformer",
    _POOLING,
    "sentence_transformers.models.Normalize",
}
_OPSET = 17

# (onnx file, threads) -> encoder; sessions are thread-safe and shared in a process
_ENCODERS: LoadOnce[OnnxEncoder] = LoadOnce()


def onnx_runtime_available() -> bool:
    """Whether an export can run (onnxruntime and tokenizers; nothing imported)."""
    try:
        return all(
            importlib.util.find_spec(name) is not None for name in ("onnxruntime", "tokenizers")
        )
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class ModelSpec:
    """What a sentence-transformers folder says of itself, read without loading it."""

    folder: Path
    #: the output size (the pooling's word embedding dimension)
    dimension: int
    #: tokens read per text (``max_seq_length``)
    max_tokens: int
    #: whether ONNX Runtime can run it as exported here: transformer, mean pooling,
    #: optional normalisation, and nothing else (a Dense layer, CLS pooling: torch)
    exportable: bool


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderError(f"could not read {path}: {exc}") from exc


def read_spec(folder: Path) -> ModelSpec | None:
    """The spec of the model in ``folder``; None when its files do not tell the output
    size without loading it (the caller loads it then)."""
    if not (folder / "config.json").is_file():
        raise EmbedderError(f"{folder} is not a sentence-transformers model folder")
    config = _json(folder / "config.json")
    modules_file, pooling_file = folder / "modules.json", folder / "1_Pooling" / "config.json"
    modules = _json(modules_file) if modules_file.is_file() else []
    kinds = [m.get("type") for m in modules if isinstance(m, dict)]
    pooling = _json(pooling_file) if pooling_file.is_file() else {}
    if not set(kinds) <= _KNOWN_MODULES or _POOLING not in kinds:
        return None
    dimension = pooling.get("word_embedding_dimension") or config.get("hidden_size")
    if not isinstance(dimension, int) or dimension < 1:
        return None
    bert = folder / "sentence_bert_config.json"
    max_tokens = (_json(bert) if bert.is_file() else {}).get("max_seq_length")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        max_tokens = int(config.get("max_position_embeddings") or 512)
    mean_only = pooling.get("pooling_mode_mean_tokens") is True and not any(
        pooling.get(key) for key in pooling if key.startswith("pooling_mode_") and
        key != "pooling_mode_mean_tokens"
    )  # fmt: skip
    exportable = (
        mean_only
        and (folder / "tokenizer.json").is_file()
        and any((folder / name).is_file() for name in _WEIGHTS)
    )
    return ModelSpec(folder, dimension, max_tokens, exportable)


def default_threads() -> int:
    """ONNX Runtime's intra-op threads when none are set: the physical cores this
    process may use, at most 4 (a query embedding gains little beyond; a server's
    workers are given 1 each by ``memchentic serve``)."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return max(1, min(4, (os.cpu_count() or 2) // 2))
    cores = set()
    for cpu in allowed:  # hyper-threads of one core share its core id
        topology = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add(((topology / "physical_package_id").read_text().strip(),
                       (topology / "core_id").read_text().strip()))  # fmt: skip
        except OSError:
            cores.add(("", str(cpu)))
    return max(1, min(4, len(cores)))


def export_folder(cache: Path, source: Path) -> Path:
    """Where the export of the model in ``source`` is kept under ``cache``."""
    where = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]
    return cache / f"onnx-{source.name}-{where}-r{RECIPE}"


def _weights(source: Path) -> Path:
    for name in _WEIGHTS:
        if (source / name).is_file():
            return source / name
    raise EmbedderError(f"{source} holds no model weights ({' or '.join(_WEIGHTS)})")


def _stamp(path: Path) -> list[int]:
    """What changes with a file's bytes: a write moves its change time (ctime), which
    no program can set back, unlike the modification time."""
    stat = path.stat()
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino]


def _current(folder: Path, source: Path, name: str) -> bool:
    """Whether ``folder/name`` is an export of ``source``'s current weights. The
    weights' size, times and inode stand for their SHA-256 while they are unchanged;
    when they differ, the SHA-256 decides (a reinstall of the same weights keeps it)."""
    info_file = folder / INFO
    if not (folder / name).is_file() or not info_file.is_file():
        return False
    try:
        info = json.loads(info_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    weights = _weights(source)
    if info.get("recipe") != RECIPE or info.get("files", {}).get(name) != (folder / name).stat(
    ).st_size:
        return False
    if info.get("weights_stamp") == _stamp(weights):
        return True
    if info.get("weights_sha256") != file_digest(weights):
        return False
    info["weights_stamp"] = _stamp(weights)  # the same weights, touched: trust the time again
    _write_info(folder, info)
    return True


def _write_info(folder: Path, info: dict[str, Any]) -> None:
    tmp = folder / f".{INFO}.{os.getpid()}"
    tmp.write_text(json.dumps(info, indent=2), encoding="utf-8")
    os.replace(tmp, folder / INFO)


def ensure_export(source: Path, cache: Path, *, int8: bool = False, force: bool = False) -> Path:
    """The ONNX file of the model in ``source`` (int8 or fp32), exported into
    ``cache`` when it is missing, stale (other weights) or ``force``."""
    folder = export_folder(cache, source)
    name = INT8 if int8 else FP32
    if not force and _current(folder, source, name):
        return folder / name
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / ".export.lock"):  # concurrent first uses: one export
        if not force and _current(folder, source, name):  # another process made it
            return folder / name
        weights = _weights(source)
        if force or not _current(folder, source, FP32):
            started = time.perf_counter()
            announce(f"exporting the local model to ONNX once (about 20 s) into {folder}")
            (folder / INT8).unlink(missing_ok=True)  # made from the old export
            _export(source, folder / FP32)
            info = {
                "recipe": RECIPE,
                "source": str(source.resolve()),
                "weights": weights.name,
                "weights_sha256": file_digest(weights),
                "weights_stamp": _stamp(weights),
                "opset": _OPSET,
                "files": {FP32: (folder / FP32).stat().st_size},
            }
            _write_info(folder, info)
            announce(f"exported the local model in {time.perf_counter() - started:.0f} s")
        if int8 and (force or not _current(folder, source, INT8)):
            announce("quantising the local model to int8 once")
            _quantize(folder / FP32, folder / INT8)
            info = json.loads((folder / INFO).read_text(encoding="utf-8"))
            info["files"][INT8] = (folder / INT8).stat().st_size
            _write_info(folder, info)
    return folder / name


def _export(source: Path, target: Path) -> None:
    """The transformer + mean pooling + L2 normalisation as one graph at ``target``."""
    torch, transformers = torch_and_transformers("exporting the local model to ONNX")
    module: Any = torch.nn.Module

    class Pooled(module):
        def __init__(self, bert: Any) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            hidden = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2.0, dim=1)

    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        with quiet_loading(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on shapes: not actionable
            bert = transformers.AutoModel.from_pretrained(str(source), attn_implementation="eager")
            model = Pooled(bert).eval()
            ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
            axes = {0: "batch", 1: "sequence"}
            with torch.no_grad():
                torch.onnx.export(
                    model,
                    (ids, (ids != 0).long(), torch.zeros_like(ids)),
                    str(tmp),
                    input_names=["input_ids", "attention_mask", "token_type_ids"],
                    output_names=["embedding"],
                    dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                  "token_type_ids": axes, "embedding": {0: "batch"}},
                    opset_version=_OPSET,
                    do_constant_folding=True,
                    dynamo=False,
                )  # fmt: skip
        os.replace(tmp, target)
    except EmbedderError:
        raise
    except Exception as exc:  # torch's exporter raises many kinds (onnx missing, ...)
        raise EmbedderError(f"could not export the local model to ONNX: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


def _quantize(fp32: Path, target: Path) -> None:
    """Dynamic int8 weights with per-channel scales (per-tensor ones cost far more:
    a mean cosine to fp32 of 0.954 against 0.993, bench/README "embedders")."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp.onnx")
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
        os.replace(tmp, target)
    except Exception as exc:  # onnx missing, or the quantiser's own kinds
        raise EmbedderError(f"could not quantise the local model to int8: {exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)


class OnnxEncoder:
    """One ONNX Runtime session and the model's tokenizer: texts in, unit rows out."""

    def __init__(self, path: Path, spec: ModelSpec, threads: int) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderError(f"onnxruntime is not installed: {exc}") from exc
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: its notices are not the user's
        try:
            self.session = ort.InferenceSession(
                str(path), options, providers=["CPUExecutionProvider"]
            )
            tokenizer = Tokenizer.from_file(str(spec.folder / "tokenizer.json"))
        except Exception as exc:  # a damaged file, an unsupported graph
            raise EmbedderError(f"ONNX Runtime could not load {path}: {exc}") from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(spec.max_tokens)
        self.tokenizer = tokenizer
        self.threads = threads
        self.path = path
        self._inputs = {i.name for i in self.session.get_inputs()}

    def encode(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Unit rows for ``texts`` (none blank), in order."""
        # sentence-transformers strips each text before tokenising it
        encode = getattr(self.tokenizer, "encode_batch_fast", self.tokenizer.encode_batch)
        encodings = encode([text.strip() for text in texts])
        lengths = [len(e.ids) for e in encodings]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        out = np.zeros((len(texts), 0), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            part = order[start : start + batch_size]
            width = max(lengths[j] for j in part)
            ids = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, j in enumerate(part):
                ids[row, : lengths[j]] = encodings[j].ids
                mask[row, : lengths[j]] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            (vectors,) = self.session.run(None, {k: v for k, v in feed.items()
                                                 if k in self._inputs})  # fmt: skip
            if out.shape[1] == 0:
                out = np.zeros((len(texts), vectors.shape[1]), dtype=np.float32)
            out[part] = vectors
        return out


def shared_encoder(path: Path, spec: ModelSpec, threads: int) -> OnnxEncoder:
    """The process-wide encoder of (ONNX file, threads), loaded on first use."""
    return _ENCODERS.get((str(path), threads), lambda: OnnxEncoder(path, spec, threads))


def forget_encoder(path: Path, threads: int) -> None:
    """Drop a cached encoder (its file is about to be exported again)."""
    _ENCODERS.discard((str(path), threads))
