"""Dense retrieval baseline: a static bi-encoder (WordLlama, weights inside its PyPI wheel),
exact cosine top-k, BM25 (Anserini) and their reciprocal rank fusion."""
