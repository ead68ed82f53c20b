"""memfit.train on the GPT fixture: the losses of Model.step called by hand,
checkpoints that resume bit for bit, data that runs out or cycles, the
progress lines without tqdm, and errors that name their step."""

import json
import os
import sys

import numpy as np
import pytest

import memfit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GPT = os.path.join(ROOT, "test", "models", "gpt_ts.onnx")
SHAPES = {"input_ids": (2, 16)}


def batch(seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 64, (2, 17)).astype(np.int64)
    return {"input_ids": ids[:, :-1].copy(), "labels": ids[:, 1:].copy()}


BATCHES = [batch(i) for i in range(6)]


def fresh():
    """The fixture's training step from its initial weights (the second
    compile comes from the executable cache)."""
    return memfit.compile(GPT, input_shapes=SHAPES, device="host",
                          train=memfit.TrainConfig(learning_rate=1e-3))


def schedule(step):
    return 1e-3 * (step + 1) / 4


def test_losses_equal_model_step():
    result = memfit.train(fresh(), BATCHES, steps=4, lr=schedule,
                          progress=False)
    by_hand = fresh()
    want = [by_hand.step(lr=schedule(s), **b)
            for s, b in enumerate(BATCHES[:4])]
    assert result.losses == want
    assert (result.start_step, result.end_step) == (0, 4)
    assert result.tokens == 4 * 2 * 16
    assert result.tokens_per_second > 0 and result.seconds > 0
    assert result.peak_bytes == by_hand.session.allocated_bytes > 0
    assert result.stopped is None and result.checkpoint is None


def test_resume_is_bit_identical(tmp_path):
    whole = fresh()
    uninterrupted = memfit.train(whole, BATCHES, steps=6, progress=False)

    def data():  # a function returning a fresh iterator
        return iter(BATCHES)

    first = memfit.train(fresh(), data, steps=3, checkpoint_dir=tmp_path,
                         checkpoint_every=2, progress=False)
    assert first.checkpoint == str(tmp_path / "checkpoint-00000003.memfit")
    second_model = fresh()
    second = memfit.train(second_model, data, steps=6,
                          checkpoint_dir=tmp_path, progress=False)
    assert second.start_step == 3
    assert first.losses + second.losses == uninterrupted.losses
    for name, value in whole.state_dict().items():
        np.testing.assert_array_equal(second_model.state_dict()[name], value)

    state = json.loads((tmp_path / "memfit-train-state.json").read_text())
    assert (state["step"], state["batches"]) == (6, 6)
    assert state["checkpoint"] == "checkpoint-00000006.memfit"
    assert sorted(p.name for p in tmp_path.glob("*.memfit")) == [
        "checkpoint-00000003.memfit", "checkpoint-00000006.memfit"]
    # Nothing left to do: no step, no new checkpoint.
    again = memfit.train(fresh(), data, steps=6, checkpoint_dir=tmp_path,
                         progress=False)
    assert again.losses == [] and again.start_step == 6


def test_data_runs_out_or_cycles():
    with pytest.warns(RuntimeWarning, match="ran out after 2 batches"):
        short = memfit.train(fresh(), BATCHES[:2], steps=5, progress=False)
    assert len(short.losses) == 2 and "cycle=True" in short.stopped

    model = fresh()
    cycled = memfit.train(model, BATCHES[:2], steps=5, cycle=True,
                          progress=False)
    assert len(cycled.losses) == 5 and cycled.stopped is None
    with pytest.raises(ValueError, match="one-shot iterator"):
        memfit.train(model, iter(BATCHES[:1]), steps=7, cycle=True,
                     progress=False)


def test_progress_lines_without_tqdm(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    memfit.train(fresh(), BATCHES, steps=4, log_every=2)
    out = capsys.readouterr().out
    assert out.startswith("training on host")
    assert "steps 1 to 4; one allocation of" in out
    assert "bytes on the device" in out
    lines = [l for l in out.splitlines() if l.startswith("step ")]
    assert [l.split()[1] for l in lines] == ["2/4", "4/4"]
    for line in lines:
        assert " loss " in line and line.endswith("tokens/s")
    assert "trained 4 steps" in out


def test_errors_name_the_step():
    bad = BATCHES[:2] + [dict(BATCHES[2],
                              input_ids=BATCHES[2]["input_ids"].astype(
                                  np.int32))]
    model = fresh()
    with pytest.raises(memfit.MemfitError,
                       match=r"^step 3: .*expected i64 elements"):
        memfit.train(model, bad, steps=3, progress=False)
    with pytest.raises(TypeError, match="step 3: a batch is a dict"):
        memfit.train(model, [(1, 2)], steps=3, progress=False)


def test_torch_batches():
    torch = pytest.importorskip("torch")
    tensors = [{k: torch.from_numpy(v) for k, v in b.items()}
               for b in BATCHES[:3]]
    got = memfit.train(fresh(), tensors, steps=3, progress=False)
    want = memfit.train(fresh(), BATCHES[:3], steps=3, progress=False)
    assert got.losses == want.losses and got.tokens == want.tokens == 96
