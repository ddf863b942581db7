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
from itertools import islice

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


def embed(model, texts: list[str]) -> np.ndarray:
    """Unit vectors (float32, one row per text); an empty text gets the zero vector."""
    if not texts:
        return np.zeros((0, 256), dtype=np.float32)
    vectors = np.asarray(model.embed(texts, norm=True), dtype=np.float32)
    vectors[~np.isfinite(vectors).all(axis=1)] = 0.0
    return vectors


def batches(items: Iterable[tuple[str, str]], size: int) -> Iterator[list[tuple[str, str]]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch
