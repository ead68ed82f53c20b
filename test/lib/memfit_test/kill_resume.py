#!/usr/bin/env python3
"""Kills memfit-run while it trains and resumes it: the end state must be the
uninterrupted run's, bit for bit.

  kill_resume.py MEMFIT_RUN MODELS WORKDIR [--cases 20] [--seed 37]
                 [--steps 24]

gpt_ts (2x16 tokens of the shipped corpus, AdamW) is compiled twice with
--save-executable, in fp32 and in fp16 with dynamic loss scaling (a huge
initial scale and a growth interval of 2, so steps are skipped and the scale
shrinks and grows), and every run loads one of the two executables. A
reference run takes STEPS steps in one go and writes its checkpoint.

Each of the CASES cases (a seeded RNG draws them, so a failure reproduces)
trains the same STEPS steps with --checkpoint and a random --save-every, kills
the run with SIGKILL once or twice, and resumes it with --resume and the
remaining --steps (from the checkpoint's step counter, or from scratch when
no checkpoint was written yet) until a run completes. A kill lands
  step:        a random time into the step after the step line k: in a step
               or the save after it;
  checkpoint:  inside the write of a checkpoint (MEMFIT_TEST_CHECKPOINT_PAUSE_MS
               makes the writer sleep after every variable; the kill comes
               a random time after the temporary appears, and the temporary
               must still be there after the kill);
  time:        a random time after the process started (loading, compiling
               nothing, reading the checkpoint, a step or a save).
Three more cases send real signals: SIGTERM and SIGINT after a random step
(the run must finish its step, write the checkpoint, exit with 128 + the
signal's number and print 'stopped by SIG... after step j of STEPS;
checkpoint in PATH; resume with --resume=PATH --steps=STEPS-j'; the printed
flags then finish the run), and a second SIGINT while the stopping run writes
its checkpoint (exit 130 at once, the temporary left, the checkpoint on disk
loadable).

Every case must end in a checkpoint equal to the reference's: every variable
(parameters, AdamW's moments and step count, the loss scale and its growth
tracker, the step counter, which is the data position) bit for bit, and the
whole file byte for byte; every step line any run printed must equal the
reference's for that step (loss, learning rate, scale, skipped); and no
temporary may be left in the case's folder. Prints a line per case and
PASS kill-resume <cases>/<cases> (or FAIL lines).
"""

import argparse
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

CONFIGS = {
    "fp32": [],
    "fp16": ["--fp16", "--loss-scale-init=4194304", "--loss-scale-interval=2"],
}
# The checkpoint writer's sleep after the header and every variable (ms) in
# runs whose checkpoint write is to be killed.
PAUSE_MS = 3
STEP_LINE = re.compile(r"^step (\d+)/(\d+) (.*) [0-9.]+ ms(.*)$")
STOPPED = re.compile(r"memfit-run: stopped by (SIG[A-Z]+) after step (\d+) of "
                     r"(\d+); checkpoint in (\S+); resume with --resume=(\S+) "
                     r"--steps=(\d+) and the other flags of this run")


def read_checkpoint(path):
    """(header, {name: bytes}) of a memfit checkpoint (runtime/src/Checkpoint.cpp)."""
    data = open(path, "rb").read()
    newline = data.index(b"\n")
    magic, size = data[:newline].decode().split(" ")
    assert magic == "memfit-checkpoint", path
    start = newline + 1
    header = json.loads(data[start:start + int(size)])
    blob = data[start + int(size):]
    return header, {v["name"]: blob[v["offset"]:v["offset"] + v["bytes"]]
                    for v in header["variables"]}


def checkpoint_step(path):
    """The step counter (an f32 scalar) of a checkpoint, or 0 with none."""
    if not os.path.exists(path):
        return 0
    import struct
    return int(struct.unpack("<f", read_checkpoint(path)[1]["step"])[0])


def temporaries(folder, pid=None):
    """The checkpoint's temporaries in `folder` (of process `pid`), sorted:
    the writer's names are ckpt.tmp-<pid>-<n>."""
    prefix = "ckpt.tmp-" + (f"{pid}-" if pid else "")
    return sorted(n for n in os.listdir(folder) if n.startswith(prefix))


