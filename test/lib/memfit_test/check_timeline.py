"""Checks a memory timeline (CSV and SVG) against the memfit-memory-plan
report of the same run.

    check_timeline.py PLAN CSV SVG

PLAN is the pass's text report, CSV and SVG the files that its `timeline-data`
and `timeline` options wrote. Checks that the CSV's largest arena_live is the
report's live sum at the peak, at the report's peak step, and fits in the
planned arena; that total = weights + arena_live and arena_live is the sum of
the category columns on every row; that the SVG is well-formed XML with a
legend entry per category. Prints one summary line, or the first failure and
exits with status 1.
"""

import csv
import re
import sys
import xml.etree.ElementTree as ElementTree


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def read_csv(path):
    comments = {}
    lines = []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                key, _, value = line[1:].strip().partition(" ")
                comments[key] = value
            else:
                lines.append(line)
    return comments, list(csv.DictReader(lines))


def read_report(path, function):
    """The report's section for @function: weights, planned arena, peak."""
    with open(path) as f:
        text = f.read()
    sections = re.split(r"^memory plan for @", text, flags=re.M)
    section = next((s for s in sections if s.startswith(function + ":")), None)
    if section is None:
        fail("no memory plan for @%s in %s" % (function, path))
    weights = re.search(r"weights region: (\d+) bytes", section)
    arena = re.search(r"arena peak: (\d+) bytes", section)
    peak = re.search(r"live at the peak \(step (\d+)\):((?: \w+ \d+)*)", section)
    if not (weights and arena and peak):
        fail("the plan of @%s has no weights, arena or peak line" % function)
    by_category = re.findall(r" (\w+) (\d+)", peak.group(2))
    return {
        "weights": int(weights.group(1)),
        "arena": int(arena.group(1)),
        "peak_step": int(peak.group(1)),
        "peak_live": sum(int(n) for _, n in by_category),
    }


def main():
    if len(sys.argv) != 4:
        fail("usage: check_timeline.py PLAN CSV SVG")
    plan_path, csv_path, svg_path = sys.argv[1:]
    comments, rows = read_csv(csv_path)
    for key in ("function", "weights", "arena_planned", "peak_step",
                "first_backward_step"):
        if key not in comments:
            fail("the CSV has no '# %s' line" % key)
    function = comments["function"]
    weights = int(comments["weights"])
    planned = int(comments["arena_planned"])
    report = read_report(plan_path, function)

    if not rows:
        fail("the CSV has no rows")
    categories = [c for c in rows[0].keys()
                  if c not in ("step", "op", "arena_live", "total")]
    for index, row in enumerate(rows):
        step, live = int(row["step"]), int(row["arena_live"])
        if step != index:
            fail("row %d is step %d" % (index, step))
        if sum(int(row[c]) for c in categories) != live:
            fail("step %d: the categories do not add up to arena_live" % step)
        if int(row["total"]) != weights + live:
            fail("step %d: total %s != weights %d + arena_live %d"
                 % (step, row["total"], weights, live))

    lives = [int(row["arena_live"]) for row in rows]
    peak_live = max(lives)
    peak_step = lives.index(peak_live)
    if weights != report["weights"]:
        fail("weights %d, the plan says %d" % (weights, report["weights"]))
    if planned != report["arena"]:
        fail("arena_planned %d, the plan says %d" % (planned, report["arena"]))
    if peak_live != report["peak_live"]:
        fail("max arena_live %d, the plan's live sum at the peak is %d"
             % (peak_live, report["peak_live"]))
    if peak_step != report["peak_step"] or peak_step != int(comments["peak_step"]):
        fail("the largest arena_live is at step %d, the plan's peak at %d, "
             "the CSV's at %s" % (peak_step, report["peak_step"],
                                  comments["peak_step"]))
    if peak_live > planned:
        fail("max arena_live %d exceeds the planned arena %d"
             % (peak_live, planned))

    try:
        root = ElementTree.parse(svg_path).getroot()
    except ElementTree.ParseError as error:
        fail("the SVG is not well-formed XML: %s" % error)
    if root.tag != "{http://www.w3.org/2000/svg}svg":
        fail("the SVG's root is %s" % root.tag)
    texts = " ".join("".join(t.itertext()) for t in root.iter(
        "{http://www.w3.org/2000/svg}text"))
    for category in categories + [k[len("weights."):] for k in comments
                                  if k.startswith("weights.")]:
        if category not in texts:
            fail("the SVG's legend has no %s" % category)

    print("timeline ok: @%s, %d steps, peak at step %d: %d arena bytes live "
          "of %d planned, first backward step %s"
          % (function, len(rows) - 2, peak_step, peak_live, planned,
             comments["first_backward_step"]))


if __name__ == "__main__":
    main()
