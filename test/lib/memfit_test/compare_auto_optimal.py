#!/usr/bin/env python3
"""auto's extra FLOPs against optimal's, from two memfit-remat reports.

  compare_auto_optimal.py AUTO_REPORT OPTIMAL_REPORT [TOLERANCE]

Reads the `extra FLOPs` and `planned` lines of each report and prints
`auto X FLOP, optimal Y FLOP` and `PASS` when auto's extra FLOPs are at most
(1 + TOLERANCE) times optimal's (default 0.05), when optimal's solver proved
its plan optimal, and when both planned totals are within the budget given
in the report's header; `FAIL ...` otherwise.
"""

import sys

from memfit_test.remat_report import parse


def read(path):
    text = open(path).read()
    figures = parse(text)
    flops, planned, budget = (figures["extra_flops"], figures["planned"],
                              figures["budget"])
    if None in (flops, planned, budget):
        sys.exit(f"FAIL {path}: no extra FLOPs, planned total or budget")
    return flops, planned, budget, text


def main():
    tolerance = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05
    auto, auto_planned, budget, _ = read(sys.argv[1])
    optimal, optimal_planned, _, text = read(sys.argv[2])
    print(f"auto {auto:.0f} FLOP, optimal {optimal:.0f} FLOP")
    failures = []
    if "proven optimal" not in text:
        failures.append("optimal's plan is not proven optimal")
    if max(auto_planned, optimal_planned) > budget:
        failures.append(f"planned {auto_planned} / {optimal_planned} bytes "
                        f"exceed the budget {budget}")
    if auto > (1 + tolerance) * optimal:
        failures.append(f"auto is {auto / optimal - 1:.1%} above optimal")
    print("FAIL " + "; ".join(failures) if failures else "PASS")


if __name__ == "__main__":
    main()
