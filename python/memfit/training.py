"""memfit.train: the training loop around Model.step, with a progress bar,
tokens per second, the device's bytes and checkpoints to resume from.

    result = memfit.train(model, batches, steps=200, log_every=10,
                          checkpoint_dir="ckpt", checkpoint_every=50)
    print(result.losses[-1], result.tokens_per_second, result.peak_bytes)

`data` is an iterable of dicts of NumPy arrays (or torch tensors) that
`model.step(**batch)` takes, or a callable returning such an iterator (a new
one per pass over the data). `steps` counts optimizer steps as the model's
own counter does (its "step" variable, which a checkpoint restores), as
TrainingArguments.max_steps does: a run resumed at step 30 with steps=100
takes 70 more.

Checkpoints go to `checkpoint_dir` as `checkpoint-<step>.memfit`
(Session.save_checkpoint: the variables that change, written to a temporary
sibling and renamed, so a killed process leaves the previous one whole) and
`memfit-train-state.json` (step, batches consumed, file name; also written
atomically, after the checkpoint it names). With resume=True a later call
loads the one the JSON names and skips the batches already consumed, so the
losses continue bit for bit as if the run had not stopped.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
import warnings
from typing import (Any, Callable, Iterable, Iterator, List, Mapping,
                    Optional, Union)

import numpy as np

from ._memfit import MemfitError

__all__ = ["train", "TrainResult"]

STATE_FILE = "memfit-train-state.json"

Data = Union[Iterable[Mapping[str, Any]],
             Callable[[], Iterator[Mapping[str, Any]]]]
LearningRate = Union[None, float, Callable[[int], float]]


@dataclasses.dataclass
class TrainResult:
    """What a train() call did. losses[i] is the loss of global step
    start_step + i + 1 (steps count from 1, as the progress shows them)."""
    losses: List[float]
    start_step: int
    end_step: int
    # Tokens (elements of input_ids, else samples) over the loop's time.
    tokens: int
    tokens_per_second: float
    # The device's bytes: memfit makes one allocation per session, the
    # plan's peak (weights region + arena), so this is also the peak.
    peak_bytes: int
    # The loop's wall time (data, steps and checkpoints; not the session's
    # creation, which compiles or loads the kernels).
    seconds: float
    first_step_seconds: float
    device: str
    # The last checkpoint written (None: none), and why the run ended before
    # `steps` (None: it did not).
    checkpoint: Optional[str] = None
    stopped: Optional[str] = None

    @property
    def steps_per_second(self) -> float:
        return len(self.losses) / self.seconds if self.seconds > 0 else 0.0


def _tokens(batch: Mapping[str, Any]) -> int:
    """input_ids' elements where there is such an input, else samples (the
    first input's leading dimension); NumPy arrays or torch tensors."""
    ids = batch.get("input_ids")
    if ids is not None:
        return math.prod(ids.shape) if hasattr(ids, "shape") else \
            int(np.size(ids))
    for value in batch.values():
        shape = value.shape if hasattr(value, "shape") else np.shape(value)
        return int(shape[0]) if len(shape) else 1
    return 0


class _Batches:
    """The micro-batches of `data`, pass after pass where `cycle` allows."""

    def __init__(self, data: Data, cycle: bool):
        self._data = data
        self._cycle = cycle
        self._iterator = self._fresh()
        # A one-shot iterator (a generator) cannot be read again.
        self._reiterable = callable(data) or self._iterator is not data
        self.passes = 1

    def _fresh(self) -> Iterator:
        if callable(self._data) and not hasattr(self._data, "__iter__"):
            return iter(self._data())
        return iter(self._data)

    def next(self):
        """The next batch, or None once the data is exhausted (and not
        cycled). Raises ValueError where cycling is asked of data that
        cannot be read twice."""
        try:
            return next(self._iterator)
        except StopIteration:
            pass
        if not self._cycle:
            return None
        if not self._reiterable:
            raise ValueError(
                "train(cycle=True): the data is a one-shot iterator; pass a "
                "list, another re-iterable, or a function returning a fresh "
                "iterator")
        self._iterator = self._fresh()
        self.passes += 1
        try:
            return next(self._iterator)
        except StopIteration:
            raise ValueError("train(): the data has no batches") from None


