"""Configurations of one command run side by side: every round runs each
configuration once, in turn, so that a noisy machine's drift falls on all
of them alike (bench/offload-step.py, bench/data-parallel-step.py)."""
import argparse
import os
import re
import statistics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def arguments(doc, rounds, steps):
    """--rounds, --steps and --model (GPT-2 small from
    bench/make_gpt2_small.py)."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--model",
                        default=os.path.join(ROOT, "build/bench/gpt2-small.onnx"))
    return parser.parse_args()


def train_command(model, steps, flags):
    """memfit-run training `model` 1 x 128 with AdamW for `steps` steps on
    the host backend, its device on one thread (--host-threads=1)."""
    return [os.path.join(ROOT, "build/bin/memfit-run"), model, "--train",
            "--device=host", "--host-threads=1", "--loss=cross-entropy",
            "--input-shape=input_ids=1x128", "--optimizer=adamw",
            f"--steps={steps}"] + flags


def step_ms(out):
    """The median ms of memfit-run's steps in `out`, the first left out
    (page faults, the kernel cache)."""
    return statistics.median(
        float(m) for m in re.findall(r"^step \d+/\d+ loss \S+ lr \S+ "
                                     r"([0-9.]+) ms", out, re.M)[1:])


def last_loss(out):
    return re.search(r"last loss ([0-9.]+)", out).group(1)


def number(pattern, out, convert=float):
    """Group 1 of `pattern`'s first match in `out` (a line, with re.M),
    converted; 0 where it does not match."""
    found = re.search(pattern, out, re.M)
    return convert(found.group(1).replace(",", "")) if found else convert(0)


def interleave(configs, run, rounds):
    """{name: [run(flags) of each round]} for configs {name: flags}, and
    the set of the runs' last losses (their last element), which should
    hold one value."""
    results = {name: [] for name in configs}
    for _ in range(rounds):
        for name, flags in configs.items():
            results[name].append(run(flags))
    losses = {r[-1] for rs in results.values() for r in rs}
    return results, losses
