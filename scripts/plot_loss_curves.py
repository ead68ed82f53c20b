#!/usr/bin/env python3
"""Plot memfit's training loss against the PyTorch reference curve, as SVG.

    scripts/plot_loss_curves.py REF.json LOSSES.csv OUT.svg [--title TEXT]

REF.json    a reference made by test/models/make_train_refs.py (for example
            test/models/gpt_train_ref.json): "losses_fp32", optional "losses_fp64"
LOSSES.csv  `step,loss` lines (0-based steps, as in the reference) as written by
            `memfit-run --train --losses=FILE`
            (a header line, blank lines and lines starting with '#' are skipped)
OUT.svg     written by hand, no plotting library: the top panel shows the curves,
            the bottom one |memfit - ref| / |ref| per step on a log scale, with the
            reference's own float32-vs-float64 difference for scale.

Prints the largest relative difference and the final losses. Python standard
library only.
"""

import argparse
import json
import math
import sys

W, H = 860, 640
LEFT, RIGHT = 80, 20
TOP_PANEL = (40, 360)      # y range (top, bottom) of the loss panel
BOTTOM_PANEL = (420, 590)  # y range of the relative-difference panel
FLOOR = 1e-12              # exact agreement is drawn at this relative difference
COLORS = {"ref": "#1f77b4", "ref64": "#7f7f7f", "memfit": "#ff7f0e", "rel": "#d62728",
          "rel64": "#7f7f7f"}


def read_csv(path):
    steps, losses = [], []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split(",")
            try:
                step, loss = int(fields[0]), float(fields[1])
            except (ValueError, IndexError):
                if steps:
                    raise SystemExit(f"{path}: cannot read line {line!r}")
                continue            # header
            steps.append(step)
            losses.append(loss)
    if not steps:
        raise SystemExit(f"{path}: no `step,loss` lines")
    return steps, losses


def nice_ticks(lo, hi, count=6):
    """Round tick values (1, 2, 5 x 10^k steps) covering [lo, hi]."""
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / max(count - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    ticks = []
    t = first
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    if ticks[-1] < hi:
        ticks.append(round(t, 12))
    return ticks


def fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 1e4 or abs(v) < 1e-3:
        return f"{v:.0e}"
    return f"{v:g}"


class Panel:
    def __init__(self, y0, y1, xlo, xhi, ylo, yhi, log=False):
        self.y0, self.y1, self.xlo, self.xhi = y0, y1, xlo, xhi
        self.ylo, self.yhi, self.log = ylo, yhi, log

    def x(self, v):
        return LEFT + (v - self.xlo) / ((self.xhi - self.xlo) or 1) * (W - LEFT - RIGHT)

    def y(self, v):
        if self.log:
            v, lo, hi = math.log10(v), math.log10(self.ylo), math.log10(self.yhi)
        else:
            lo, hi = self.ylo, self.yhi
        return self.y1 - (v - lo) / ((hi - lo) or 1) * (self.y1 - self.y0)

    def polyline(self, xs, ys, color, dash=None, width=1.5):
        pts = " ".join(f"{self.x(a):.2f},{self.y(b):.2f}" for a, b in zip(xs, ys))
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        return (f'<polyline fill="none" stroke="{color}" stroke-width="{width}"{extra} '
                f'points="{pts}"/>')

    def axes(self, xticks, yticks, ylabel, xlabel=None):
        out = [f'<rect x="{LEFT}" y="{self.y0}" width="{W - LEFT - RIGHT}" '
               f'height="{self.y1 - self.y0}" fill="none" stroke="#000"/>']
        for t in xticks:
            px = self.x(t)
            out.append(f'<line x1="{px:.2f}" y1="{self.y0}" x2="{px:.2f}" y2="{self.y1}" '
                       f'stroke="#ddd"/>')
            out.append(f'<line x1="{px:.2f}" y1="{self.y1}" x2="{px:.2f}" y2="{self.y1 + 5}" '
                       f'stroke="#000"/>')
            out.append(f'<text x="{px:.2f}" y="{self.y1 + 18}" text-anchor="middle">'
                       f'{fmt(t)}</text>')
        for t in yticks:
            py = self.y(t)
            out.append(f'<line x1="{LEFT}" y1="{py:.2f}" x2="{W - RIGHT}" y2="{py:.2f}" '
                       f'stroke="#ddd"/>')
            out.append(f'<line x1="{LEFT - 5}" y1="{py:.2f}" x2="{LEFT}" y2="{py:.2f}" '
                       f'stroke="#000"/>')
            out.append(f'<text x="{LEFT - 8}" y="{py + 4:.2f}" text-anchor="end">{fmt(t)}</text>')
        my = (self.y0 + self.y1) / 2
        out.append(f'<text x="18" y="{my:.2f}" text-anchor="middle" '
                   f'transform="rotate(-90 18 {my:.2f})">{ylabel}</text>')
        if xlabel:
            out.append(f'<text x="{(LEFT + W - RIGHT) / 2:.2f}" y="{self.y1 + 36}" '
                       f'text-anchor="middle">{xlabel}</text>')
        return out


def legend(x, y, entries):
    out = [f'<rect x="{x - 8}" y="{y - 14}" width="300" height="{20 * len(entries) + 6}" '
           f'fill="#fff" fill-opacity="0.85" stroke="#999"/>']
    for i, (label, color, dash) in enumerate(entries):
        yy = y + 20 * i
        extra = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line x1="{x}" y1="{yy - 4}" x2="{x + 28}" y2="{yy - 4}" stroke="{color}" '
                   f'stroke-width="2"{extra}/>')
        out.append(f'<text x="{x + 36}" y="{yy}">{label}</text>')
    return out