class Run:
    """A memfit-run process whose stdout lines arrive on a queue."""

    def __init__(self, args, env):
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines, self.out, self.err = queue.Queue(), [], []
        self.ended = False  # the end of stdout was taken from `lines`
        threading.Thread(target=self._read, daemon=True).start()
        self.err_reader = threading.Thread(
            target=lambda: self.err.extend(self.proc.stderr), daemon=True)
        self.err_reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.out.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def wait_for_step(self, k):
        """True once the line of step k is out; False if the run ended first."""
        while not self.ended:
            line = self.lines.get()
            if line is None:
                self.ended = True
                return False
            m = STEP_LINE.match(line)
            if m and int(m.group(1)) == k:
                return True
        return False

    def temporaries(self, folder):
        """The temporaries this run's checkpoint writer has in `folder`."""
        return temporaries(folder, self.proc.pid)

    def wait_for_temporary(self, folder, nth, before=()):
        """True once the nth temporary this run created (not counting the
        names in `before`) has appeared and is still there; False if the run
        ended first."""
        order = []
        while self.proc.poll() is None:
            now = self.temporaries(folder)
            order += [n for n in now if n not in order and n not in before]
            if len(order) >= nth and order[nth - 1] in now:
                return True
            time.sleep(0.0005)
        return False

    def finish(self):
        self.proc.wait()
        while not self.ended:
            self.ended = self.lines.get() is None
        self.err_reader.join()
        return self.proc.returncode


