#!/usr/bin/env python3
"""bitsandbytes reference data for memfit's quantization work: quant_refs.npz.

Regenerate (from the repository root; needs torch and bitsandbytes, CPU only,
no network):

    /opt/torchenv/bin/pip install bitsandbytes==0.50.2
    /opt/torchenv/bin/python test/models/make_quant_refs.py [--out test/models]

The tests only read the .npz (numpy only); they need neither torch nor
bitsandbytes. All inputs are made with numpy generators (seeds below), so a
reader can regenerate every input -- and the AdamW gradients -- without torch.
The outputs are those of bnb's CPU path on an x86-64 CPU: the 8-bit block-wise
quantizer there is the native libbitsandbytes_cpu.so LUT kernel, the 4-bit
quantizer torch code (bitsandbytes/backends/default/ops.py), the optimizers
torch code (bitsandbytes/backends/cpu/ops.py); see the key list below.

Keys (all arrays; "codes" are uint8, everything else float32 unless noted):

  meta_bnb_version, meta_torch_version   str arrays
  dynamic_map_signed, dynamic_map_unsigned
        create_dynamic_map(signed=True/False), 256 sorted values each.

  a. block-wise 8-bit, bnb.functional.quantize_blockwise(A, blocksize=bs)
     with code=None (the signed dynamic map), A = bw_input (8192 values):
       bw_input
       bw{bs}_codes, bw{bs}_absmax, bw{bs}_dequant (dequantize_blockwise)
       for bs in 64, 128, 256, 512, 1024, 2048, 4096.
     bw_input = 3 * N(0,1) (numpy default_rng(BW_SEED), float32) with
       * outliers 50, -37.25, 60.5, -48, 40 at 100, 1500, 3000, 5000, 7000;
       * exact zeros at every 97th index, -0.0 at 11 + 389 k;
       * [1024, 1280) all zero: an all-zero block for bs <= 256;
       * a tie region [2048, 2176): 64.0 at 2048, -64.0 at 2112 and, in the
         other 126 slots, 64 * m_k where m_k = 0.5f * (code[k] + code[k+1])
         (float32) are midpoints of the signed dynamic map (k = 0, 2, ...,
         250 -- TIE_KS). |x| <= 64 everywhere, so
         every block that holds a tie value has absmax exactly 64, the
         scale 1/64 is exact and x * (1/absmax) equals the midpoint m_k
         exactly, for every block size.
     bwtail_input (1000 values, 3 * N(0,1), BWTAIL_SEED) quantized with
       bs 256 (a partial last block of 232): bwtail256_codes, _absmax,
       _dequant.

  b. 4-bit, bnb.functional.quantize_4bit(A, blocksize=64, quant_type=qt,
     compress_statistics=dq) on q4_input (64 x 64), qt in nf4/fp4, dq 0/1:
       q4_input
       q4_code_nf4, q4_code_fp4       16-entry code tables (get_4bit_type)
       q4_{qt}_dq{dq}_codes           (2048,) uint8, two codes per byte:
                                      element 2i in the HIGH nibble, 2i+1 low
       q4_{qt}_dq0_absmax             (64,) float32
       q4_{qt}_dq1_absmax_q           (64,) uint8  8-bit codes of absmax-offset
       q4_{qt}_dq1_nested_absmax      (1,) float32 absmax of that 8-bit block
       q4_{qt}_dq1_offset             (1,) float32 mean of the fp32 absmax
       q4_{qt}_dq1_nested_blocksize   (1,) int64 (256)
       q4_{qt}_dq1_nested_code        (256,) the nested code map (signed
                                      dynamic map)
       q4_{qt}_dq{dq}_dequant         (64, 64) dequantize_4bit
     q4_input = N(0,1) (default_rng(Q4_SEED), float32), except
       * row 10: 2.0 at column 0, the 15 NF4 midpoints * 2 (float32
         (c[i]+c[i+1])/2 of the sorted table) at columns 1..15, columns
         16..63 clipped to [-1.9, 1.9] -- exact ties for nf4;
       * row 20: likewise with the 15 FP4 midpoints (sorted table);
       * row 30: +0.0 at columns 0, 2, 4, 6 and -0.0 at columns 1, 3, 5, 7.

  c. AdamW8bit: bnb.optim.AdamW8bit([big, small], lr=1e-3,
     betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2), default options
     (min_8bit_size 4096: big (64, 80) has 8-bit block-wise states,
     small (32, 32) fp32 states), 100 steps, gradients set by hand:
       adam_p_big_init, adam_p_small_init
         = 0.5 * N(0,1) from default_rng(ADAM_INIT_SEED): big then small.
       gradients: ONE generator g = np.random.default_rng(1234); for step
         1..100: gb = g.standard_normal((64, 80), dtype=np.float32),
         gs = g.standard_normal((32, 32), dtype=np.float32) (in that order),
         then gb *= 2**(row // 16 - 5) per row (1/32, 1/16, 1/8, 1/4) and
         gs *= 1/8 -- exact power-of-two scalings in float32.
       adam_grad_seed (int64), adam_grad_checksum (float64: the sum over
         all steps of gb.astype(float64).sum() + gs.astype(float64).sum())
       adam_hparams float64 [lr, beta1, beta2, eps, weight_decay]
       adam_qmap1, adam_qmap2   the big param's state["qmap1"/"qmap2"]
       for s in 1, 2, 10, 100 (after step s):
         adam_s{s}_big_p, adam_s{s}_big_state1 (uint8, signed map),
         adam_s{s}_big_state2 (uint8, unsigned map), adam_s{s}_big_absmax1,
         adam_s{s}_big_absmax2 ((20,) float32, blocks of 256),
         adam_s{s}_big_step (int64), adam_s{s}_small_p,
         adam_s{s}_small_state1, adam_s{s}_small_state2 (float32),
         adam_s{s}_small_step
       adam_torch_s{s}_big_p, adam_torch_s{s}_small_p (s = 1, 100): the same
         100 steps with torch.optim.AdamW (fp32 states, defaults otherwise).
"""