def rel_diff(a, b):
    return max(abs(a - b) / abs(b), FLOOR) if b else (FLOOR if a == b else 1.0)


def render(ref, steps, losses, title):
    ref32 = ref["losses_fp32"]
    ref64 = ref.get("losses_fp64")
    n = min(len(ref32), max(steps) + 1)
    pairs = [(s, l) for s, l in zip(steps, losses) if 0 <= s < len(ref32)]
    if not pairs:
        raise SystemExit("no memfit step falls inside the reference's steps")
    rel = [(s, rel_diff(l, ref32[s])) for s, l in pairs]
    rel64 = [(s, rel_diff(ref32[s], ref64[s])) for s in range(len(ref32))] if ref64 else []

    xhi = max(len(ref32) - 1, max(steps))
    every = ref32 + losses + (ref64 or [])
    yt = nice_ticks(min(every), max(every))
    top = Panel(*TOP_PANEL, 0, xhi, yt[0], yt[-1])
    xt = nice_ticks(0, xhi, 8)
    top.xhi = xt[-1]

    rels = [r for _, r in rel] + [r for _, r in rel64]
    lo_e = math.floor(math.log10(min(rels)))
    hi_e = max(math.ceil(math.log10(max(rels))), lo_e + 1)
    step_e = max(1, math.ceil((hi_e - lo_e) / 6))
    top_e = lo_e + step_e * math.ceil((hi_e - lo_e) / step_e)
    rt = [10.0 ** e for e in range(lo_e, top_e + 1, step_e)]
    bot = Panel(*BOTTOM_PANEL, 0, top.xhi, rt[0], rt[-1], log=True)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="#fff"/>',
           f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    out += top.axes(xt, yt, "training loss")
    if ref64:
        out.append(top.polyline(range(len(ref64)), ref64, COLORS["ref64"], dash="6 4", width=3))
    out.append(top.polyline(range(len(ref32)), ref32, COLORS["ref"], width=2))
    out.append(top.polyline([s for s, _ in pairs], [l for _, l in pairs], COLORS["memfit"],
                            dash="3 3", width=2))
    entries = [("PyTorch float32 (reference)", COLORS["ref"], None)]
    if ref64:
        entries.append(("PyTorch float64", COLORS["ref64"], "6 4"))
    entries.append(("memfit", COLORS["memfit"], "3 3"))
    out += legend(W - RIGHT - 300, TOP_PANEL[0] + 24, entries)

    out += bot.axes(xt, rt, "relative difference", xlabel="optimizer step")
    if rel64:
        out.append(bot.polyline([s for s, _ in rel64], [r for _, r in rel64], COLORS["rel64"],
                                dash="6 4", width=1))
    out.append(bot.polyline([s for s, _ in rel], [r for _, r in rel], COLORS["rel"], width=1.2))
    entries = [("|memfit - ref32| / |ref32|", COLORS["rel"], None)]
    if rel64:
        entries.append(("|ref32 - ref64| / |ref64|", COLORS["rel64"], "6 4"))
    out += legend(W - RIGHT - 300, BOTTOM_PANEL[0] + 20, entries)
    if any(r <= FLOOR for _, r in rel):
        out.append(f'<text x="{LEFT + 6}" y="{BOTTOM_PANEL[1] - 6}" fill="#555">'
                   f'exact agreement drawn at {FLOOR:.0e}</text>')
    out.append("</svg>")

    worst = max(rel, key=lambda t: t[1])
    summary = {
        "steps_compared": len(rel),
        "max_rel_diff": worst[1] if worst[1] > FLOOR else 0.0,
        "max_rel_diff_step": worst[0],
        "ref_fp32_vs_fp64_max_rel_diff": max((r for _, r in rel64), default=None),
        "memfit_final": (pairs[-1][0], pairs[-1][1]),
        "ref_final": (n - 1, ref32[n - 1]),
    }
    return "\n".join(out) + "\n", summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("ref", help="reference JSON (test/models/gpt_train_ref.json)")
    ap.add_argument("losses", help="memfit losses CSV (step,loss)")
    ap.add_argument("out", help="SVG file to write")
    ap.add_argument("--title", default=None)
    args = ap.parse_args(argv)
    with open(args.ref) as fh:
        ref = json.load(fh)
    steps, losses = read_csv(args.losses)
    title = args.title or (f"{ref.get('onnx_file', '?')}: B={ref.get('batch')} "
                           f"T={ref.get('seq')} AdamW lr={ref.get('optimizer', {}).get('lr')}")
    svg, s = render(ref, steps, losses, title)
    with open(args.out, "w") as fh:
        fh.write(svg)
    print(f"wrote {args.out}: {s['steps_compared']} steps compared, max relative difference "
          f"{s['max_rel_diff']:.3g} at step {s['max_rel_diff_step']}"
          + (f" (reference fp32 vs fp64: {s['ref_fp32_vs_fp64_max_rel_diff']:.3g})"
             if s["ref_fp32_vs_fp64_max_rel_diff"] is not None else ""))
    print(f"final loss: memfit {s['memfit_final'][1]:.6f} (step {s['memfit_final'][0]}), "
          f"reference {s['ref_final'][1]:.6f} (step {s['ref_final'][0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
