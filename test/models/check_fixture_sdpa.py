#!/usr/bin/env python3
"""The fixtures' gradients with PyTorch's scaled_dot_product_attention in
place of their written-out attention, against memfit's.

  TORCH_PYTHON test/models/check_fixture_sdpa.py [--memfit-run build/bin/memfit-run]
               [--workdir /tmp/fixture-sdpa] [--rel-tol 1e-5]

make_train_refs.py computes the fixtures' reference gradients with the
models' own attention (matmul, mask, softmax, matmul). This script rebuilds
each fixture the same way (its classes, seeding and the ONNX file's
weights), swaps every attention module's forward for one that calls
F.scaled_dot_product_attention (GPT-2: is_causal; BERT: its additive
padding mask; Llama: its additive causal mask), computes the same loss's
fp32 gradients, and writes them in the reference format into WORKDIR with
the fixture's ONNX file and inputs. memfit_test.check_grads then runs
memfit (memfit.attention and the chunked loss, the defaults) against them
with the bound REL_TOL (1e-5: the issue's). It also prints how far SDPA's
gradients are from the written-out attention's. Needs torch, and
test/lib on PYTHONPATH for check_grads.
"""

import argparse
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures as mf  # noqa: E402
import make_train_refs as tr  # noqa: E402


def gpt_forward(self, x):
    B, T, C = x.size()
    hd = C // self.n_head
    q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
    q, k, v = (t.view(B, T, self.n_head, hd).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))


def bert_forward(self, x, add_mask):
    B, T, C = x.size()
    hd = C // self.n_head

    def heads(t):
        return t.view(B, T, self.n_head, hd).permute(0, 2, 1, 3)

    y = F.scaled_dot_product_attention(heads(self.query(x)), heads(self.key(x)),
                                       heads(self.value(x)), attn_mask=add_mask)
    return y.permute(0, 2, 1, 3).contiguous().view(B, T, C)


def llama_forward(self, x, cos, sin, mask):
    B, T, C = x.size()
    hd = C // self.n_head
    q = self.q_proj(x).view(B, T, self.n_head, hd).transpose(1, 2)
    k = self.k_proj(x).view(B, T, self.n_head, hd).transpose(1, 2)
    v = self.v_proj(x).view(B, T, self.n_head, hd).transpose(1, 2)
    q = q * cos + mf.rotate_half(q) * sin
    k = k * cos + mf.rotate_half(k) * sin
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return self.o_proj(y.transpose(1, 2).reshape(B, T, C))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--memfit-run", default=os.path.join(
        HERE, "..", "..", "build", "bin", "memfit-run"))
    ap.add_argument("--workdir", default="/tmp/fixture-sdpa")
    ap.add_argument("--rel-tol", default="1e-5")
    a = ap.parse_args()
    mf.GPTAttention.forward = gpt_forward
    mf.BertSelfAttention.forward = bert_forward
    mf.LlamaAttention.forward = llama_forward
    torch.set_num_threads(1)
    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    failed = 0
    for name, (_, vocab, in_names, _) in mf.MODELS.items():
        feeds = {k: torch.from_numpy(v) for k, v in
                 np.load(os.path.join(HERE, f"{name}_inputs.npz")).items()}
        feeds = {k: feeds[k] for k in in_names}
        shutil.copy(os.path.join(HERE, f"{name}_inputs.npz"), a.workdir)
        for exp in tr.EXPORTERS:
            stem = f"{name}_{exp}"
            refs = dict(np.load(os.path.join(HERE, f"{stem}_grads.npz")))
            extra = {k: torch.from_numpy(refs[k]) for k in ("labels", "target")
                     if k in refs}
            model = tr.build_model(name)
            layout, _, _ = tr.load_from_onnx(model, os.path.join(HERE, stem + ".onnx"))
            loss, grads = tr.loss_and_grads(model, feeds, extra)
            grads = tr.onnx_layout(grads, layout)
            zero = set(str(z) for z in refs["zero_grad"])
            gap = max(float(np.abs(grads[n] - refs[f"grad.{n}"]).max()
                            / np.abs(refs[f"grad.{n}"]).max())
                      for n in grads if n not in zero)
            print(f"{stem}: SDPA vs the written-out attention: loss "
                  f"{abs(float(loss) - float(refs['loss'])):.1e}, gradients "
                  f"{gap:.1e} relative", flush=True)
            refs["loss"] = np.float32(float(loss))
            refs.update({f"grad.{n}": g.astype(np.float32) for n, g in grads.items()})
            np.savez_compressed(os.path.join(a.workdir, f"{stem}_grads.npz"), **refs)
            shutil.copy(os.path.join(HERE, stem + ".onnx"), a.workdir)
            run = subprocess.run(
                [sys.executable, "-m", "memfit_test.check_grads", a.memfit_run,
                 a.workdir, name, exp, os.path.join(a.workdir, stem),
                 f"--rel-tol={a.rel_tol}", "--", "--device=host"],
                capture_output=True, text=True)
            print(run.stdout.strip().splitlines()[-1] if run.stdout else run.stderr)
            failed += run.returncode != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
