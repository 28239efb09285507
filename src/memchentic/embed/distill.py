"""Build a static embedding model from a sentence-transformers model, offline.

The model2vec method (Tulkens and van Dongen, 2024; MIT): every token of the
model's WordPiece vocabulary is passed through the transformer on its own,
framed by the separator tokens, and the mean of its output states becomes that
token's vector. The vectors are centred and reduced with PCA, and each token is
weighted by ``sif / (sif + p)``, where ``p`` is its probability under Zipf's law
by its rank in the vocabulary (smooth inverse frequency: frequent tokens count
less). A text's embedding is then the mean of its tokens' vectors: no
transformer at query time, only a tokenizer and a table lookup.

Building needs torch and transformers (the ``memchentic[local]`` extra) and
takes well under a minute on two cores; using the result needs only
``tokenizers`` and numpy. The build is deterministic for a given source model:
PCA is an exact SVD and each component's sign is fixed, so rebuilding gives the
same table (up to float rounding of the forward pass).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from memchentic.errors import EmbedderError, ValidationError

__all__ = ["DISTILL_VERSION", "build_static_model", "source_digest"]

#: Bumped when the recipe changes, so cached builds of an older recipe are rebuilt.
DISTILL_VERSION = 1
_UNUSED = re.compile(r"^\[unused\d+\]$")
_BATCH = 1024


def file_digest(path: Path) -> str:
    """SHA-256 of one file, read in blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_digest(source: Path) -> str:
    """SHA-256 of the source model's weights and tokenizer (what the build depends on)."""
    digest = hashlib.sha256()
    for name in ("model.safetensors", "pytorch_model.bin", "tokenizer.json", "config.json"):
        path = source / name
        if path.is_file():
            digest.update(name.encode())
            with path.open("rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
    return digest.hexdigest()


def torch_and_transformers(purpose: str) -> tuple[Any, Any]:
    """``torch`` and ``transformers``, imported offline (the packaged model only);
    an EmbedderError that says what ``purpose`` needs when they are not installed."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise EmbedderError(
            f"{purpose} needs torch and transformers: pip install 'memchentic[local]'"
        ) from exc
    return torch, transformers


def _token_states(
    source: Path, progress: Callable[[int, int], None] | None = None
) -> tuple[np.ndarray, dict[str, int], Any]:
    """The transformer's mean output for every vocabulary token, and the vocabulary;
    ``progress(done, total)`` after each batch of tokens."""
    torch, transformers = torch_and_transformers("building the static embedder")
    from .notice import quiet_loading

    with quiet_loading():
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
        model = transformers.AutoModel.from_pretrained(str(source))
    model.eval()
    vocab: dict[str, int] = tokenizer.get_vocab()
    size = max(vocab.values()) + 1
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    if cls_id is None or sep_id is None:
        raise EmbedderError(f"the model at {source} has no [CLS]/[SEP] tokens to frame a token")
    ids = torch.arange(size)
    # model2vec frames each token as [SEP] token [CLS]: reported better than [CLS] token [SEP]
    framed = torch.stack(
        [torch.full_like(ids, sep_id), ids, torch.full_like(ids, cls_id)], dim=1
    )
    parts: list[np.ndarray] = []
    with torch.inference_mode():
        for start in range(0, size, _BATCH):
            batch = framed[start : start + _BATCH]
            out = model(
                input_ids=batch,
                attention_mask=torch.ones_like(batch),
                token_type_ids=torch.zeros_like(batch),
            ).last_hidden_state
            parts.append(out.mean(dim=1).float().numpy())
            if progress is not None:
                progress(min(start + _BATCH, size), size)
    return np.concatenate(parts).astype(np.float64), vocab, tokenizer


def _pca(matrix: np.ndarray, dims: int) -> np.ndarray:
    """Centre, project on the top ``dims`` principal axes (exact SVD), fix each sign."""
    centred = matrix - matrix.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[:dims]
    # a component's sign is arbitrary: make its largest loading positive, so builds agree
    flip = np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(axis=1)])
    flip[flip == 0] = 1.0
    return centred @ (axes * flip[:, None]).T


def _sif_weights(size: int, sif: float) -> np.ndarray:
    """``sif / (sif + p)`` with ``p`` Zipf's probability of the token's vocabulary rank."""
    inverse_rank = 1.0 / np.arange(2, size + 2, dtype=np.float64)
    probability = inverse_rank / inverse_rank.sum()
    return sif / (sif + probability)


def build_static_model(
    source: str | os.PathLike[str], target: str | os.PathLike[str], *,
    dims: int = 256, sif: float = 1e-4, progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Distill the sentence-transformers model at ``source`` into ``target``.

    ``target`` receives ``vectors.npy`` (float32, one row per token id),
    ``tokenizer.json`` (the source's, without truncation or padding) and
    ``static.json`` (how it was built). The folder appears whole or not at all:
    it is built beside ``target`` and renamed into place. ``progress(done, total)``
    is called as the vocabulary's tokens go through the transformer.
    """
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 8:
        raise ValidationError("dims", "must be an integer of at least 8")
    if not 0 < sif < 1:
        raise ValidationError("sif", "must be between 0 and 1 (exclusive)")
    source_path, target_path = Path(source), Path(target)
    if not (source_path / "tokenizer.json").is_file():
        raise EmbedderError(f"{source_path} has no tokenizer.json (a fast WordPiece tokenizer)")
    states, vocab, tokenizer = _token_states(source_path, progress)
    dims = min(dims, states.shape[1])
    vectors = _pca(states, dims) * _sif_weights(len(states), sif)[:, None]
    special = {tokenizer.unk_token_id, tokenizer.pad_token_id, tokenizer.cls_token_id,
               tokenizer.sep_token_id, tokenizer.mask_token_id}
    for token, index in vocab.items():
        if _UNUSED.match(token) or index in special:
            vectors[index] = 0.0  # never a text's content: contributes nothing
    with (source_path / "tokenizer.json").open(encoding="utf-8") as handle:
        spec = json.load(handle)
    spec["truncation"] = None  # a static model reads the whole text
    spec["padding"] = None
    target_path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target_path.name}-", dir=target_path.parent))
    try:
        np.save(staging / "vectors.npy", vectors.astype(np.float32))
        table_digest = file_digest(staging / "vectors.npy")
        with (staging / "tokenizer.json").open("w", encoding="utf-8") as handle:
            json.dump(spec, handle, ensure_ascii=False)
        info = {
            "method": "model2vec distillation (token states, PCA, Zipf SIF weights)",
            "version": DISTILL_VERSION,
            "source": source_path.name,
            "source_sha256": source_digest(source_path),
            "dims": dims,
            "sif": sif,
            "tokens": len(vectors),
            "vectors_sha256": table_digest,  # checked on every load
        }
        with (staging / "static.json").open("w", encoding="utf-8") as handle:
            json.dump(info, handle, indent=2)
        try:
            os.replace(staging, target_path)
        except OSError:  # another process finished first: keep its build
            if not (target_path / "vectors.npy").is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target_path
