#!/usr/bin/env python3
"""PyTorch GradScaler reference for memfit-run's fp16 dynamic loss scaling.

Regenerate (from the repository root; needs torch, like make_train_refs.py):

    /opt/torchenv/bin/python test/models/make_grad_scaler_ref.py

Writes grad_scaler_ref.json: for each run of RUNS, PyTorch's mixed-precision
recipe -- the forward pass under torch.autocast("cpu", dtype=torch.float16),
the float32 cross-entropy of the float32 logits, backward from
scaler.scale(loss), scaler.step(AdamW), scaler.update() -- on the fixture's
weights and the corpus batches of memfit-run --corpus (the data, model setup
and AdamW settings of make_train_refs.py's curve section, whose functions are
imported, not copied), with a huge initial scale so that the run first backs
off step by step and then, every `interval` good steps, grows into an
overflow. Per step it records the scale the step used (scaler.get_scale()
before the update), whether the step was skipped (inf or NaN gradients: AdamW
not stepped, scale backed off), the loss, and the overflow threshold: the
smallest scale at which that step's gradients (same weights, same batch)
contain an inf or NaN, found by bisection to 1e-4. After the last step: the
scale, the growth tracker and AdamW's step count.

Why growth 4 and backoff 1/4 rather than GradScaler's 2 and 1/2: a step
skips iff scale >= threshold, and the threshold (65504 over the largest fp16
gradient element) varies from batch to batch over about 1.3 binades on these
2x16 batches, so a factor-2 ladder cannot stay far from every step's
threshold (from 1e12, step 23 uses a scale 1.2 % above PyTorch's threshold),
and there a different fp16 policy or rounding flips the decision. memfit
runs layer norms, softmax and element-wise ops in fp16 where autocast keeps
them in fp32, so its threshold is up to 1.6x lower for gpt (a LayerNorm bias
gradient, 0.38 at the first step, is then the largest fp16 value) and 26x
lower for llama (the gradient of the decomposed RMSNorm's mean + eps, 7.55
at the first step, is fp16 in memfit; autocast's largest fp16 gradient
there is 0.30). With a factor-4 ladder from 1.5 * 2**40 the runs visit
1.5 * 2**16 and 1.5 * 2**18 only, every visited scale at least 0.15 binade
(11 %) from PyTorch's threshold (asserted below; 0.20 for gpt, 0.31 for
llama), and memfit's thresholds, measured along its own runs
(check_loss_scaling.py thresholds), stay on the same sides (at least 0.19
binade away). llama runs with memfit's --keep-fp32 on its RMSNorm nodes, so
that the norms are fp32 on both sides as autocast has them; gpt runs
memfit's full fp16 policy. The scales are exact: 1.5 * 2**k in float32 and
in the %g of memfit's step lines.
"""

import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_train_refs as tr  # noqa: E402

OUT = "grad_scaler_ref.json"
SETTINGS = dict(batch=2, seq=16, steps=40, init_scale=1.5 * 2.0 ** 40, growth_factor=4.0,
                backoff_factor=0.25, growth_interval=3)
RUNS = {
    "gpt_ts": dict(model="gpt", keep_fp32=[]),
    "llama_ts": dict(model="llama", keep_fp32=["*norm*"]),
}
MIN_MARGIN = 0.15   # binades between a visited scale and PyTorch's threshold


def forward_loss(model, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        logits = model(x)
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1))


def overflow_threshold(model, x, y):
    """The smallest loss scale (to 1e-4) at which the gradients of this batch
    at the current weights hold an inf or NaN."""
    params = [p for p in model.parameters() if p.requires_grad]

    def overflows(scale):
        grads = torch.autograd.grad(forward_loss(model, x, y) * scale, params)
        return not all(bool(torch.isfinite(g).all()) for g in grads)

    lo, hi = 1.0, 2.0 ** 64
    assert not overflows(lo) and overflows(hi)
    while hi / lo > 1 + 1e-4:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if overflows(mid) else (mid, hi)
    return hi


