#!/usr/bin/env python3
"""Casts of 64-bit integers to bfloat16 round once, to nearest even, as if
from the integer itself (not through a double, which would round twice).

  check_casts.py inputs DIR
      Writes DIR/x.npy (int64) and DIR/u.npy (uint64): values whose double
      rounding lands on a bf16 tie, ties, and the extremes.
  check_casts.py bf16 DIR OUT
      OUT is memfit-run's --output-dir of Cast(x) -> y and Cast(u) -> z to
      bfloat16: every value equals the exact rounding.
"""

import os
import sys

import numpy as np

from memfit_test.check_training import report

SIGNED = [2**62 + 2**54 + 1, -(2**62 + 2**54 + 1), 2**62 + 2**54,
          2**62 + 3 * 2**54, 12345678901234567, -5, -2**63, 2**63 - 1]
UNSIGNED = [2**63 + 2**55 + 1, 2**64 - 1, 2**63 + 2**55, 7, 2**53 + 1,
            2**60 + 2**52 + 2**51, 0, 255]


def exact_bf16(v):
    """v rounded to 8 significant bits, ties to even."""
    sign, a = (-1 if v < 0 else 1), abs(v)
    shift = a.bit_length() - 8
    if shift <= 0:
        return v
    q, r, half = a >> shift, a & ((1 << shift) - 1), 1 << (shift - 1)
    if r > half or (r == half and q & 1):
        q += 1
    return sign * (q << shift)


def inputs(directory):
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, "x.npy"), np.array(SIGNED, np.int64))
    np.save(os.path.join(directory, "u.npy"), np.array(UNSIGNED, np.uint64))
    return 0


def bf16(directory, out):
    failures = []
    for name, values in (("y", SIGNED), ("z", UNSIGNED)):
        raw = np.load(os.path.join(out, f"{name}.npy"))
        bits = np.frombuffer(raw.tobytes(), np.uint16).astype(np.uint32) << 16
        for v, got in zip(values, bits.view(np.float32)):
            if int(got) != exact_bf16(v):
                failures.append(f"{v} became {int(got)}, not {exact_bf16(v)}")
    print(f"{len(SIGNED) + len(UNSIGNED)} casts to bfloat16 checked")
    return report("cast-bf16", failures)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    sys.exit({"inputs": inputs, "bf16": bf16}[mode](*rest))