import argparse
import logging
import os
import sys

import numpy as np
import torch

# bnb's CPU backend logs a warning about an optional "kernels" package on import.
logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
import bitsandbytes as bnb  # noqa: E402
import bitsandbytes.functional as F  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_NAME = "quant_refs.npz"

BW_SEED = 20240
BWTAIL_SEED = 20241
Q4_SEED = 20250
ADAM_INIT_SEED = 7
ADAM_GRAD_SEED = 1234
BLOCKSIZES = (64, 128, 256, 512, 1024, 2048, 4096)
TIE_KS = list(range(0, 252, 2))  # 126 midpoint indices k: m_k between code[k], code[k+1]
ADAM_STEPS = 100
ADAM_SNAPSHOTS = (1, 2, 10, 100)
ADAM_HP = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
BIG_SHAPE = (64, 80)
SMALL_SHAPE = (32, 32)


def f32(x):
    return np.asarray(x, dtype=np.float32)


def make_bw_input(dmap):
    rng = np.random.default_rng(BW_SEED)
    x = rng.standard_normal(8192, dtype=np.float32) * np.float32(3)
    for i, v in zip((100, 1500, 3000, 5000, 7000), (50.0, -37.25, 60.5, -48.0, 40.0)):
        x[i] = v
    x[::97] = 0.0
    x[11::389] = -0.0
    x[1024:1280] = 0.0
    mids = f32(0.5) * (dmap[:-1] + dmap[1:])  # float32, as build_quantize_lut
    ks = TIE_KS
    assert len(ks) == 126
    slots = [i for i in range(2048, 2176) if i not in (2048, 2112)]
    x[2048] = 64.0
    x[2112] = -64.0
    x[slots] = mids[ks] * f32(64.0)
    assert np.abs(x).max() == 64.0
    assert np.array_equal((x[slots] * (f32(1.0) / f32(64.0))), mids[ks])
    return x