class Driver:
    def __init__(self, args):
        self.args = args
        self.models = args.models
        self.steps = args.steps
        self.env = dict(os.environ)
        self.env.setdefault("MEMFIT_HOST_THREADS", "1")
        self.env.pop("MEMFIT_TEST_CHECKPOINT_PAUSE_MS", None)
        self.cpus = queue.Queue()
        for cpu in sorted(os.sched_getaffinity(0)):
            self.cpus.put(cpu)
        self.taskset = shutil.which("taskset")
        self.reference = {}  # config -> (checkpoint bytes, step lines)
        self.step_seconds = {}

    def command(self, config, folder, steps, save_every, resume, cpu):
        ckpt = os.path.join(folder, "ckpt")
        args = ([self.taskset, "-c", str(cpu)] if self.taskset else []) + [
            self.args.memfit_run, os.path.join(self.args.workdir, config),
            "--train", "--device=host",
            f"--corpus={os.path.join(self.models, 'corpus.txt')}",
            f"--steps={steps}", f"--checkpoint={ckpt}"]
        if save_every:
            args.append(f"--save-every={save_every}")
        if resume:
            args.append(f"--resume={ckpt}")
        return args

    def compile(self, config):
        """The executable of `config`, its kernels compiled into the cache."""
        cpu = self.cpus.get()
        try:
            args = ([self.taskset, "-c", str(cpu)] if self.taskset else []) + [
                self.args.memfit_run, os.path.join(self.models, "gpt_ts.onnx"),
                "--train", "--device=host", "--loss=cross-entropy",
                "--input-shape=input_ids=2x16", "--steps=0",
                f"--corpus={os.path.join(self.models, 'corpus.txt')}",
                f"--save-executable={os.path.join(self.args.workdir, config)}"
            ] + CONFIGS[config]
            done = subprocess.run(args, capture_output=True, text=True,
                                  env=self.env)
            if done.returncode:
                raise RuntimeError(f"compiling {config} failed:\n{done.stderr}"
                                   f"\n$ {' '.join(args)}")
            folder = os.path.join(self.args.workdir, f"reference-{config}")
            os.makedirs(folder)
            start = time.monotonic()
            run = Run(self.command(config, folder, self.steps, 0, False, cpu),
                      self.env)
            if run.finish():
                raise RuntimeError(f"the reference run of {config} failed:\n"
                                   f"{''.join(run.err)}")
            self.step_seconds[config] = (time.monotonic() - start) / self.steps
            lines = step_lines(run.out)
            if sorted(lines) != list(range(1, self.steps + 1)):
                raise RuntimeError(f"the reference run of {config} printed "
                                   f"steps {sorted(lines)}")
            self.reference[config] = (
                open(os.path.join(folder, "ckpt"), "rb").read(), lines)
            # The writer sleeps after the header and after every variable.
            self.pauses = 1 + len(read_checkpoint(os.path.join(folder, "ckpt"))[1])
        finally:
            self.cpus.put(cpu)

    def compare(self, config, folder, runs, failures):
        """The case's end state against the reference; a summary."""
        ref_bytes, ref_lines = self.reference[config]
        path = os.path.join(folder, "ckpt")
        got = open(path, "rb").read()
        ref_header, ref_vars = read_checkpoint_bytes(ref_bytes)
        _, got_vars = read_checkpoint(path)
        differing = [n for n in ref_vars if got_vars.get(n) != ref_vars[n]]
        if set(got_vars) != set(ref_vars):
            failures.append(f"variables {sorted(set(got_vars) ^ set(ref_vars))} "
                            f"are in one checkpoint only")
        if differing:
            failures.append(f"{len(differing)} variables differ from the "
                            f"uninterrupted run's: {differing[:4]}")
        if got != ref_bytes:
            failures.append("the checkpoint file differs from the "
                            "uninterrupted run's")
        for out in runs:
            for step, text in step_lines(out).items():
                if ref_lines.get(step) != text:
                    failures.append(f"step {step} printed '{text}', the "
                                    f"uninterrupted run '{ref_lines.get(step)}'")
        left = temporaries(folder)
        if left:
            failures.append(f"temporaries left: {left}")
        kinds = {}
        for v in ref_header["variables"]:
            kinds[v["kind"]] = kinds.get(v["kind"], 0) + 1
        return (f"{len(ref_vars) - len(differing)}/{len(ref_vars)} variables "
                f"bit for bit ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})")

    def kill_run(self, run, kill, folder, config, start):
        """Carries out one planned SIGKILL on `run`: (what happened, where it
        landed), or None when the run ended before the kill."""
        what = self.send_kill(run, kill, folder, config, start)
        if what is None or run.finish() != -signal.SIGKILL:
            return None
        if kill["kind"] == "checkpoint" and not run.temporaries(folder):
            return ("MISSED: no temporary left, the kill came after the "
                    "checkpoint's write", "missed")
        inside = bool(run.temporaries(folder))
        return what + (" (inside a checkpoint write)" if inside else ""), (
            "inside a checkpoint write" if inside else "outside a write")

    def send_kill(self, run, kill, folder, config, start):
        rng_delay = kill["delay"]
        if kill["kind"] == "step":
            if not run.wait_for_step(kill["step"]):
                return None
            time.sleep(rng_delay * self.step_seconds[config])
            run.proc.send_signal(signal.SIGKILL)
            return f"SIGKILL {rng_delay:.2f} of a step after step {kill['step']}"
        if kill["kind"] == "checkpoint":
            if not run.wait_for_temporary(folder, kill["save"]):
                return None
            time.sleep(rng_delay)
            run.proc.send_signal(signal.SIGKILL)
            return (f"SIGKILL in checkpoint write {kill['save']} of the run "
                    f"(from step {start}), {rng_delay * 1e3:.0f} ms in")
        time.sleep(kill["delay"])
        if run.proc.poll() is not None:
            return None
        run.proc.send_signal(signal.SIGKILL)
        return f"SIGKILL {kill['delay']:.2f} s after the start"

    def plan_kill(self, rng, kind, config, start, save_every):
        """A random SIGKILL of `kind` for a run from step `start`, or None
        when that run has no room for one."""
        n = self.steps
        if kind == "step":
            # Three steps to spare: the kill comes up to a step after the
            # line, which a loaded machine may deliver late.
            if start + 1 > n - 4:
                return None
            return {"kind": "step", "step": rng.randint(start + 1, n - 4),
                    "delay": rng.random()}
        if kind == "checkpoint":
            saves = [s for s in range(start + 1, n) if s % save_every == 0] + [n]
            # The write of a checkpoint takes about (variables + 1) * PAUSE_MS.
            return {"kind": "checkpoint",
                    "save": rng.randint(1, min(len(saves), 3)),
                    "delay": rng.uniform(0.0, 0.3) * self.pauses * PAUSE_MS / 1e3,
                    "pause": True}
        total = 0.15 + (n - start) * self.step_seconds[config]
        return {"kind": "time", "delay": rng.uniform(0.0, total)}

    def kill_case(self, index, rng):
        config = ["fp32", "fp16"][(index // 2) % 2]
        first = ["step", "checkpoint"][index % 2]
        save_every = rng.randint(2, 5) if first == "step" else rng.randint(3, 6)
        second = rng.choice([None, "step", "checkpoint", "time"])
        kinds = [first] + ([second] if second else [])
        folder = os.path.join(self.args.workdir, f"case{index:02d}")
        os.makedirs(folder)
        failures, events, outs, landed = [], [], [], []
        ckpt = os.path.join(folder, "ckpt")
        finished = False
        cpu = self.cpus.get()
        try:
            for attempt in range(8):
                start = checkpoint_step(ckpt)
                if start == self.steps:
                    break
                kill = self.plan_kill(rng, kinds.pop(0), config,
                                      start, save_every) if kinds else None
                env = self.env
                if kill and kill.get("pause"):
                    env = dict(self.env, MEMFIT_TEST_CHECKPOINT_PAUSE_MS=str(PAUSE_MS))
                run = Run(self.command(config, folder, self.steps - start,
                                       save_every, os.path.exists(ckpt), cpu),
                          env)
                killed = self.kill_run(run, kill, folder, config, start) if kill else None
                rc = run.finish()
                outs.append(run.out)
                if killed:
                    events.append(killed[0])
                    landed.append(killed[1])
                    if killed[1] == "missed":
                        failures.append(killed[0])
                    continue
                if rc != 0:
                    failures.append(f"a run from step {start} exited with {rc}:"
                                    f" {''.join(run.err)[-500:]}")
                    break
                finished = True
                break
            if not finished and checkpoint_step(ckpt) != self.steps:
                failures.append("the run did not finish")
            resumed = len(outs) - 1
            summary = self.compare(config, folder, outs, failures) if \
                os.path.exists(ckpt) else "no checkpoint"
        finally:
            self.cpus.put(cpu)
        text = (f"case {index:2d}: {config} save-every {save_every}: "
                f"{'; '.join(events) or 'no kill landed'}; {resumed} resumed "
                f"run(s); {summary}")
        if not events:
            failures.append("no kill landed")
        return text, failures, landed

    def signal_case(self, name, signo, double, rng):
        """SIGTERM or SIGINT after a random step (with `double`, a second
        SIGINT while the stopping run writes its checkpoint)."""
        config = "fp16" if signo == signal.SIGTERM else "fp32"
        save_every = 5
        folder = os.path.join(self.args.workdir, name)
        os.makedirs(folder)
        failures, outs = [], []
        # Not a step with a periodic save: the checkpoint written after the
        # signal is the stop's own.
        k = rng.choice([s for s in range(2, self.steps - 2) if s % save_every])
        env = dict(self.env, MEMFIT_TEST_CHECKPOINT_PAUSE_MS=str(PAUSE_MS)) if double else self.env
        cpu = self.cpus.get()
        try:
            run = Run(self.command(config, folder, self.steps, save_every,
                                   False, cpu), env)
            if not run.wait_for_step(k):
                run.finish()
                return f"{name}: the run ended before step {k}", ["no signal sent"], []
            before = run.temporaries(folder)
            run.proc.send_signal(signo)
            if double:
                # The checkpoint of the stop (or the periodic one at k).
                if not run.wait_for_temporary(folder, 1, before):
                    failures.append("no checkpoint write after the first SIGINT")
                run.proc.send_signal(signal.SIGINT)
            rc = run.finish()
            outs.append(run.out)
            err = "".join(run.err)
            if rc != 128 + signo:
                failures.append(f"exit status {rc}, expected {128 + signo}: {err[-400:]}")
            ckpt = os.path.join(folder, "ckpt")
            if double:
                if "second signal: exiting now" not in err:
                    failures.append(f"no second-signal message: {err[-300:]}")
                if not run.temporaries(folder):
                    failures.append("the second SIGINT did not land in the write")
                at = checkpoint_step(ckpt)
                what = (f"SIGINT after step {k}, a second one in the checkpoint "
                        f"write: exit {rc}, the checkpoint on disk at step {at}")
                resume = ["--resume=" + ckpt] if os.path.exists(ckpt) else []
                more = self.steps - at
            else:
                m = STOPPED.search(err)
                if not m:
                    failures.append(f"no resume message: {err[-400:]}")
                    return f"{name}: no resume message", failures, []
                sig, stop, of, where, resume_path, more = m.groups()
                stop, more = int(stop), int(more)
                at = checkpoint_step(ckpt)
                if sig != signal.Signals(signo).name or int(of) != self.steps:
                    failures.append(f"message names {sig} of {of}")
                if where != ckpt or resume_path != ckpt:
                    failures.append(f"message names {where}, {resume_path}")
                if not (k <= stop < self.steps) or at != stop or more != self.steps - stop:
                    failures.append(f"stopped after step {stop} (signal after "
                                    f"{k}), checkpoint at {at}, --steps={more}")
                printed = step_lines(run.out)
                if max(printed) != stop:
                    failures.append(f"the last step printed is {max(printed)}, "
                                    f"not {stop}")
                what = (f"{sig} after step {k}: stopped after step {stop}, exit "
                        f"{rc}, 'resume with --resume={os.path.basename(resume_path)} "
                        f"--steps={more}'")
                resume = ["--resume=" + resume_path]
            args = self.command(config, folder, more, save_every, False, cpu) + resume
            run = Run(args, self.env)
            if run.finish():
                failures.append(f"the resumed run failed: {''.join(run.err)[-400:]}")
                return f"{name}: {what}", failures, []
            outs.append(run.out)
            summary = self.compare(config, folder, outs, failures)
        finally:
            self.cpus.put(cpu)
        return f"{name}: {what}; resumed: {summary}", failures, []


def read_checkpoint_bytes(data):
    newline = data.index(b"\n")
    size = int(data[:newline].decode().split(" ")[1])
    header = json.loads(data[newline + 1:newline + 1 + size])
    blob = data[newline + 1 + size:]
    return header, {v["name"]: blob[v["offset"]:v["offset"] + v["bytes"]]
                    for v in header["variables"]}


def step_lines(out):
    """{global step: the step line without its time and step count}."""
    lines = {}
    for line in out:
        m = STEP_LINE.match(line.rstrip("\n"))
        if m:
            lines[int(m.group(1))] = m.group(3) + m.group(4)
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("memfit_run")
    parser.add_argument("models")
    parser.add_argument("workdir")
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--seed", type=int, default=37)
    parser.add_argument("--steps", type=int, default=24)
    args = parser.parse_args()
    args.memfit_run = os.path.abspath(shutil.which(args.memfit_run) or args.memfit_run)
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    driver = Driver(args)
    began = time.monotonic()
    workers = max(1, driver.cpus.qsize())
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            list(pool.map(driver.compile, CONFIGS))
        except RuntimeError as error:
            print(f"FAIL kill-resume: {error}")
            return 1
        # One RNG per case, drawn from the seed, so a case does not depend on
        # the order the pool runs them in.
        seeds = random.Random(args.seed)
        rngs = [random.Random(seeds.getrandbits(64)) for _ in range(args.cases + 3)]
        jobs = [pool.submit(driver.kill_case, i, rngs[i]) for i in range(args.cases)]
        jobs += [pool.submit(driver.signal_case, name, signo, double, rngs[args.cases + j])
                 for j, (name, signo, double) in enumerate([
                     ("sigterm", signal.SIGTERM, False),
                     ("sigint", signal.SIGINT, False),
                     ("sigint-twice", signal.SIGINT, True)])]
        results = [job.result() for job in jobs]
    passed, landed, failed = 0, {}, []
    for i, (text, failures, kinds) in enumerate(results):
        print(text)
        for f in failures:
            print(f"  FAIL: {f}")
        if i < args.cases:
            passed += not failures
            for kind in kinds:
                landed[kind] = landed.get(kind, 0) + 1
        if failures:
            failed.append(text.split(":")[0])
    print(f"{sum(landed.values())} SIGKILLs in {args.cases} cases ("
          f"{', '.join(f'{n} {k}' for k, n in sorted(landed.items()))}); "
          f"{time.monotonic() - began:.1f} s")
    if failed:
        print(f"FAIL kill-resume: {passed}/{args.cases} kill cases; failed: "
              f"{', '.join(failed)}")
        return 1
    print(f"PASS kill-resume {passed}/{args.cases}")
    print("PASS signals 3/3")
    return 0


if __name__ == "__main__":
    sys.exit(main())