def _write_atomic(path: str, text: str) -> None:
    """`text` to a temporary sibling, flushed to disk, then renamed over
    `path`: a reader sees the old file or the new one, never half of one."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class _Checkpoints:
    """checkpoint-<step>.memfit files and the JSON that names the last one."""

    def __init__(self, folder: str, keep: Optional[int]):
        self.folder = os.fspath(folder)
        self.keep = keep

    @property
    def state_path(self) -> str:
        return os.path.join(self.folder, STATE_FILE)

    def latest(self) -> Optional[dict]:
        if not os.path.exists(self.state_path):
            return None
        with open(self.state_path) as f:
            try:
                state = json.load(f)
            except json.JSONDecodeError as e:
                raise MemfitError(f"resume: {self.state_path} is not JSON "
                                  f"({e})") from None
        for key in ("step", "batches", "checkpoint"):
            if key not in state:
                raise MemfitError(f"resume: {self.state_path} has no "
                                  f"'{key}'")
        return state

    def save(self, model, step: int, batches: int,
             loss: Optional[float]) -> str:
        os.makedirs(self.folder, exist_ok=True)
        name = f"checkpoint-{step:08d}.memfit"
        path = os.path.join(self.folder, name)
        try:
            model.session.save_checkpoint(path)
        except MemfitError as e:
            raise MemfitError(f"step {step}: {e}") from e
        state = {"format": "memfit-train-state", "version": 1, "step": step,
                 "batches": batches, "checkpoint": name,
                 "loss": None if loss is None or not math.isfinite(loss)
                 else loss}
        _write_atomic(self.state_path, json.dumps(state, indent=1) + "\n")
        self._prune(name)
        return path

    def _prune(self, newest: str) -> None:
        if self.keep is None:
            return
        names = sorted(n for n in os.listdir(self.folder)
                       if n.startswith("checkpoint-") and n.endswith(".memfit")
                       and n <= newest)
        for name in names[:max(0, len(names) - max(1, self.keep))]:
            os.remove(os.path.join(self.folder, name))


class _Progress:
    """A tqdm bar where tqdm is installed and the output is a terminal (or a
    notebook); else a line every `log_every` steps on stdout."""

    def __init__(self, enabled: bool, log_every: int, start: int, end: int,
                 header: str):
        self.enabled = enabled
        self.log_every = log_every
        self.end = end
        self.bar = None
        self._last_step, self._last_time, self._last_tokens = start, None, 0
        if not enabled:
            return
        tqdm = None
        interactive = sys.stderr.isatty() or "ipykernel" in sys.modules
        if interactive:
            try:
                from tqdm.auto import tqdm
            except ImportError:
                tqdm = None
        self.write(header)
        if tqdm is not None:
            self.bar = tqdm(total=end, initial=start, unit="step",
                            dynamic_ncols=True)

    def write(self, line: str) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write(line)
        else:
            print(line, file=sys.stdout, flush=True)

    def step(self, step: int, loss: float, lr: Optional[float],
             now: float, tokens: int, start_time: float) -> None:
        if not self.enabled:
            return
        if self._last_time is None:
            self._last_time = start_time
        if self.bar is not None:
            rate = tokens / (now - start_time) if now > start_time else 0.0
            self.bar.set_postfix({"loss": f"{loss:.4f}",
                                  "tokens/s": f"{rate:,.0f}"}, refresh=False)
            self.bar.update(1)
            return
        if not (self.log_every > 0 and (step % self.log_every == 0
                                        or step == self.end)):
            return
        n = step - self._last_step
        dt = now - self._last_time
        rate = (tokens - self._last_tokens) / dt if dt > 0 else 0.0
        lr_text = f" lr {lr:.3e}" if lr is not None else ""
        self.write(f"step {step}/{self.end} loss {loss:.6f}{lr_text} "
                   f"{dt * 1e3 / max(n, 1):.1f} ms/step {rate:,.0f} tokens/s")
        self._last_step, self._last_time, self._last_tokens = step, now, tokens

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _step_counter(model) -> Optional[int]:
    """The executable's optimizer step counter ("step", f32 []), or None
    where it has none."""
    names = getattr(model, "_memfit_variable_names", None)
    if names is None:
        names = {name for name, _ in model.session.variables()}
        model._memfit_variable_names = names
    if "step" not in names:
        return None
    return int(round(float(model.session.read_variable("step"))))


def train(model, data: Data, *, steps: int, log_every: int = 10,
          lr: LearningRate = None, checkpoint_dir: Optional[str] = None,
          checkpoint_every: int = 0, resume: bool = True,
          progress: bool = True, cycle: bool = False,
          save_total_limit: Optional[int] = 2) -> TrainResult:
    """Trains `model` (a memfit Model compiled with a TrainConfig) until its
    step counter reaches `steps`, one `model.step(**batch)` per batch of
    `data`.

    - lr: None (the TrainConfig's learning_rate), a number, or a function
      of the 0-based optimizer step returning the rate (a schedule).
    - checkpoint_dir: checkpoints every `checkpoint_every` steps (0: only
      at the end) and at the end; with resume, a later call continues from
      the newest one, skipping the batches it consumed. save_total_limit
      checkpoints are kept (None: all).
    - Data that runs out before `steps` ends the loop with a message (the
      result's `stopped`), unless cycle=True starts it again.
    - progress: a tqdm bar on a terminal where tqdm is installed, else a
      line every log_every steps (step, loss, lr, ms/step, tokens/s).
    - A memfit error in a step is raised as MemfitError with "step N: "
      before memfit's message.
    """
    if steps < 0 or checkpoint_every < 0 or log_every < 0:
        raise ValueError(f"train(): steps ({steps}), checkpoint_every "
                         f"({checkpoint_every}) and log_every ({log_every}) "
                         "must not be negative")
    if lr is not None and not callable(lr):
        lr = float(lr)
    checkpoints = _Checkpoints(checkpoint_dir, save_total_limit) \
        if checkpoint_dir is not None else None

    session = model.session  # creates it: kernels compiled or loaded
    start = _step_counter(model) or 0
    skip = 0
    resumed_from = None
    if checkpoints is not None and resume:
        state = checkpoints.latest()
        if state is not None:
            path = os.path.join(checkpoints.folder, state["checkpoint"])
            try:
                session.load_checkpoint(path)
            except MemfitError as e:
                raise MemfitError(f"resume from {path}: {e}") from e
            counter = _step_counter(model)
            start = int(state["step"]) if counter is None else counter
            skip = int(state["batches"])
            resumed_from = path

    default_lr = getattr(model, "_learning_rate", None)
    device = session.device
    peak = int(session.allocated_bytes)
    header = (f"training on {device}: steps {start + 1} to {steps}; one "
              f"allocation of {peak:,} bytes on the device (memfit allocates "
              "the plan's peak once)")
    if start >= steps:
        header = (f"nothing to train: the model is at step {start}, "
                  f"steps={steps}")
    if resumed_from:
        header = f"resumed from {resumed_from} at step {start}\n" + header
    bar = _Progress(progress, log_every, start, steps, header)

    batches = _Batches(data, cycle)
    result = TrainResult(losses=[], start_step=start, end_step=start,
                         tokens=0, tokens_per_second=0.0, peak_bytes=peak,
                         seconds=0.0, first_step_seconds=0.0, device=device,
                         checkpoint=resumed_from)
    loop_start = time.perf_counter()

    def finish(reason: Optional[str] = None) -> TrainResult:
        bar.close()
        result.seconds = time.perf_counter() - loop_start
        result.tokens_per_second = (result.tokens / result.seconds
                                    if result.seconds > 0 else 0.0)
        result.stopped = reason
        if reason:
            if progress:
                bar.write(reason)
            else:
                warnings.warn(reason, RuntimeWarning, stacklevel=3)
        if progress and result.losses:
            ms = result.seconds * 1e3 / len(result.losses)
            bar.write(f"trained {len(result.losses)} steps in "
                      f"{result.seconds:.2f} s ({ms:.1f} ms/step, "
                      f"{result.tokens_per_second:,.0f} tokens/s), last loss "
                      f"{result.losses[-1]:.6f}; {peak:,} bytes on "
                      f"{device.split(' ')[0]}")
        return result

    def checkpoint(step: int) -> None:
        # One batch per step: the batches that the steps so far consumed.
        if checkpoints is None:
            return
        result.checkpoint = checkpoints.save(
            model, step, skip + step - start,
            result.losses[-1] if result.losses else None)
        if progress and bar.bar is None:
            bar.write(f"saved checkpoint {result.checkpoint} at step {step}")

    for i in range(skip):
        if batches.next() is None:
            return finish(f"the data ran out while skipping the {skip} "
                          f"batches that the checkpoint consumed (at batch "
                          f"{i + 1}); pass cycle=True or more data")

    loop_start = time.perf_counter()
    step = start
    try:
        while step < steps:
            global_step = step + 1
            batch = batches.next()
            if batch is None:
                if result.losses:
                    checkpoint(step)
                return finish(f"the data ran out after {skip + step - start} "
                              f"batches, at step {step} of {steps}; pass "
                              "cycle=True to start it again")
            if not isinstance(batch, Mapping):
                raise TypeError(f"step {global_step}: a batch is a dict of "
                                "arrays for model.step(**batch), got "
                                f"{type(batch).__name__} (data is an "
                                "iterable of batches: [batch] for one)")
            rate = lr(step) if callable(lr) else lr
            step_start = time.perf_counter()
            try:
                loss = model.step(lr=rate, **batch)
            except MemfitError as e:
                raise MemfitError(f"step {global_step}: {e}") from e
            now = time.perf_counter()
            if not result.losses:
                result.first_step_seconds = now - step_start
            result.losses.append(loss)
            result.tokens += _tokens(batch)
            result.end_step = step = global_step
            bar.step(step, loss, rate if rate is not None else default_lr,
                     now, result.tokens, loop_start)
            if checkpoint_every and step % checkpoint_every == 0 and \
                    step != steps:
                checkpoint(step)
    except KeyboardInterrupt:
        # A step interrupted after its kernels ran has still been taken:
        # the counter says which.
        counter = _step_counter(model)
        if counter is not None:
            step = counter
        if step > start:
            checkpoint(step)
        bar.close()
        raise
    except BaseException:
        bar.close()
        raise
    if result.losses:
        checkpoint(step)
    return finish()
