"""Data parallelism (memfit-shard zero=0) with `mpirun -np 2 memfit-run`
against one process with the same global batch: the same losses, the same
parameters and optimizer states, the loss printed once; also with gradient
accumulation (2 ranks x 2 micro-batches of 1 row against one batch of 4),
and the plan of 64 ranks without launching them.

    python -m memfit_test.check_data_parallel MODE memfit-run MODELS WORKDIR

MODE: curve, plan or fault. SGD with momentum, as check_training's accumulate:
AdamW turns the last-bit differences of a sum taken in another order into
full steps where a gradient is near zero.
"""

import os
import re
import subprocess
import sys

import numpy as np

from memfit_test.check_training import (read_checkpoint, read_losses, report,
                                        run, train_args)

# Open MPI as root, oversubscribed (lit runs tests side by side on few
# cores), without probing the network.
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1",
           "OMPI_MCA_hwloc_base_binding_policy": "none",
           "OMPI_MCA_btl": "self,vader",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def mpirun(ranks, args, timeout=300):
    """`mpirun -np ranks args`; its stdout. A hang is a failure, not a
    stuck suite."""
    env = dict(os.environ, **MPI_ENV)
    done = subprocess.run(["mpirun", "-np", str(ranks)] + args, env=env,
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.stdout.write(done.stdout + done.stderr)
        raise SystemExit(f"FAIL mpirun exited with {done.returncode}")
    return done.stdout


def compare(whole, ranked, label, failures):
    """Losses within 1e-5 relative, every variable within 1e-5 scaled."""
    (wl, wc), (rl, rc) = whole, ranked
    worst_loss = max(abs(wl[s] - rl[s]) / abs(wl[s]) for s in wl)
    print(f"{label}: losses one process {[round(wl[s], 6) for s in sorted(wl)]}"
          f" 2 ranks {[round(rl[s], 6) for s in sorted(rl)]}: max relative "
          f"difference {worst_loss:.2e}")
    if set(wl) != set(rl) or worst_loss > 1e-5:
        failures.append(f"{label}: losses differ")
    worst, compared = 0.0, 0
    for name, value in wc.items():
        if name.endswith(".grad"):
            continue
        if name not in rc:
            failures.append(f"{label}: {name} missing from the ranks' "
                            "checkpoint")
            continue
        scaled = (float(np.max(np.abs(rc[name].astype(np.float64) - value)))
                  / max(1.0, float(np.max(np.abs(value)))))
        worst = max(worst, scaled)
        compared += 1
        if scaled > 1e-5:
            failures.append(f"{label}: {name}: scaled difference {scaled:.3e}")
    print(f"{label}: {compared} variables compared, worst scaled difference "
          f"{worst:.2e}")


def curve(memfit_run, models, workdir):
    sgd = ["--optimizer=sgd", "--momentum=0.9", "--lr=0.1"]
    steps = 4
    failures = []
    for label, batch, k in (("data parallel", 2, 1),
                            ("with accumulation", 1, 2)):
        results = []
        for ranks in (1, 2):
            tag = f"{label.replace(' ', '-')}-{ranks}"
            losses = os.path.join(workdir, f"{tag}.csv")
            ckpt = os.path.join(workdir, f"{tag}.ckpt")
            rows = batch * k * 2 // ranks if ranks == 1 else batch
            args = train_args(memfit_run, models, rows, 32, steps, sgd + [
                f"--accumulate={1 if ranks == 1 else k}",
                f"--losses={losses}", f"--checkpoint={ckpt}"])
            if ranks == 1:
                out = run(args)
            else:
                out = mpirun(ranks, args)
                printed = re.findall(r"^step 1/\d+ ", out, re.M)
                if len(printed) != 1:
                    failures.append(f"{label}: step 1 printed {len(printed)} "
                                    "times (rank 0 alone prints)")
                if "data parallel: MPI" not in out:
                    failures.append(f"{label}: no 'data parallel' line")
            results.append((read_losses(losses), read_checkpoint(ckpt)))
        compare(results[0], results[1], label, failures)
    return report("data-parallel", failures)


def plan(memfit_run, models, workdir):
    """--plan-only --world-size=64: the plan of one of 64 ranks from one
    process, with the category of what its collectives receive (its bytes
    at the peak: zero where, as here, the peak is the forward's end and the
    gradients are averaged and applied one by one in the backward); and
    the errors of a world size without its ranks."""
    failures = []
    base = train_args(memfit_run, models, 2, 32, 1, [])
    base = [a for a in base if not a.startswith("--corpus")]
    out = run(base + ["--plan-only", "--world-size=64"])
    match = re.search(r"^\s+communication\s+([0-9,]+)", out, re.M)
    if not match:
        failures.append("no communication row in the plan of 64 ranks")
    else:
        print(f"plan of 64 ranks: communication {match.group(1)} bytes")
    one = run(base + ["--plan-only"])
    if re.search(r"^\s+communication", one, re.M):
        failures.append("one rank plans communication")
    for extra, want in (
            (["--world-size=2"], "launch the ranks with mpirun -np 2"),
            (["--zero=1", "--plan-only", "--world-size=2"],
             "ZeRO stages 1 to 3 are not built yet")):
        done = subprocess.run(base + extra, capture_output=True, text=True)
        if done.returncode == 0 or want not in done.stderr:
            failures.append(f"{' '.join(extra)}: expected an error with "
                            f"'{want}', got {done.returncode}: "
                            f"{done.stderr.strip()}")
        else:
            print(f"{' '.join(extra)}: {done.stderr.strip()}")
    return report("data-parallel-plan", failures)


def fault(memfit_run, models, workdir):
    """A rank killed with SIGKILL in the middle of a long run: the launch
    ends within a minute, non-zero, with a message naming the signal,
    rather than leaving the other rank waiting in a collective."""
    import signal
    import time
    args = train_args(memfit_run, models, 2, 32, 100000, [
        "--optimizer=sgd", "--lr=0.1"])
    env = dict(os.environ, **MPI_ENV)
    launch = subprocess.Popen(["mpirun", "-np", "2"] + args, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    failures = []
    time.sleep(3)
    children = subprocess.run(["pgrep", "-P", str(launch.pid)],
                              capture_output=True, text=True).stdout.split()
    ranks = [int(p) for p in children
             if "memfit-run" in open(f"/proc/{p}/cmdline").read()]
    if len(ranks) != 2:
        launch.kill()
        return report("data-parallel-fault", [
            f"expected 2 memfit-run ranks under mpirun, found {len(ranks)}"])
    killed_at = time.monotonic()
    os.kill(ranks[1], signal.SIGKILL)
    try:
        out, _ = launch.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        launch.kill()
        out, _ = launch.communicate()
        failures.append("the launch still ran 60 s after a rank was killed")
    took = time.monotonic() - killed_at
    print(f"a rank killed: mpirun exited with {launch.returncode} after "
          f"{took:.1f} s")
    if launch.returncode == 0:
        failures.append("mpirun exited with 0 after a rank was killed")
    said = [line for line in out.splitlines()
            if re.search(r"signal 9|Killed", line)]
    if not said:
        failures.append("no message names the signal:\n" + out[-2000:])
    else:
        print(said[0].strip())
    return report("data-parallel-fault", failures)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    os.makedirs(rest[2], exist_ok=True)
    sys.exit({"curve": curve, "plan": plan, "fault": fault}[mode](*rest))
