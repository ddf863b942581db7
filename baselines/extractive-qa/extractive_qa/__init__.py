"""Extractive QA baseline for ARQMath Task 3: the best Task 1 BM25 answer, cleaned and cut."""
