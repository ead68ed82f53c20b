"""Configurations of one command run side by side: every round runs each
configuration once, in turn, so that a noisy machine's drift falls on all
of them alike (bench/offload-step.py, bench/data-parallel-step.py)."""
import argparse
import os

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
