"""The figures of a memfit-remat report (passes/Remat/RematReport.cpp), as the
report file of `report=PATH`, or the text that `report=-` and memfit-run's
--remat-report print. Shared by the remat tests and bench/remat-table.py.

  parse(text) -> {
      "planned": weights + arena bytes (the `planned:` line),
      "planned_fused": weights + arena bytes after memfit-fuse (the
                       `planned after memfit-fuse` line; fused steps),
      "weights": the weights bytes of that line,
      "activation_none", "activation": activation memory before -> after,
      "extra_flops_pct": extra FLOPs in % of the step's,
      "extra_flops": extra FLOPs, absolute (k/M/G/T units applied),
      "saved", "recomputed": the counts of the `totals:` line,
      "compressed": its count of values saved compressed (0 when the line
                    has none), "compressed_bytes": their bytes compressed,
      "extra_bytes": extra bytes moved, in bytes (B/KiB/MiB/GiB applied),
      "pass_seconds": the remat pass time,
      "solver": the solver note (optimal only),
      "budget": the budget in bytes of the header line (when it ends with
                one given in bytes),
  }

with None for what the text does not hold. The first function's report
counts where the text holds several.
"""

import re

FLOP_UNITS = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
BYTE_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}


def moved(text):
    """The report's "extra bytes moved", in bytes."""
    m = re.search(r"extra bytes moved: ([0-9.]+) (B|KiB|MiB|GiB)", text)
    if not m:
        return None
    return float(m.group(1)) * BYTE_UNITS[m.group(2)]


def extra_flops(text):
    """The report's extra FLOPs, absolute."""
    m = re.search(r"extra FLOPs: ([0-9.]+) ([kMGT]?)FLOP", text)
    if not m:
        return None
    return float(m.group(1)) * FLOP_UNITS[m.group(2)]


def parse(text):
    def num(pattern, group=1, cast=int, flags=0):
        m = re.search(pattern, text, flags)
        return cast(m.group(group)) if m else None
    totals = r"totals: (\d+) saved \(\d+ bytes\), (\d+) recomputed \("
    compressed = r"totals: .*, (\d+) compressed \(\d+ -> (\d+) bytes\)"
    activation = r"activation memory: (\d+) -> (\d+) bytes"
    return {
        "planned": num(r"planned: weights \d+ \+ arena \d+ = (\d+) bytes"),
        "planned_fused": num(r"planned after memfit-fuse \(.*\): weights \d+ "
                             r"\+ arena \d+ = (\d+) bytes"),
        "weights": num(r"planned: weights (\d+)"),
        "activation": num(activation, 2),
        "activation_none": num(activation, 1),
        "extra_flops_pct": num(r"extra FLOPs: .* \(([0-9.]+)% of", 1, float),
        "extra_flops": extra_flops(text),
        "saved": num(totals, 1),
        "recomputed": num(totals, 2),
        "compressed": num(compressed, 1) or (0 if "totals:" in text
                                            else None),
        "compressed_bytes": num(compressed, 2),
        "extra_bytes": moved(text),
        "pass_seconds": num(r"remat pass time: ([0-9.]+) s", 1, float),
        "solver": num(r"solver: (.*)", 1, str),
        "budget": num(r"^remat report for .*, budget (\d+)$", 1, int,
                      re.MULTILINE),
    }
