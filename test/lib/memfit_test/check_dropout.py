#!/usr/bin/env python3
"""Training-mode Dropout: its mask output and its gradient.

  check_dropout.py inputs DIR
      Writes DIR/x.npy (64 x 32) and DIR/R.npy (64 x 48), fixed random.
  check_dropout.py forward DIR RATIO OUT1 OUT2
      OUT1 and OUT2 are two runs' --output-dir of a model with h = x W and
      two dropouts of h (outputs y, m and y2, m2): each y is h * m /
      (1 - RATIO) to the last bit, each mask keeps 1 - RATIO of the
      elements (within 0.02), the two dropouts draw different masks (they
      disagree on about 2 RATIO (1 - RATIO) of the elements), and the runs
      are identical.
  check_dropout.py gradient DIR RATIO OUT GRADS
      GRADS is the --gradients output of loss = sum(dropout(x W) * R) with
      the first dropout's attributes: grad.W equals x^T (R * m / (1 - RATIO))
      with m that dropout's mask from OUT (relative error <= 1e-5).

Prints PASS or FAIL lines.
"""

import os
import sys

import numpy as np

from memfit_test.check_training import report


def load(directory, name):
    return np.load(os.path.join(directory, f"{name}.npy"))


def inputs(directory):
    rng = np.random.default_rng(0)
    os.makedirs(directory, exist_ok=True)
    np.save(os.path.join(directory, "x.npy"),
            rng.standard_normal((64, 32)).astype(np.float32))
    np.save(os.path.join(directory, "R.npy"),
            rng.standard_normal((64, 48)).astype(np.float32))
    return 0


def forward(directory, ratio, out1, out2):
    ratio = float(ratio)
    scale = np.float32(1.0 / (1.0 - ratio))
    failures = []
    for y_name, m_name in (("y", "m"), ("y2", "m2")):
        h, y, m = (load(out1, n) for n in ("h", y_name, m_name))
        expected = np.where(m, h * scale, np.float32(0))
        if not np.array_equal(y, expected):
            failures.append(f"{y_name} is not h * {m_name} / (1 - ratio)")
        kept = float(m.mean())
        print(f"{m_name}: keeps {kept:.4f} of {m.size} (expected "
              f"{1 - ratio:.4f})")
        if abs(kept - (1 - ratio)) > 0.02:
            failures.append(f"{m_name} keeps {kept:.4f}")
    differ = float((load(out1, "m") != load(out1, "m2")).mean())
    print(f"the two dropouts' masks differ on {differ:.4f} of the elements "
          f"(expected {2 * ratio * (1 - ratio):.4f})")
    if abs(differ - 2 * ratio * (1 - ratio)) > 0.03:
        failures.append("the two dropouts do not draw independent masks")
    for name in ("y", "m", "y2", "m2"):
        if not np.array_equal(load(out1, name), load(out2, name)):
            failures.append(f"{name} differs between two runs")
    return report("dropout-forward", failures)


def gradient(directory, ratio, out, grads):
    ratio = float(ratio)
    x, r = load(directory, "x"), load(directory, "R")
    m = load(out, "m")
    expected = x.astype(np.float64).T @ (r * m / (1.0 - ratio))
    got = load(grads, "grad.W")
    err = float(np.abs(got - expected).max() / np.abs(expected).max())
    print(f"grad.W: max error {err:.2e} of the largest (tolerance 1e-05)")
    return report("dropout-gradient", [] if err <= 1e-5 else
                  [f"grad.W differs by {err:.2e}"])


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    sys.exit({"inputs": inputs, "forward": forward,
              "gradient": gradient}[mode](*rest))
