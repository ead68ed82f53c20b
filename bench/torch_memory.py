"""What one PyTorch training step holds on the CPU, by torch.profiler's memory
categories; shared by bench/torch-activations.py and bench/torch-long-context.py.

profile_step(step) runs step() once under torch.profiler (profile_memory,
record_shapes, with_stack) and replays the profiler's memory timeline
(torch.profiler._memory_profiler): every allocation and free of the CPU
allocator, each tied to a category (PARAMETER, GRADIENT, OPTIMIZER_STATE,
ACTIVATION, TEMPORARY, INPUT, AUTOGRAD_DETAIL, or none where the profiler
cannot tell). It returns the peak of all categories together, the bytes of
each category at that peak, and the ACTIVATION category at the end of the
region named "memfit::forward" (if step() records one) and at its maximum.

SkipContractions is a dispatch mode that allocates the results of matrix
products and of scaled_dot_product_attention's CPU kernels (forward and
backward) without computing them. It is for dtypes whose products this CPU
runs far too slowly to time a step (bf16 on a CPU without AVX-512 BF16:
0.26 GFLOP/s here, against 63 in fp32): what a step allocates does not
depend on the values in a Llama (no shape depends on data), so the memory
timeline is that of the real step. bench/torch-long-context.py checks that
claim on every run it is used for: the same step in fp32 with and without
the mode must give the same peak and the same bytes per category.
"""

import collections

import torch
from torch.profiler import ProfilerActivity, profile
from torch.profiler._memory_profiler import Action, Category, TensorKey
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

aten = torch.ops.aten


def profile_step(step):
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 record_shapes=True, with_stack=True) as prof:
        step()
    mp = prof._memory_profile()
    fwd = [e.end_time_ns for e in mp._op_tree.dfs() if e.name == "memfit::forward"]
    fwd_end = max(fwd) if fwd else None
    live = collections.Counter()  # bytes by category
    cpu = torch.device("cpu")
    out = dict(act_end_fwd=None, act_max=0, total_peak=0, act_at_total_peak=0,
               at_peak={})
    events = [e for e in mp.timeline if e[2][0].device == cpu]
    for n, (t, action, (key, version), nbytes) in enumerate(events):
        if fwd_end is not None and out["act_end_fwd"] is None and t > fwd_end:
            out["act_end_fwd"] = live[Category.ACTIVATION]
        cat = mp._categories.get(key, version) if isinstance(key, TensorKey) else None
        nbytes = abs(nbytes)  # allocations the profiler can't tie to a tensor come negative
        if action in (Action.PREEXISTING, Action.CREATE):
            live[cat] += nbytes
        elif action == Action.INCREMENT_VERSION:
            live[cat] -= nbytes
            live[mp._categories.get(key, version + 1)] += nbytes
        else:
            live[cat] -= nbytes
        if n + 1 < len(events) and events[n + 1][0] == t:
            continue  # sample once all events of a timestamp are applied
        out["act_max"] = max(out["act_max"], live[Category.ACTIVATION])
        total = sum(live.values())
        if total > out["total_peak"]:
            out["total_peak"] = total
            out["act_at_total_peak"] = live[Category.ACTIVATION]
            out["at_peak"] = {(c.name if c is not None else "UNKNOWN"): b
                              for c, b in live.items() if b}
    return out


class SkipContractions(TorchDispatchMode):
    """Results of the products and attention kernels allocated (empty, with
    the strides the real kernel returns, from its meta kernel), not computed."""

    OPS = {aten.mm.default, aten.bmm.default, aten.addmm.default,
           aten.baddbmm.default,
           aten._scaled_dot_product_flash_attention_for_cpu.default,
           aten._scaled_dot_product_flash_attention_for_cpu_backward.default}

    def __torch_dispatch__(self, func, types, args, kwargs=None):
        kwargs = kwargs or {}
        if func not in self.OPS:
            return func(*args, **kwargs)

        def meta(x):
            return x.to("meta") if isinstance(x, torch.Tensor) else x

        def alloc(x):
            if not isinstance(x, torch.Tensor):
                return x
            return torch.empty_strided(x.shape, x.stride(), dtype=x.dtype)

        return tree_map(alloc, func(*tree_map(meta, args), **tree_map(meta, kwargs)))
