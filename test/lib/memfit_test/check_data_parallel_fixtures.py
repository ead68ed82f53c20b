"""Every training fixture (train_refs_bf16.json: GPT-2, BERT and Llama
shapes, each exported by TorchScript and by dynamo) trained for 50 steps
on its own data on 2 ranks (`mpirun -np 2`, each rank half the global
batch) under ZeRO stages 0 to 3, against one process with the whole
batch: the largest relative loss difference over the steps (target 1e-5),
and the final parameters and optimizer states within 1e-5 of each tensor's
largest value, the ranks' rows put together.

SGD with momentum (lr 0.01, 0.9), as the other data-parallel checks:
AdamW divides each gradient by its running magnitude, so where a gradient
is zero but for rounding (an attention key's bias: softmax ignores what
adds the same to every score) the rounding of a sum taken in another
order becomes a step of the full learning rate. With the fixtures' AdamW
the losses agree as well (3.1e-7 at most, every fixture and stage, by
hand), and gpt_ts's first layer's key bias ends 4.9e-3 of its scale from
the one-process run's, the same at every stage.

    python -m memfit_test.check_data_parallel_fixtures memfit-run MODELS WORKDIR [NAME ...]
"""

import json
import os
import re
import subprocess
import sys

import numpy as np

from memfit_test.check_data_parallel import MPI_ENV, assemble
from memfit_test.check_training import (fixture_args, read_checkpoint,
                                        read_losses, report)

STEPS = 50
TOLERANCE = 1e-5


def half_batch(shape):
    """'input_ids=16x16,attention_mask=16x16' with each batch halved."""
    return re.sub(r"=(\d+)x", lambda m: f"={int(m.group(1)) // 2}x", shape)


def main(memfit_run, models, workdir, *names):
    refs = json.load(open(os.path.join(models, "train_refs_bf16.json")))
    fixtures = refs["fixtures"]
    names = names or sorted(fixtures)
    env = dict(os.environ, **MPI_ENV)
    failures = []
    for name in names:
        settings = fixtures[name]["settings"]
        drop = ("--lr=", "--beta1=", "--beta2=", "--eps=", "--weight-decay=")
        base = [a for a in fixture_args(memfit_run, models, workdir, name,
                                        settings, STEPS)
                if not a.startswith(drop)] + [
            "--optimizer=sgd", "--momentum=0.9", "--lr=0.01"]
        one = os.path.join(workdir, f"{name}-one")
        subprocess.run(base + [f"--losses={one}.csv", f"--checkpoint={one}"],
                       check=True, capture_output=True, timeout=600)
        want_losses, want = read_losses(f"{one}.csv"), read_checkpoint(one)
        shapes = {n: v.shape for n, v in want.items()}
        ranked = [a if not a.startswith("--input-shape=") else
                  "--input-shape=" + half_batch(settings["input_shape"])
                  for a in base]
        row = []
        for zero in range(4):
            out = os.path.join(workdir, f"{name}-zero{zero}")
            done = subprocess.run(
                ["mpirun", "-np", "2"] + ranked +
                [f"--zero={zero}", f"--losses={out}.csv",
                 f"--checkpoint={out}"],
                env=env, capture_output=True, text=True, timeout=600)
            if done.returncode:
                failures.append(f"{name} zero={zero}: mpirun exited with "
                                f"{done.returncode}:\n{done.stderr[-1500:]}")
                continue
            losses = read_losses(f"{out}.csv")
            worst_loss = max(abs(losses[s] - want_losses[s]) /
                             abs(want_losses[s]) for s in want_losses)
            files = [out] if zero == 0 else [f"{out}.rank-{r}-of-2"
                                             for r in range(2)]
            got = assemble(files, shapes) if zero else read_checkpoint(out)
            worst = max(float(np.max(np.abs(got[n].astype(np.float64) -
                                            want[n]), initial=0.0)) /
                        max(1.0, float(np.max(np.abs(want[n]), initial=0.0)))
                        for n in want if not n.endswith(".grad"))
            row.append(f"zero={zero} losses {worst_loss:.1e} variables "
                       f"{worst:.1e}")
            if set(losses) != set(want_losses) or worst_loss > TOLERANCE:
                failures.append(f"{name} zero={zero}: losses {worst_loss:.2e}")
            if worst > TOLERANCE:
                failures.append(f"{name} zero={zero}: variables {worst:.2e}")
        print(f"{name} ({settings['input_shape']} in one process, "
              f"{half_batch(settings['input_shape'])} a rank on 2, "
              f"{STEPS} steps): " + "; ".join(row), flush=True)
    return report("data-parallel-fixtures", failures)


if __name__ == "__main__":
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:]))