def train(name, run, tokens):
    s, c = SETTINGS, tr.CURVE
    model = tr.build_model(run["model"])
    tr.load_from_onnx(model, os.path.join(HERE, f"{name}.onnx"))
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=c["lr"], betas=c["betas"], eps=c["eps"],
                            weight_decay=c["weight_decay"])
    scaler = torch.amp.GradScaler("cpu", init_scale=s["init_scale"],
                                  growth_factor=s["growth_factor"],
                                  backoff_factor=s["backoff_factor"],
                                  growth_interval=s["growth_interval"])
    toks = torch.from_numpy(tokens)
    first = next(model.parameters())

    def adamw_steps():
        return int(opt.state[first]["step"]) if first in opt.state else 0

    out = {"scale": [], "skipped": [], "loss": [], "overflow_threshold": []}
    for step in range(s["steps"]):
        offs = tr.batch_offsets(step, 0, len(tokens), s["batch"], s["seq"], 1)
        x = torch.stack([toks[o:o + s["seq"]] for o in offs])
        y = torch.stack([toks[o + 1:o + s["seq"] + 1] for o in offs])
        threshold = overflow_threshold(model, x, y)
        opt.zero_grad(set_to_none=True)
        loss = forward_loss(model, x, y)
        scale = scaler.get_scale()
        applied = adamw_steps()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        skipped = adamw_steps() == applied
        assert skipped == (scaler.get_scale() < scale), (name, step)
        assert skipped == (scale >= threshold), (name, step, scale, threshold)
        out["scale"].append(scale)
        out["skipped"].append(skipped)
        out["loss"].append(float(f"{loss.item():.7g}"))
        out["overflow_threshold"].append(float(f"{threshold:.6g}"))
    margins = [abs(math.log2(a / t)) for a, t in zip(out["scale"], out["overflow_threshold"])]
    assert min(margins) >= MIN_MARGIN, (name, min(margins), margins.index(min(margins)) + 1)
    state = scaler.state_dict()
    out.update(final_scale=state["scale"], final_growth_tracker=state["_growth_tracker"],
               adamw_steps=adamw_steps(),
               min_margin_binades=float(f"{min(margins):.4g}"),
               min_margin_step=margins.index(min(margins)) + 1)
    return dict(onnx_file=f"{name}.onnx", keep_fp32=run["keep_fp32"], **out)


def main():
    torch.set_num_threads(1)
    s, c = SETTINGS, tr.CURVE
    tokens = tr.encode(open(os.path.join(HERE, tr.CORPUS), "rb").read().decode("ascii"))
    runs = {}
    for name, run in RUNS.items():
        r = runs[name] = train(name, run, tokens)
        skipped = [i + 1 for i, k in enumerate(r["skipped"]) if k]
        print(f"{name}: {len(skipped)} of {s['steps']} steps skipped {skipped}; final scale "
              f"{r['final_scale']:g}, tracker {r['final_growth_tracker']}, AdamW steps "
              f"{r['adamw_steps']}; loss {r['loss'][0]:.6f} -> {r['loss'][-1]:.6f}; "
              f"smallest margin {r['min_margin_binades']:.3f} binade (step "
              f"{r['min_margin_step']})")
    ref = {
        "description": "PyTorch GradScaler reference for fp16 dynamic loss scaling: each "
                       "fixture trained with torch.autocast('cpu', float16) + "
                       "torch.amp.GradScaler('cpu') + AdamW from a huge initial scale; per "
                       "step the scale used, whether the step was skipped, the float32 loss "
                       "and the overflow threshold. Made by "
                       "test/models/make_grad_scaler_ref.py.",
        "torch_version": torch.__version__,
        "corpus_file": tr.CORPUS,
        "corpus_batching": "as memfit-run --corpus: step s, row r: offset = "
                           "((s*batch + r)*seq) % (num_tokens - seq - 1); input = "
                           "tokens[offset:offset+seq], labels shifted by one",
        "autocast": "forward pass only; loss float32 on the float32 logits; parameters, "
                    "gradients and AdamW states float32",
        "grad_scaler": {"init_scale": s["init_scale"], "growth_factor": s["growth_factor"],
                        "backoff_factor": s["backoff_factor"],
                        "growth_interval": s["growth_interval"]},
        "overflow_threshold": "smallest scale (bisection to 1e-4) at which the step's "
                              "gradients, at the step's weights and batch, hold an inf or "
                              "NaN; the step skips iff scale >= threshold",
        "steps": s["steps"], "batch": s["batch"], "seq": s["seq"],
        "optimizer": {"name": "AdamW", "lr": c["lr"], "schedule": "constant",
                      "beta1": c["betas"][0], "beta2": c["betas"][1], "eps": c["eps"],
                      "weight_decay": c["weight_decay"]},
        "runs": runs,
    }
    with open(os.path.join(HERE, OUT), "w") as fh:
        fh.write(tr.compact_json(ref) + "\n")


if __name__ == "__main__":
    main()