def make_q4_input():
    rng = np.random.default_rng(Q4_SEED)
    x = rng.standard_normal((64, 64), dtype=np.float32)
    for row, qt in ((10, "nf4"), (20, "fp4")):
        code = np.sort(F.get_4bit_type(qt, device="cpu").numpy())
        mids = (code[:-1] + code[1:]) / f32(2)
        x[row, 16:] = np.clip(x[row, 16:], -1.9, 1.9)
        x[row, 0] = 2.0
        x[row, 1:16] = mids * f32(2)
    x[30, 0:8:2] = 0.0
    x[30, 1:8:2] = -0.0
    return x


def adam_grads():
    """Yields (gb, gs) for steps 1..ADAM_STEPS; numpy only."""
    g = np.random.default_rng(ADAM_GRAD_SEED)
    row_scale = (f32(2.0) ** (np.arange(BIG_SHAPE[0]) // 16 - 5).astype(np.float32))[:, None]
    for _ in range(ADAM_STEPS):
        gb = g.standard_normal(BIG_SHAPE, dtype=np.float32)
        gs = g.standard_normal(SMALL_SHAPE, dtype=np.float32)
        yield (gb * row_scale).astype(np.float32), (gs * f32(0.125)).astype(np.float32)


def section_blockwise(out):
    dmap = F.create_dynamic_map(signed=True).numpy()
    out["dynamic_map_signed"] = dmap
    out["dynamic_map_unsigned"] = F.create_dynamic_map(signed=False).numpy()
    x = make_bw_input(dmap)
    out["bw_input"] = x
    for bs in BLOCKSIZES:
        A = torch.from_numpy(x.copy())
        q, st = F.quantize_blockwise(A, blocksize=bs)
        assert np.array_equal(st.code.numpy(), dmap)
        out[f"bw{bs}_codes"] = q.numpy().astype(np.uint8)
        out[f"bw{bs}_absmax"] = st.absmax.numpy().astype(np.float32)
        out[f"bw{bs}_dequant"] = F.dequantize_blockwise(q, st).numpy()
    xt = np.random.default_rng(BWTAIL_SEED).standard_normal(1000, dtype=np.float32) * np.float32(3)
    out["bwtail_input"] = xt
    q, st = F.quantize_blockwise(torch.from_numpy(xt.copy()), blocksize=256)
    out["bwtail256_codes"] = q.numpy()
    out["bwtail256_absmax"] = st.absmax.numpy()
    out["bwtail256_dequant"] = F.dequantize_blockwise(q, st).numpy()


def section_4bit(out):
    x = make_q4_input()
    out["q4_input"] = x
    for qt in ("nf4", "fp4"):
        out[f"q4_code_{qt}"] = F.get_4bit_type(qt, device="cpu").numpy()
        for dq in (0, 1):
            A = torch.from_numpy(x.copy())
            q, st = F.quantize_4bit(A, blocksize=64, quant_type=qt, compress_statistics=bool(dq))
            p = f"q4_{qt}_dq{dq}_"
            out[p + "codes"] = q.numpy().reshape(-1)
            if dq:
                out[p + "absmax_q"] = st.absmax.numpy()
                out[p + "nested_absmax"] = st.state2.absmax.numpy().astype(np.float32)
                out[p + "offset"] = st.offset.numpy().reshape(1).astype(np.float32)
                out[p + "nested_blocksize"] = np.array([st.state2.blocksize], np.int64)
                out[p + "nested_code"] = st.state2.code.numpy()
            else:
                out[p + "absmax"] = st.absmax.numpy()
            out[p + "dequant"] = F.dequantize_4bit(q, st).numpy()


def section_adamw(out):
    rng = np.random.default_rng(ADAM_INIT_SEED)
    pb0 = rng.standard_normal(BIG_SHAPE, dtype=np.float32) * f32(0.5)
    ps0 = rng.standard_normal(SMALL_SHAPE, dtype=np.float32) * f32(0.5)
    out["adam_p_big_init"] = pb0
    out["adam_p_small_init"] = ps0
    out["adam_grad_seed"] = np.array(ADAM_GRAD_SEED, np.int64)
    out["adam_hparams"] = np.array(
        [ADAM_HP["lr"], *ADAM_HP["betas"], ADAM_HP["eps"], ADAM_HP["weight_decay"]], np.float64
    )

    big = torch.nn.Parameter(torch.from_numpy(pb0.copy()))
    small = torch.nn.Parameter(torch.from_numpy(ps0.copy()))
    opt = bnb.optim.AdamW8bit([big, small], **ADAM_HP)
    tbig = torch.nn.Parameter(torch.from_numpy(pb0.copy()))
    tsmall = torch.nn.Parameter(torch.from_numpy(ps0.copy()))
    topt = torch.optim.AdamW([tbig, tsmall], **ADAM_HP)

    checksum = 0.0
    for step, (gb, gs) in enumerate(adam_grads(), start=1):
        checksum += float(gb.astype(np.float64).sum()) + float(gs.astype(np.float64).sum())
        big.grad = torch.from_numpy(gb.copy())
        small.grad = torch.from_numpy(gs.copy())
        opt.step()
        tbig.grad = torch.from_numpy(gb.copy())
        tsmall.grad = torch.from_numpy(gs.copy())
        topt.step()
        if step in ADAM_SNAPSHOTS:
            sb, ss = opt.state[big], opt.state[small]
            assert set(sb) == {"step", "state1", "state2", "qmap1", "qmap2", "absmax1", "absmax2"}, set(sb)
            assert set(ss) == {"step", "state1", "state2"}, set(ss)
            assert sb["state1"].dtype == torch.uint8 and ss["state1"].dtype == torch.float32
            p = f"adam_s{step}_"
            out[p + "big_p"] = big.detach().numpy().copy()
            for k in ("state1", "state2", "absmax1", "absmax2"):
                out[p + "big_" + k] = sb[k].numpy().copy()
            out[p + "big_step"] = np.array(sb["step"], np.int64)
            out[p + "small_p"] = small.detach().numpy().copy()
            out[p + "small_state1"] = ss["state1"].numpy().copy()
            out[p + "small_state2"] = ss["state2"].numpy().copy()
            out[p + "small_step"] = np.array(ss["step"], np.int64)
            if step == 1:
                out["adam_qmap1"] = sb["qmap1"].numpy().copy()
                out["adam_qmap2"] = sb["qmap2"].numpy().copy()
        if step in (1, ADAM_STEPS):
            out[f"adam_torch_s{step}_big_p"] = tbig.detach().numpy().copy()
            out[f"adam_torch_s{step}_small_p"] = tsmall.detach().numpy().copy()
    out["adam_grad_checksum"] = np.array(checksum, np.float64)
    return checksum


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=HERE, help="output directory (default: test/models)")
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    out = {
        "meta_bnb_version": np.array(bnb.__version__),
        "meta_torch_version": np.array(torch.__version__),
    }
    section_blockwise(out)
    section_4bit(out)
    checksum = section_adamw(out)

    assert np.array_equal(out["adam_qmap1"], out["dynamic_map_signed"])
    assert np.array_equal(out["adam_qmap2"], out["dynamic_map_unsigned"])
    path = os.path.join(args.out, OUT_NAME)
    np.savez_compressed(path, **out)

    size = os.path.getsize(path)
    print(f"bitsandbytes {bnb.__version__}, torch {torch.__version__}")
    print(f"wrote {path}: {size} bytes, {len(out)} arrays")
    assert size < 1_500_000, size
    print(f"AdamW gradient checksum (float64 sum of all grads): {checksum!r}")
    for s in (1, ADAM_STEPS):
        for w in ("big", "small"):
            d = np.abs(out[f"adam_s{s}_{w}_p"] - out[f"adam_torch_s{s}_{w}_p"]).max()
            print(f"step {s:3d} {w:5s}: max |bnb AdamW8bit - torch AdamW| = {d:.3e}")
    for w in ("big", "small"):
        mv = np.abs(out[f"adam_s{ADAM_STEPS}_{w}_p"] - out[f"adam_p_{w}_init"]).max()
        print(f"step {ADAM_STEPS} {w:5s}: max |p - p_init| = {mv:.3e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
