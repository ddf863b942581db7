"""MathQA baseline: a small search over programs built from the problem's numbers."""
