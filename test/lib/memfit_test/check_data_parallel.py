"""Data parallelism (memfit-shard zero=0) with `mpirun -np 2 memfit-run`
against one process with the same global batch: the same losses, the same
parameters and optimizer states, the loss printed once; also with gradient
accumulation (2 ranks x 2 micro-batches of 1 row against one batch of 4),
and the plan of 64 ranks without launching them.

    python -m memfit_test.check_data_parallel MODE memfit-run MODELS WORKDIR

MODE: curve, plan, fault, resume or reshard. SGD with momentum, as check_training's accumulate:
AdamW turns the last-bit differences of a sum taken in another order into
full steps where a gradient is near zero.
"""

import os
import re
import signal
import subprocess
import sys
import time

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


def ranks_of(launch):
    """The pids of mpirun's children: the ranks."""
    out = subprocess.run(["pgrep", "-P", str(launch.pid)],
                         capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def wait_gone(pids, timeout=60):
    """Until none of `pids` runs: a launch's ranks can outlive mpirun for a
    moment on a loaded machine, and one that still writes its checkpoint
    must not race with the resumed run's."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                alive.append(pid)
            except ProcessLookupError:
                pass
        if not alive:
            return
        time.sleep(0.05)


def wait_for(path, launch, timeout=120):
    """Until `path` exists, the launch has ended, or `timeout` s passed."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path) and launch.poll() is None and \
            time.monotonic() < deadline:
        time.sleep(0.01)


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
    for ranks in (2, 3):
        zero1(memfit_run, models, workdir, ranks, steps, failures)
    return report("data-parallel", failures)


def zero1(memfit_run, models, workdir, ranks, steps, failures):
    """ZeRO stages 1 and 2 against stage 0 on the same ranks with AdamW
    (the same averaged gradients, so the same updates): the same losses and
    parameters bit for bit, each rank's checkpoint holding its rows of every
    state (3 ranks pad 64 rows to 66: the last rank's slice ends in zero
    rows), which put together are stage 0's states; and a rank's optimizer
    states about 1/N of stage 0's. Stage 2 averages each gradient by a
    reduce-scatter of its rows instead of an all-reduce: MPI may add the
    ranks' values in another order there (on 3 ranks it did, in some runs),
    so stage 2 is held to 1e-5 (relative losses, variables scaled by their
    largest element) rather than to the bit. Stage 1 also with 2
    micro-batches a step (--accumulate=2: the whole gradients accumulated,
    the rank's rows of their sum updated), against stage 0's accumulation,
    bit for bit. Stage 2 also with clipping to a global norm of 0.5 (the
    squares of each rank's rows of the gradients added up over the ranks),
    against stage 0's clipping, and with 2 micro-batches (each rank
    accumulating its rows of each reduce-scattered gradient), within
    1e-5. Stage 3 (each rank also keeps its rows of every parameter and
    gathers them before each op that reads it) against stage 0, with SGD,
    with clipping and with 2 micro-batches, within 1e-5, the parameters put
    together from the ranks' rows, and a rank's parameters about 1/N of
    stage 0's; and stage 3 with its fp32 masters and states in host memory
    (--offload=optimizer: about 1/N of the states in each rank's host
    region, none on the device, the device's working copies about 1/N of
    stage 0's parameters) within 1e-5 of stage 0."""
    runs = {}
    # AdamW for stage 1 (bit for bit); SGD with momentum for stage 2, whose
    # last-bit differences AdamW would turn into steps of lr where a
    # gradient is near zero (attention's key biases).
    for zero, optimizer, k in ((0, "adamw", 1), (1, "adamw", 1),
                               (0, "sgd", 1), (2, "sgd", 1),
                               (0, "adamw", 2), (1, "adamw", 2),
                               (0, "sgd-clip", 1), (2, "sgd-clip", 1),
                               (0, "sgd", 2), (2, "sgd", 2),
                               (3, "sgd", 1), (3, "sgd-clip", 1),
                               (3, "sgd", 2), (3, "sgd-offload", 1)):
        folder = os.path.join(workdir,
                              f"zero{zero}-{optimizer}-{ranks}-k{k}")
        os.makedirs(folder)
        losses = os.path.join(folder, "losses.csv")
        ckpt = os.path.join(folder, "ckpt")
        flags = ["--optimizer=adamw"] if optimizer == "adamw" else [
            "--optimizer=sgd", "--momentum=0.9", "--lr=0.1"] + (
            ["--clip-norm=0.5"] if optimizer == "sgd-clip" else []) + (
            ["--offload=optimizer"] if optimizer == "sgd-offload" else [])
        out = mpirun(ranks, train_args(memfit_run, models, 2 // k, 32, steps,
                                       flags + [
            f"--zero={zero}", f"--accumulate={k}", "--memory-report",
            f"--losses={losses}", f"--checkpoint={ckpt}"]))
        states = re.search(r"^  optimizer states\s+([0-9,]+)", out, re.M)
        if optimizer.endswith("-offload"):
            # The rank's states in host memory; on the device, the counter.
            if not states or int(states.group(1).replace(",", "")) > 64:
                failures.append(f"zero={zero} {optimizer}: the states are "
                                "still on the device")
            states = re.search(r"^  host memory \(pinned\).*\n(?:    .*\n)*?"
                               r"    optimizer states\s+([0-9,]+)", out, re.M)
        params = re.search(r"^    parameters\s+([0-9,]+)", out, re.M)
        shards = [read_checkpoint(ckpt + f".rank-{r}-of-{ranks}")
                  for r in range(ranks)] if zero else [read_checkpoint(ckpt)]
        runs[zero, optimizer, k] = (read_losses(losses), shards, int(
            states.group(1).replace(",", "")) if states else 0, int(
            params.group(1).replace(",", "")) if params else 0)
    for zero, optimizer, k in ((1, "adamw", 1), (2, "sgd", 1),
                               (1, "adamw", 2), (2, "sgd-clip", 1),
                               (2, "sgd", 2), (3, "sgd", 1),
                               (3, "sgd-clip", 1), (3, "sgd", 2),
                               (3, "sgd-offload", 1)):
        # Offloaded states (host memory) against stage 0's on the device.
        l0, (c0,), s0, p0 = runs[0, optimizer.replace("-offload", ""), k]
        l1, shards, s1, p1 = runs[zero, optimizer, k]
        label = f"zero={zero} on {ranks} ranks ({optimizer})" + (
            f", {k} micro-batches" if k > 1 else "")
        print(f"{label}: losses {[round(l1[s], 6) for s in sorted(l1)]}, "
              f"optimizer states {s1:,} bytes a rank against {s0:,}, "
              f"parameters {p1:,} against {p0:,}")
        exact = zero == 1
        close = lambda a, b: np.array_equal(a, b) if exact else (
            a.shape == b.shape and float(np.max(np.abs(
                a.astype(np.float64) - b), initial=0.0)) <=
            1e-5 * max(1.0, float(np.max(np.abs(b), initial=0.0))))
        worst_loss = max(abs(l1[k] - l0[k]) / abs(l0[k]) for k in l0)
        if (l1 != l0) if exact else (set(l1) != set(l0) or worst_loss > 1e-5):
            failures.append(f"{label}: losses differ from zero=0's "
                            f"({worst_loss:.2e})")
        if not (0.9 / ranks * s0 <= s1 <= 1.2 / ranks * s0):
            failures.append(f"{label}: a rank's optimizer states {s1} are "
                            f"not about 1/{ranks} of zero=0's {s0}")
        if zero == 3 and not (0.9 / ranks * p0 <= p1 <= 1.2 / ranks * p0):
            failures.append(f"{label}: a rank's parameters {p1} are not "
                            f"about 1/{ranks} of zero=0's {p0}")
        compared = 0
        for name, value in c0.items():
            # The states are the rank's rows, and so are the gradient
            # accumulators under stage 2.
            rows = shards[0][name] if name in shards[0] else value
            if name.endswith((".exp_avg", ".exp_avg_sq", ".momentum_buffer")) \
                    or (zero >= 2 and name.endswith(".grad")) \
                    or (zero == 3 and rows.ndim and
                        rows.shape[0] < value.shape[0]):
                whole = np.concatenate([c[name] for c in shards])
                whole = whole[:value.shape[0]]
                if not close(whole, value):
                    failures.append(f"{label}: {name}: the ranks' rows "
                                    "are not zero=0's state")
                compared += 1
                continue
            for r, c in enumerate(shards):
                if name not in c or not close(c[name], value):
                    failures.append(f"{label}: {name} on rank {r} differs")
            compared += 1
        print(f"{label}: {compared} variables "
              f"{'equal to' if exact else 'within 1e-5 of'} zero=0's; "
              f"losses within {worst_loss:.1e}")


def plan(memfit_run, models, workdir):
    """--plan-only --world-size=64: the plan of one of 64 ranks from one
    process, with the category of what its collectives receive (its bytes
    at the peak: zero where, as here, the peak is the forward's end and the
    gradients are averaged and applied one by one in the backward); and
    the errors of a world size without its ranks; ZeRO stage 1's plan."""
    failures = []
    base = train_args(memfit_run, models, 2, 32, 1, [])
    base = [a for a in base if not a.startswith("--corpus")]
    out = run(base + ["--plan-only", "--world-size=64"])
    match = re.search(r"^\s+communication\s+([0-9,]+)", out, re.M)
    if not match:
        failures.append("no communication row in the plan of 64 ranks")
    else:
        print(f"plan of 64 ranks: communication {match.group(1)} bytes")
    # ZeRO stage 1 over 64 ranks: a rank's optimizer states are its rows of
    # each (a 64-row weight: one row; a 32-element bias: one element of 33
    # padded to 64), much less than the whole.
    def states(out):
        m = re.search(r"^  optimizer states\s+([0-9,]+)", out, re.M)
        return int(m.group(1).replace(",", "")) if m else 0
    whole = states(out)
    sharded = states(run(base + ["--plan-only", "--world-size=64",
                                 "--zero=1"]))
    print(f"optimizer states of a rank of 64: {sharded:,} bytes with zero=1, "
          f"{whole:,} with zero=0")
    if not 0 < sharded < whole / 10:
        failures.append("zero=1 over 64 ranks does not shrink a rank's "
                        "optimizer states")
    # Stage 3: a rank's parameters are its rows of each, too.
    def parameters(out):
        m = re.search(r"^    parameters\s+([0-9,]+)", out, re.M)
        return int(m.group(1).replace(",", "")) if m else 0
    stage3 = run(base + ["--plan-only", "--world-size=64", "--zero=3"])
    print(f"parameters of a rank of 64: {parameters(stage3):,} bytes with "
          f"zero=3, {parameters(out):,} with zero=0; optimizer states "
          f"{states(stage3):,}")
    if not 0 < parameters(stage3) < parameters(out) / 10 or \
            states(stage3) != sharded:
        failures.append("zero=3 over 64 ranks does not shrink a rank's "
                        "parameters (or changes its states)")
    one = run(base + ["--plan-only"])
    if re.search(r"^\s+communication", one, re.M):
        failures.append("one rank plans communication")
    for extra, want in (
            (["--world-size=2"], "launch the ranks with mpirun -np 2"),
            (["--zero=4", "--plan-only", "--world-size=2"],
             "zero=4: no such ZeRO stage")):
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
    args = train_args(memfit_run, models, 2, 32, 100000, [
        "--optimizer=sgd", "--lr=0.1"])
    env = dict(os.environ, **MPI_ENV)
    launch = subprocess.Popen(["mpirun", "-np", "2"] + args, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    failures = []
    time.sleep(3)
    ranks = [p for p in ranks_of(launch)
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


def resume(memfit_run, models, workdir):
    """Checkpoints of data-parallel runs lose nothing:
    - 2 ranks killed with SIGKILL (a rank, at seeded random times: in a
      step or a checkpoint's write) and resumed with --resume until done
      end with the uninterrupted 2-rank run's checkpoint, byte for byte;
    - SIGTERM to one rank: every rank stops after the same step (they
      agree before each step), rank 0 writes the checkpoint and says how to
      resume, and resuming ends byte for byte as the uninterrupted run;
    - under ZeRO stage 1 (a checkpoint file per rank), a rank killed and
      the run resumed end with both files byte for byte as uninterrupted;
    - a checkpoint written by 2 ranks resumes on 1 process with the global
      batch, and one of 1 process on 2 ranks: the end states agree with the
      uninterrupted runs within 1e-5 (the sums are taken in another order).
    """
    import random
    from memfit_test.kill_resume import checkpoint_step
    steps, every = 400, 20
    sgd = ["--optimizer=sgd", "--momentum=0.9", "--lr=0.05",
           f"--save-every={every}"]
    env = dict(os.environ, **MPI_ENV)
    failures = []

    def command(ranks, folder, todo, resume_from=False):
        ckpt = os.path.join(folder, "ckpt")
        args = train_args(memfit_run, models, 4 // ranks, 32, todo,
                          sgd + [f"--checkpoint={ckpt}"])
        if resume_from:
            args.append(f"--resume={ckpt}")
        return (["mpirun", "-np", str(ranks)] if ranks > 1 else []) + args

    def complete(ranks, folder):
        """Runs (resuming when a checkpoint exists) until `steps` are done."""
        ckpt = os.path.join(folder, "ckpt")
        done = checkpoint_step(ckpt)
        if done < steps:
            out = subprocess.run(command(ranks, folder, steps - done,
                                         os.path.exists(ckpt)),
                                 env=env, capture_output=True, text=True,
                                 timeout=600)
            if out.returncode:
                failures.append(f"{folder}: resuming failed:\n{out.stderr}")
        return open(ckpt, "rb").read() if os.path.exists(ckpt) else b""

    def reference(ranks):
        folder = os.path.join(workdir, f"reference-{ranks}")
        os.makedirs(folder)
        return complete(ranks, folder)

    ref2, ref1 = reference(2), reference(1)
    rng = random.Random(33)
    for case in range(2):
        folder = os.path.join(workdir, f"kill-{case}")
        os.makedirs(folder)
        launch = subprocess.Popen(command(2, folder, steps), env=env,
                                  stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        # After the first checkpoint, a random time into the steps and
        # saves that follow.
        wait_for(os.path.join(folder, "ckpt"), launch)
        time.sleep(rng.uniform(0.0, 0.5))
        victims = ranks_of(launch)
        if victims:
            os.kill(rng.choice(victims), signal.SIGKILL)
        launch.wait(timeout=120)
        wait_gone(victims)
        at = checkpoint_step(os.path.join(folder, "ckpt"))
        got = complete(2, folder)
        same = got == ref2
        print(f"kill {case}: a rank killed with the checkpoint at step {at}; "
              f"resumed to {steps}: {'equal' if same else 'DIFFERENT'}")
        if not same:
            failures.append(f"kill {case}: the resumed checkpoint differs "
                            "from the uninterrupted run's")
        if at >= steps:
            failures.append(f"kill {case}: the kill came after the last "
                            "step; nothing was interrupted")

    folder = os.path.join(workdir, "sigterm")
    os.makedirs(folder)
    launch = subprocess.Popen(command(2, folder, steps), env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    wait_for(os.path.join(folder, "ckpt"), launch)
    # One rank alone gets the signal, as when ranks see it at different
    # times: the ranks agree before the next step, and both stop there.
    victims = ranks_of(launch)
    if victims:
        os.kill(victims[-1], signal.SIGTERM)
    out, err = launch.communicate(timeout=120)
    said = re.findall(r"rank \d+: stopped by SIGTERM after step (\d+)", err)
    print(f"SIGTERM: exit {launch.returncode}, {len(said)} message(s) "
          f"{said[:1]}")
    if len(said) != 1:
        failures.append(f"SIGTERM: expected rank 0's one message, got:\n"
                        f"{err[-1500:]}")
    elif checkpoint_step(os.path.join(folder, "ckpt")) != int(said[0]):
        failures.append("SIGTERM: the checkpoint is not at the step the "
                        "message gives")
    if complete(2, folder) != ref2:
        failures.append("SIGTERM: the resumed run ends elsewhere")

    # ZeRO stage 1: each rank's own checkpoint file; a rank killed and the
    # run resumed ends with both files equal to an uninterrupted run's. The
    # same under stage 3, where the files hold the parameters' rows too.
    def zero1_files(folder, killed, zero=1):
        ckpt = os.path.join(folder, "ckpt")
        files = [f"{ckpt}.rank-{r}-of-2" for r in (0, 1)]
        args = lambda todo, again: ["mpirun", "-np", "2"] + train_args(
            memfit_run, models, 2, 32, todo,
            sgd + [f"--zero={zero}", f"--checkpoint={ckpt}"] +
            ([f"--resume={ckpt}"] if again else []))
        if killed:
            launch = subprocess.Popen(args(steps, False), env=env,
                                      stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            wait_for(files[1], launch)
            time.sleep(rng.uniform(0.0, 0.5))
            victims = ranks_of(launch)
            if victims:
                os.kill(rng.choice(victims), signal.SIGKILL)
            launch.wait(timeout=120)
            wait_gone(victims)
        # The step the ranks will agree on: the earliest of their files.
        done = min(checkpoint_step(f) for f in files)
        if done < steps:
            out = subprocess.run(args(steps - done, os.path.exists(files[0])),
                                 env=env, capture_output=True, text=True,
                                 timeout=600)
            if out.returncode:
                failures.append(f"{folder}: zero={zero} failed:\n"
                                f"{out.stderr}")
        return [open(f, "rb").read() if os.path.exists(f) else b""
                for f in files], done
    wants = {}
    for zero in (1, 3):
        for name in ("reference", "killed"):
            os.makedirs(os.path.join(workdir, f"zero{zero}-{name}"))
        want, _ = zero1_files(os.path.join(workdir, f"zero{zero}-reference"),
                              False, zero)
        wants[zero] = want
        got, at = zero1_files(os.path.join(workdir, f"zero{zero}-killed"),
                              True, zero)
        print(f"zero={zero}: a rank killed with the checkpoints at step {at}; "
              f"resumed to {steps}: {'equal' if got == want else 'DIFFERENT'}")
        if at >= steps:
            failures.append(f"zero={zero}: the kill came after the last step")
        if got != want or not all(want):
            failures.append(f"zero={zero}: the resumed ranks' checkpoints "
                            "differ from the uninterrupted run's")
    want = wants[1]

    # The kill between two ranks' saves, made sure of: rank 1's newest file
    # replaced by its previous one (as if its save at step 40 never
    # landed). The ranks agree on step 20; rank 0 takes its previous file.
    behind = os.path.join(workdir, "zero1-behind")
    os.makedirs(behind)
    ckpt = os.path.join(behind, "ckpt")
    subprocess.run(["mpirun", "-np", "2"] + train_args(
        memfit_run, models, 2, 32, 2 * every,
        sgd + ["--zero=1", f"--checkpoint={ckpt}"]), env=env, check=True,
        capture_output=True, timeout=600)
    os.replace(f"{ckpt}.rank-1-of-2.prev", f"{ckpt}.rank-1-of-2")
    got, at = zero1_files(behind, False)
    print(f"zero=1: rank 1 a save behind (its file at step {at}, rank 0's at "
          f"{2 * every}): "
          f"resumed to {steps}: {'equal' if got == want else 'DIFFERENT'}")
    if got != want:
        failures.append("zero=1: resuming ranks a save apart does not end "
                        "as the uninterrupted run")

    half = steps // 2
    for first, then, ref in ((2, 1, ref1), (1, 2, ref2)):
        folder = os.path.join(workdir, f"from-{first}-to-{then}")
        os.makedirs(folder)
        subprocess.run(command(first, folder, half), env=env, check=True,
                       capture_output=True, timeout=600)
        got = complete(then, folder)
        path = os.path.join(folder, "ckpt")
        ref_path = os.path.join(workdir, "ref.ckpt")
        with open(ref_path, "wb") as f:
            f.write(ref)
        a, b = read_checkpoint(path), read_checkpoint(ref_path)
        worst = max(float(np.max(np.abs(a[n].astype(np.float64) - b[n])))
                    / max(1.0, float(np.max(np.abs(b[n])))) for n in b)
        print(f"{first} rank(s) to step {half}, then {then} to {steps}: "
              f"worst scaled difference {worst:.2e} from {then} rank(s) "
              "throughout")
        if set(a) != set(b) or worst > 1e-5:
            failures.append(f"from {first} to {then} ranks: {worst:.2e}")
    return report("data-parallel-resume", failures)


def assemble(paths, shapes=None):
    """{name: array} of a checkpoint saved as rank files (ZeRO stage >= 1):
    each optimizer state's slices put together in rank order and cut to its
    parameter's rows; everything else from the first file. One path: that
    file as it is. With `shapes` ({name: whole shape}, stage 3, where the
    parameters are rows too), each variable with fewer rows than its
    shape's is put together and cut."""
    files = [read_checkpoint(p) for p in paths]
    whole = dict(files[0])
    if len(files) == 1:
        return whole
    if shapes is not None:
        for name in whole:
            if whole[name].ndim and whole[name].shape[0] < shapes[name][0]:
                whole[name] = np.concatenate([f[name] for f in files])[
                    :shapes[name][0]]
        return whole
    for name in whole:
        # The parameter it is a state of: the longest prefix at a '.'.
        parts = name.split(".")
        owners = [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]
        param = next((whole[o] for o in owners if o in whole), None)
        if param is None or param.ndim == 0 or whole[name].ndim == 0 or \
                whole[name].shape[0] == param.shape[0]:
            continue
        whole[name] = np.concatenate([f[name] for f in files])[
            :param.shape[0]]
    return whole


def reshard(memfit_run, models, workdir):
    """ZeRO stage 1 checkpoints at another world size: a run saved by 2
    ranks (a file per rank, the momentum buffers sliced) resumes on 3
    ranks, one of 3 ranks on 1 process, and one of 1 process on 2 ranks.
    Stage 3 (the parameters sliced too) from 2 ranks to 1 process and back.
    Each ends where the run that kept its last world size throughout ends,
    within 1e-5 of each tensor's largest value (the sums of the gradients
    over the ranks are taken in another order), every state put together
    from its rank files; and the index names the files of the last save.
    SGD with momentum, the global batch 6 (2 x 3, 3 x 2, 1 x 6).
    """
    steps, half = 40, 20
    env = dict(os.environ, **MPI_ENV)
    failures = []
    sgd = ["--optimizer=sgd", "--momentum=0.9", "--lr=0.05",
           "--save-every=10"]

    def train(ranks, folder, todo, resume, zero=1):
        ckpt = os.path.join(folder, "ckpt")
        args = train_args(memfit_run, models, 6 // ranks, 32, todo,
                          sgd + [f"--checkpoint={ckpt}"] +
                          ([f"--zero={zero}"] if ranks > 1 else []) +
                          ([f"--resume={ckpt}"] if resume else []))
        done = subprocess.run(
            (["mpirun", "-np", str(ranks)] if ranks > 1 else []) + args,
            env=env, capture_output=True, text=True, timeout=600)
        if done.returncode:
            failures.append(f"{folder}: {ranks} rank(s) failed:\n"
                            f"{done.stdout[-800:]}{done.stderr[-1500:]}")
        return done.stdout

    def files(folder, ranks):
        ckpt = os.path.join(folder, "ckpt")
        return [ckpt] if ranks == 1 else \
            [f"{ckpt}.rank-{r}-of-{ranks}" for r in range(ranks)]

    refs = {}
    for ranks in (1, 2, 3):
        folder = os.path.join(workdir, f"reference-{ranks}")
        os.makedirs(folder)
        train(ranks, folder, steps, False)
        refs[ranks] = assemble(files(folder, ranks))

    # Stage 3 on 2 ranks throughout: the parameters' rows put together.
    shapes = {name: value.shape for name, value in refs[1].items()}
    folder = os.path.join(workdir, "reference-2-zero3")
    os.makedirs(folder)
    train(2, folder, steps, False, zero=3)
    refs3 = assemble(files(folder, 2), shapes)

    for first, then, zero in ((2, 3, 1), (3, 1, 1), (1, 2, 1), (2, 1, 3),
                              (1, 2, 3)):
        folder = os.path.join(workdir, f"from-{first}-to-{then}-zero{zero}")
        os.makedirs(folder)
        train(first, folder, half, False, zero)
        out = train(then, folder, steps - half, True, zero)
        said = re.search(r"resumed \S+ \(saved by (\d+) ranks?\) on (\d+) "
                         r"ranks? at step (\d+)", out)
        if not said or said.groups() != (str(first), str(then), str(half)):
            failures.append(f"from {first} to {then}: no 'resumed ... "
                            f"(saved by {first} ...) on {then} ... at step "
                            f"{half}' line:\n{out[-800:]}")
        if failures:
            break
        want = refs3 if zero == 3 and then > 1 else refs[then]
        got = assemble(files(folder, then), shapes if zero == 3 else None)
        worst = max(float(np.max(np.abs(got[n].astype(np.float64) - want[n])))
                    / max(1.0, float(np.max(np.abs(want[n])))) for n in want)
        states = sum(1 for n in want if n.endswith(".momentum_buffer"))
        print(f"zero={zero}: {first} rank(s) to step {half}, then {then} to "
              f"{steps}: {len(want)} variables ({states} momentum buffers), worst "
              f"scaled difference {worst:.2e} from {then} rank(s) throughout")
        if set(got) != set(want) or worst > 1e-5 or not states:
            failures.append(f"from {first} to {then} ranks: {worst:.2e}")
        if then > 1:
            index = open(os.path.join(folder, "ckpt.index")).read()
            if f'"ranks": {then}' not in index:
                failures.append(f"from {first} to {then}: the index says "
                                f"{index}")
    return report("data-parallel-reshard", failures)


def buckets(memfit_run, models, workdir):
    """Gradients all-reduced in buckets (the default, 25 MiB: gpt_ts's
    gradients are one bucket) against one all-reduce per gradient
    (--bucket=0), on 2 ranks, AdamW, under stages 0 and 1, with and without
    2 micro-batches: the same losses and checkpoints byte for byte (the
    mean of two ranks' values does not depend on how they are grouped), and
    the bucketed step has fewer collectives."""
    failures = []
    for zero, k in ((0, 1), (1, 1), (0, 2)):
        files, counts = {}, {}
        for bucket in ("25MiB", "0"):
            folder = os.path.join(workdir, f"zero{zero}-k{k}-{bucket}")
            os.makedirs(folder)
            ckpt = os.path.join(folder, "ckpt")
            out = mpirun(2, train_args(memfit_run, models, 2 // k, 32, 8, [
                "--optimizer=adamw", f"--zero={zero}", f"--accumulate={k}",
                f"--bucket={bucket}", f"--checkpoint={ckpt}",
                f"--losses={os.path.join(folder, 'losses.csv')}"]))
            steps = re.search(r"^compiled .*?, (\d+) collectives", out, re.M)
            counts[bucket] = int(steps.group(1)) if steps else -1
            names = [ckpt + f".rank-{r}-of-2" for r in range(2)] if zero \
                else [ckpt]
            files[bucket] = [open(n, "rb").read() for n in names] + [
                open(os.path.join(folder, "losses.csv")).read()]
        label = f"zero={zero}" + (f", {k} micro-batches" if k > 1 else "")
        print(f"{label}: {counts['25MiB']} collectives in buckets, "
              f"{counts['0']} one per gradient")
        if files["25MiB"] != files["0"]:
            failures.append(f"{label}: buckets change the losses or the "
                            "checkpoint")
        if not 0 < counts["25MiB"] < counts["0"]:
            failures.append(f"{label}: buckets did not cut the collectives "
                            f"({counts['25MiB']} against {counts['0']})")
    return report("data-parallel-buckets", failures)


def eightbit(memfit_run, models, workdir):
    """8-bit optimizer states (adamw8bit) under ZeRO stages 0 to 3 on 2
    ranks, llama_ts: each rank stores its rows of the same states in 8 bits
    (which states, by the whole state's size), half of stage 0's codes, and
    every stage prints stage 0's losses to the bit (each rank's rows are
    whole blocks here); a checkpoint of them resumes at the world size that
    saved it, and at another one is refused with a message."""
    failures = []
    losses, codes = {}, {}
    for zero in (0, 1, 2, 3):
        folder = os.path.join(workdir, f"zero{zero}")
        os.makedirs(folder)
        out = mpirun(2, [memfit_run, os.path.join(models, "llama_ts.onnx"),
                         "--train", "--device=host", "--loss=cross-entropy",
                         f"--corpus={os.path.join(models, 'corpus.txt')}",
                         "--input-shape=input_ids=2x16", "--steps=6",
                         "--optimizer=adamw8bit", f"--zero={zero}",
                         "--memory-report",
                         f"--checkpoint={os.path.join(folder, 'ckpt')}",
                         f"--losses={os.path.join(folder, 'losses.csv')}"])
        match = re.search(r"^    state codes\s+([0-9,]+)", out, re.M)
        codes[zero] = int(match.group(1).replace(",", "")) if match else 0
        losses[zero] = open(os.path.join(folder, "losses.csv")).read()
        print(f"zero={zero}: 8-bit codes {codes[zero]:,} bytes a rank")
        if zero and losses[zero] != losses[0]:
            failures.append(f"zero={zero}: the losses differ from zero=0's")
        if zero and codes[zero] * 2 != codes[0]:
            failures.append(f"zero={zero}: a rank's codes {codes[zero]} are "
                            f"not half of zero=0's {codes[0]}")
    # Stage 1's rank files onto one process: refused, with what to do.
    done = subprocess.run(
        [memfit_run, os.path.join(models, "llama_ts.onnx"), "--train",
         "--device=host", "--loss=cross-entropy",
         f"--corpus={os.path.join(models, 'corpus.txt')}",
         "--input-shape=input_ids=4x16", "--steps=1",
         "--optimizer=adamw8bit",
         f"--resume={os.path.join(workdir, 'zero1', 'ckpt')}"],
        capture_output=True, text=True)
    said = done.stderr.strip().splitlines()[-1] if done.stderr else ""
    print(f"2 ranks' 8-bit states onto 1: {said}")
    if done.returncode == 0 or "resumes only at the world size" not in said:
        failures.append("8-bit states resumed at another world size")
    return report("data-parallel-8bit", failures)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    os.makedirs(rest[2], exist_ok=True)
    sys.exit({"curve": curve, "plan": plan, "fault": fault,
              "resume": resume, "reshard": reshard,
              "buckets": buckets, "eightbit": eightbit}[mode](*rest))
