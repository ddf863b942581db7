"""Cost of one answer comparison (sharedtask.answers.equivalence), per level, and of refusing hostile input.

Groups (each pair compared --repeat times; median and maximum wall time per comparison):
  mathqa      MathQA option forms ("3 : 8" vs "0.375")             no mpmath, no SymPy
  exact       rationals ("\\frac{1}{2}" vs "0.5")                   fractions
  different   constants or polynomials that differ ("3.14" vs "\\pi", "x^2+1" vs "(x+1)^2")   mpmath
  symbolic    equal expressions ("(x+1)^2" vs "x^2+2x+1")           mpmath + SymPy proof in the worker
  hostile     refused by the parser's bounds (10^{10^{10}}, 500-deep nesting, 10k characters)
  text        find_equivalent over an answer text of 60 numbers and 20 math spans (64 candidates compared)

Also: the SymPy worker's start (once per process), and with --timeout-check the time
one comparison takes when SymPy's proof is cut by a 0.001 s timeout (kill and the numeric
verdict; the worker restarts on the next call).

    .venv/bin/python benchmarks/equivalence.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import statistics
import time

from sharedtask.answers import symbolic
from sharedtask.answers.equivalence import equivalent, find_equivalent

GROUPS: dict[str, list[tuple[str, str]]] = {
    "mathqa": [("3 : 8", "0.375"), ("4 1 / 2", "4.5"), ("rs . 1,540", "1540"), ("2 √ 3", "3.4641")],
    "exact": [(r"\frac{1}{2}", "0.5"), (r"-\frac{3}{4}", "-0.75"), ("2^10", "1024")],
    "different": [("3.14", r"\pi"), ("x^2+1", "(x+1)^2"), ("2x", "3x"), (r"\sqrt{2}", "1.414")],
    "symbolic": [("(x+1)^2", "x^2+2x+1"), (r"\sqrt{8}", r"2\sqrt{2}"), (r"\sin^2 x + \cos^2 x", "1")],
    "hostile": [("10^{10^{10}}", "1"), ("(" * 500 + "1" + ")" * 500, "1"), ("1+" * 5000, "1"), ("100000!", "1")],
}
TEXT = " ".join(f"step {i}: we get {i * 7} and $x_{i} = \\frac{{{i}}}{{{i + 3}}}$" if i % 3 == 0 else f"then {i}.5"
                for i in range(60))


def _time(call, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    start = time.perf_counter()
    equivalent("(x+1)^2", "x^2+2x+1")  # imports mpmath, starts the worker (SymPy imported there)
    print(f"first comparison (mpmath import + SymPy worker start): {time.perf_counter() - start:.2f} s")
    print(f"{'group':10} {'pairs':>5} {'median ms':>10} {'max ms':>8}")
    for group, pairs in GROUPS.items():
        medians, maxima = [], []
        for a, b in pairs:
            median, worst = _time(lambda a=a, b=b: equivalent(a, b), args.repeat)
            medians.append(median)
            maxima.append(worst)
        print(f"{group:10} {len(pairs):5d} {1000 * statistics.median(medians):10.3f} {1000 * max(maxima):8.1f}")
    median, worst = _time(lambda: find_equivalent(TEXT, "0.6"), max(1, args.repeat // 4))
    print(f"{'text':10} {len(TEXT):5d} {1000 * median:10.3f} {1000 * worst:8.1f}   (characters; key not in the text)")
    start = time.perf_counter()
    verdict = equivalent("(x+1)^7", "x^7+7x^6+21x^5+35x^4+35x^3+21x^2+7x+1", timeout=0.001)
    cut = time.perf_counter() - start
    start = time.perf_counter()
    equivalent("(x+1)^2", "x^2+2x+1")
    restart = time.perf_counter() - start
    print(f"proof cut by a 0.001 s timeout: {1000 * cut:.1f} ms ({verdict.how}); next comparison with a new worker: "
          f"{restart:.2f} s")
    symbolic._WORKER.stop()


if __name__ == "__main__":
    main()
