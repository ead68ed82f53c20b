"""Running memfit's tools from the checks: one way to report a failed run,
one way to run a function written as MLIR text on .npy inputs, and the
error relative to a reference's largest magnitude."""
import os
import shutil
import subprocess
import tempfile

import numpy as np


def run_tool(cmd, env=None, timeout=600):
    """Runs `cmd`; returns None, or why it failed: its exit status, what it
    printed (2,000 characters at most) and the command that reproduces it."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          timeout=timeout)
    if proc.returncode == 0:
        return None
    return (f"memfit-run exit status {proc.returncode}: "
            + (proc.stderr.strip() or proc.stdout.strip())[:2000]
            + "\n    reproduce: " + " ".join(cmd))


def relative(a, b):
    """max |a - b| over max |b|: an error relative to the reference's
    largest magnitude."""
    a, b = (np.asarray(x, np.float64) for x in (a, b))
    return float(np.max(np.abs(a - b))) / max(float(np.max(np.abs(b))), 1e-30)


def run_function(memfit_run, directory, text, feeds, results, device="host",
                 env=None, timeout=600, flags=()):
    """Writes `text` (one func.func whose arguments are %arg0, %arg1...) to
    DIRECTORY/model.mlir and `feeds` to DIRECTORY/arg<i>.npy, runs memfit-run
    on them (with `flags`) and returns (the `results` outputs, None) or
    (None, why it failed)."""
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    path = os.path.join(directory, "model.mlir")
    with open(path, "w") as f:
        f.write(text)
    out = os.path.join(directory, "out")
    cmd = [memfit_run, path, f"--device={device}", "--quiet",
           f"--output-dir={out}", *flags]
    for i, value in enumerate(feeds):
        p = os.path.join(directory, f"arg{i}.npy")
        np.save(p, value)
        cmd.append(f"--input=arg{i}={p}")
    why = run_tool(cmd, env, timeout)
    if why:
        return None, why
    return [np.load(os.path.join(out, f"output{i}.npy"))
            for i in range(results)], None


def split_passthrough(argv):
    """(the script's own arguments, the memfit-run flags after `--`)."""
    if "--" not in argv:
        return argv, []
    return argv[:argv.index("--")], argv[argv.index("--") + 1:]


def prepare(check, args, keep_cache=False):
    """For a check's parsed `args` with memfit_run and workdir: makes
    memfit_run the tool's absolute path and workdir absolute and present
    (a new temporary directory when it is not given), and returns the
    environment to run in, kernels cached under workdir (or, with
    `keep_cache`, in $MEMFIT_CACHE_DIR when that is set); None, after
    saying so, when memfit-run is not found."""
    tool = shutil.which(args.memfit_run)
    if not tool:
        print(f"{check}: memfit-run not found: {args.memfit_run}")
        return None
    args.memfit_run = os.path.abspath(tool)
    if not args.workdir:
        args.workdir = tempfile.mkdtemp(prefix=f"memfit-{check}-")
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    env = dict(os.environ)
    cache = os.path.join(args.workdir, "kernel-cache")
    if keep_cache:
        env.setdefault("MEMFIT_CACHE_DIR", cache)
    else:
        env["MEMFIT_CACHE_DIR"] = cache
    return env
