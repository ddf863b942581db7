"""Formula retrieval baseline for ARQMath Task 2: Approach Zero (pya0) or Lucene over formula tokens."""
