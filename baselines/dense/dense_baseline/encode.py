"""The bi-encoder: WordLlama ``l2_supercat`` at 256 dimensions (MIT licence).

Why this model: it is the only well-known embedding model whose weights ship inside a
PyPI wheel (``wordllama/weights/l2_supercat_256.safetensors``, 16 MB), so the image
builds from PyPI alone and runs with no network and no model hub. It is a static
token-embedding model (the input embeddings of LLaMA-2-family models, trained for
similarity, average-pooled): far weaker than a transformer bi-encoder, but deterministic
and fast on CPU. Vectors are L2-normalised, so a dot product is the cosine.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain, islice

import numpy as np

MODEL = "wordllama l2_supercat dim 256"


def load():
    """The model from the wheel's own files, or an error; never a download.

    wordllama 0.4.0 looks for its bundled tokenizer under ``tokenizer/`` while the wheel
    ships it under ``tokenizers/``; its cache layout (``<cache>/tokenizers``,
    ``<cache>/weights``) is the package folder's own, so the package folder is passed as
    the cache.
    """
    from pathlib import Path

    import wordllama
    from wordllama import WordLlama

    return WordLlama.load(config="l2_supercat", dim=256, cache_dir=Path(wordllama.__file__).parent,
                          disable_download=True)


#: tokens gathered per step: 64k x 256 float32 = 64 MiB, whatever a document's length
CHUNK_TOKENS = 65_536


#: unit vectors are written as integers at this scale (2^24, float32's precision) before the
#: scores are taken: see :func:`quantize`
SCALE_BITS = 24


def embed(model, texts: list[str]) -> np.ndarray:
    """Unit vectors (float64, one row per text); an empty text gets the zero vector.

    WordLlama's own ``embed`` pads each batch of 64 texts to its longest text and pools
    the padded (batch x longest x 256) tensor: on args.me (mean 360 tokens, up to 2,500)
    that is about 125 documents/s. The same mean is taken here without padding: the
    texts' token ids are concatenated and each text's rows of the embedding matrix are
    summed by ``np.add.reduceat``, at most ``CHUNK_TOKENS`` rows at a time, then divided
    by the token count and L2-normalised, as WordLlama does (the vectors agree with
    WordLlama's to float32 rounding, tested in tests/test_baselines_docker.py).

    Why no BLAS here: every step is an element-wise IEEE operation or a numpy reduction
    whose order is fixed by numpy's source, not by the CPU's vector width (``reduceat``
    adds a segment's rows one after the other), so the vectors are the same bits on every
    x86-64 CPU, with or without AVX-512: benchmarks/cpu_profiles.py and the reproduction
    test check it. The rows are summed in float32 (half the memory traffic of float64:
    the gather is the baseline's hot loop); the sums of chunks, the mean and the norm are
    taken in float64.
    """
    dim = model.embedding.shape[1]
    vectors = np.zeros((len(texts), dim), dtype=np.float64)
    if not texts:
        return vectors
    encodings = _unpadded(model).encode_batch(texts, add_special_tokens=False)
    lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
    total = int(lengths.sum())
    ids = np.fromiter(chain.from_iterable(e.ids for e in encodings), dtype=np.int64, count=total)
    np.clip(ids, 0, model.embedding.shape[0] - 1, out=ids)  # as WordLlama: out-of-range ids clamp
    ends = np.cumsum(lengths)
    starts = ends - lengths
    for lo in range(0, total, CHUNK_TOKENS):
        hi = min(lo + CHUNK_TOKENS, total)
        docs = np.arange(np.searchsorted(ends, lo, side="right"), np.searchsorted(starts, hi, side="left"))
        docs = docs[lengths[docs] > 0]
        segments = np.maximum(starts[docs], lo) - lo
        vectors[docs] += np.add.reduceat(model.embedding[ids[lo:hi]], segments, axis=0)
    filled = lengths > 0
    vectors[filled] /= lengths[filled, None].astype(np.float64)
    norms = np.sqrt(np.add.reduce(vectors * vectors, axis=1, keepdims=True))
    np.divide(vectors, norms, out=vectors, where=norms > 0)
    vectors[~np.isfinite(vectors).all(axis=1)] = 0.0
    return vectors


def quantize(vectors: np.ndarray) -> np.ndarray:
    """Unit vectors as whole numbers (held in float64): ``rint(v * 2^24)``.

    Why: BLAS sums a dot product in an order that depends on the CPU's kernels (AVX-512,
    AVX2, ...), so float scores differ in their last bits between machines. Here every
    product of two components is a whole number below 2^48 and, by Cauchy-Schwarz, every
    partial sum of a dot product stays below (2^24 + 8)^2 < 2^53: each step of the matrix
    product is exact in float64, in any order, with or without fused multiply-add. The
    score ``dot / 2^48`` is therefore the same number on every CPU.
    """
    return np.rint(vectors * float(1 << SCALE_BITS))


def _unpadded(model):
    """A copy of the model's tokenizer with padding off (WordLlama turns it on for its own
    batches), made once per model and kept on it."""
    tokenizer = getattr(model, "_sharedtask_unpadded", None)
    if tokenizer is None:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(model.tokenizer.to_str())
        tokenizer.no_padding()
        tokenizer.no_truncation()
        model._sharedtask_unpadded = tokenizer
    return tokenizer


def batches(items: Iterable[tuple[str, str]], size: int) -> Iterator[list[tuple[str, str]]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
