"""Lucene (Anserini) lexical baselines: BM25 and Dirichlet LM for Touché and ARQMath Task 1.

The package also carries what the formula (Task 2) and extractive QA (Task 3)
baselines reuse: the Anserini runner, the TIRA contract helpers, the ARQMath
post conversion and the LaTeX tokenizer. Their images build FROM this one.
"""

__version__ = "1.0.0"
