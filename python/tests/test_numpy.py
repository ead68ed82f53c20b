"""The memfit package with NumPy arrays: compile, plan, run and train the GPT
fixture, against onnxruntime (forward) and memfit-run (training losses),
and the errors a bad argument raises."""

import os
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import memfit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GPT = os.path.join(ROOT, "test", "models", "gpt_ts.onnx")
MEMFIT_RUN = os.environ.get("MEMFIT_RUN",
                            os.path.join(ROOT, "build", "bin", "memfit-run"))
SHAPES = {"input_ids": (2, 16)}


def ids(seed=0, high=64):
    return np.random.default_rng(seed).integers(0, high, (2, 16)).astype(
        np.int64)


@pytest.fixture(scope="module")
def forward():
    return memfit.compile(GPT, input_shapes=SHAPES, device="host")


def test_forward_matches_onnxruntime(forward):
    x = ids()
    got = forward.run(input_ids=x)
    (name,) = got
    sess = ort.InferenceSession(GPT, providers=["CPUExecutionProvider"])
    want = sess.run(None, {"input_ids": x})[0]
    assert got[name].shape == want.shape
    np.testing.assert_allclose(got[name], want, rtol=1e-4, atol=1e-5)


def test_model_proto_and_bytes(forward):
    x = ids(1)
    want = forward.run(input_ids=x)
    proto = onnx.load(GPT)
    for model in (proto, proto.SerializeToString()):
        got = memfit.compile(model, input_shapes=SHAPES, device="host").run(
            input_ids=x)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])


def memfit_run_report(*flags):
    """memfit-run's memory report rows {category: bytes} and its text."""
    out = subprocess.run(
        [MEMFIT_RUN, GPT, "--device=host", "--input-shape=input_ids=2x16",
         "--plan-only", "--fuse", *flags],
        capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out[out.index("memory report ("):].splitlines()[2:]:
        m = re.match(r"\s+(\S.*?)\s+([0-9,]+)\s+[0-9.]+(?:\s+[0-9.]+)?$",
                     line)
        if m:
            rows[m.group(1)] = int(m.group(2).replace(",", ""))
    return rows


def test_memory_report_matches_memfit_run():
    """The report's categories (the manifest's names: optimizer_states is
    memfit-run's "optimizer states") and bytes are memfit-run's, for a
    forward pass and a training step; the one allocation is what a session
    makes."""
    train = memfit.compile(GPT, input_shapes=SHAPES, device="host",
                           train=memfit.TrainConfig())
    for model, flags in ((memfit.compile(GPT, input_shapes=SHAPES), ()),
                         (train, ("--train", "--loss=cross-entropy"))):
        report = model.memory_report()
        want = memfit_run_report(*flags)
        assert len(report) > 5
        for category, nbytes in report.items():
            assert want[category.replace("_", " ")] == nbytes, category
        assert report.total_bytes == want["one allocation"]
        assert "memory plan:" in str(report)
    assert train.peak_bytes == train.memory_report().total_bytes


def test_offload_optimizer():
    """TrainConfig(offload="optimizer"), ZeRO-Offload: the fp32 masters and
    the optimizer states in host memory (4 + 8 bytes a parameter with
    AdamW), the same losses to the bit, the device's allocation smaller by
    at least the states (in fp32 its working copies are the masters'
    size)."""
    x, labels = ids(2), ids(3)
    models = [memfit.compile(GPT, input_shapes=SHAPES, device="host",
                             train=memfit.TrainConfig(offload=offload))
              for offload in (None, "optimizer")]
    losses = [[m.step(input_ids=x, labels=labels) for _ in range(3)]
              for m in models]
    assert losses[0] == losses[1]
    device, offloaded = models
    assert device.host_bytes == 0
    report = offloaded.memory_report()
    assert offloaded.host_bytes == report["host region"] > 0
    assert report["host optimizer_states"] >= 8 * 30592
    assert report["host parameters"] == 4 * 30592
    assert (device.peak_bytes - offloaded.peak_bytes
            >= report["host optimizer_states"])
    with pytest.raises(ValueError, match="offload 'states'"):
        memfit.TrainConfig(offload="states").to_options()
    options = memfit.TrainConfig(offload="optimizer,activations").to_options()
    assert options["offload_optimizer"] and options["offload_activations"]


def test_plan_only_does_not_run():
    plan = memfit.compile(GPT, input_shapes=SHAPES, plan_only=True)
    assert plan.plan_only
    assert plan.memory_report()["parameters"] > 0
    with pytest.raises(memfit.MemfitError, match="plan only"):
        plan.run(input_ids=ids())


def test_training_matches_memfit_run(tmp_path):
    x, labels = ids(2), ids(3)
    model = memfit.compile(GPT, input_shapes=SHAPES, device="host",
                           train=memfit.TrainConfig(learning_rate=1e-3))
    losses = [model.step(input_ids=x, labels=labels) for _ in range(3)]
    assert losses[2] < losses[0]
    np.save(tmp_path / "ids.npy", x)
    np.save(tmp_path / "labels.npy", labels)
    out = subprocess.run(
        [MEMFIT_RUN, GPT, "--device=host", "--input-shape=input_ids=2x16",
         "--fuse", "--train", "--loss=cross-entropy", "--steps=3",
         "--lr=1e-3",
         f"--input=input_ids={tmp_path / 'ids.npy'}",
         f"--input=labels={tmp_path / 'labels.npy'}"],
        capture_output=True, text=True, check=True).stdout
    printed = [float(v) for v in re.findall(r"^step \d+/3 loss (\S+)", out,
                                            re.M)]
    assert printed == [float(f"{l:.6f}") for l in losses]


def test_accumulation_matches_memfit_run(tmp_path):
    """gradient_accumulation_steps=2: a step takes its 2 micro-batches
    stacked, and gives memfit-run --accumulate=2's losses on the same
    micro-batches."""
    steps, k = 3, 2
    x = np.stack([ids(20 + i) for i in range(steps * k)])
    y = np.stack([ids(40 + i) for i in range(steps * k)])
    model = memfit.compile(GPT, input_shapes=SHAPES, device="host",
                           train=memfit.TrainConfig(
                               learning_rate=1e-3,
                               gradient_accumulation_steps=k))
    assert set(model.entries) == {"accumulate", "apply"}
    losses = [model.step(input_ids=x[s * k:(s + 1) * k],
                         labels=y[s * k:(s + 1) * k]) for s in range(steps)]
    np.save(tmp_path / "ids.npy", x)
    np.save(tmp_path / "labels.npy", y)
    out = subprocess.run(
        [MEMFIT_RUN, GPT, "--device=host", "--input-shape=input_ids=2x16",
         "--fuse", "--train", "--loss=cross-entropy", f"--steps={steps}",
         f"--accumulate={k}", "--lr=1e-3",
         f"--data=input_ids={tmp_path / 'ids.npy'}",
         f"--data=labels={tmp_path / 'labels.npy'}"],
        capture_output=True, text=True, check=True).stdout
    printed = [float(v) for v in re.findall(
        rf"^step \d+/{steps} loss (\S+)", out, re.M)]
    assert printed == [float(f"{l:.6f}") for l in losses]
    with pytest.raises(memfit.MemfitError,
                       match="each input holds the step's 2 micro-batches"):
        model.step(input_ids=ids(), labels=ids())


def test_state_dict(tmp_path):
    """A training step's parameters under the ONNX initializers' names, equal
    to them before the first step and changed after it."""
    model = memfit.compile(GPT, input_shapes=SHAPES, device="host",
                           train=memfit.TrainConfig())
    weights = model.state_dict()
    inits = {t.name: onnx.numpy_helper.to_array(t)
             for t in onnx.load(GPT).graph.initializer}
    common = sorted(set(weights) & set(inits))
    assert len(common) == len(weights) > 0
    for name in common:
        np.testing.assert_array_equal(weights[name], inits[name])
    model.step(input_ids=ids(5), labels=ids(6))
    after = model.state_dict()
    assert any(not np.array_equal(after[n], weights[n]) for n in common)


def test_gradients_only():
    """optim="none": the entry `main` gives the loss and every gradient,
    which are finite, and the loss is the training step's first."""
    x, labels = ids(7), ids(8)
    grads = memfit.compile(GPT, input_shapes=SHAPES, device="host",
                           train=memfit.TrainConfig(optim="none"))
    out = grads.run(input_ids=x, labels=labels)
    inits = {t.name for t in onnx.load(GPT).graph.initializer}
    names = [n[len("grad."):] for n in out if n.startswith("grad.")]
    assert names and set(names) <= inits
    assert all(np.isfinite(out[f"grad.{n}"]).all() for n in names)
    step = memfit.compile(GPT, input_shapes=SHAPES, device="host",
                          train=memfit.TrainConfig())
    assert float(out["loss"]) == step.step(input_ids=x, labels=labels)


def test_remat_report():
    """remat_report() is memfit-run --remat-report's text; under a budget
    some value is recomputed."""
    budget = 600 * 1024
    model = memfit.compile(GPT, input_shapes=SHAPES, plan_only=True,
                           train=memfit.TrainConfig(memory_budget="600KiB"))
    text = model.remat_report()
    assert text.startswith(f"remat report for @train_step: policy auto, "
                           f"budget {budget}")
    assert re.search(r"^\S+\s+\S+\s+.*\srecompute\s", text, re.M)
    with pytest.raises(memfit.MemfitError, match="without train="):
        memfit.compile(GPT, input_shapes=SHAPES,
                       plan_only=True).remat_report()


def test_export_onnx(tmp_path):
    """The trained weights in the source graph: onnxruntime's forward of
    the export equals memfit's forward after the step."""
    x = ids(9)
    model = memfit.compile(GPT, input_shapes=SHAPES, device="host",
                           train=memfit.TrainConfig(learning_rate=1e-2))
    model.step(input_ids=x, labels=ids(10))
    model.export_onnx(tmp_path / "trained.onnx")
    sess = ort.InferenceSession(str(tmp_path / "trained.onnx"),
                                providers=["CPUExecutionProvider"])
    trained = {t.name: onnx.numpy_helper.to_array(t)
               for t in onnx.load(tmp_path / "trained.onnx").graph.initializer}
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(trained[name], value)
    forward = memfit.compile(tmp_path / "trained.onnx", input_shapes=SHAPES,
                             device="host")
    np.testing.assert_allclose(forward.run(input_ids=x)[
        sess.get_outputs()[0].name], sess.run(None, {"input_ids": x})[0],
        rtol=1e-4, atol=1e-5)


def test_save_and_load(tmp_path, forward):
    forward.save(tmp_path / "exe")
    again = memfit.load(tmp_path / "exe", device="host")
    x = ids(4)
    first, second = forward.run(input_ids=x), again.run(input_ids=x)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name])


def test_errors(forward):
    with pytest.raises(memfit.MemfitError, match="missing input 'input_ids'"):
        forward.run()
    with pytest.raises(memfit.MemfitError, match="no input named 'tokens'"):
        forward.run(input_ids=ids(), tokens=ids())
    with pytest.raises(memfit.MemfitError, match="expected i64 elements"):
        forward.run(input_ids=ids().astype(np.int32))
    with pytest.raises(memfit.MemfitError, match="expected 2x16xi64"):
        forward.run(input_ids=np.zeros((2, 8), np.int64))
    with pytest.raises(memfit.MemfitError, match="nowhere.onnx"):
        memfit.compile("nowhere.onnx")
    with pytest.raises(ValueError, match="optim 'adam'"):
        memfit.compile(GPT, input_shapes=SHAPES,
                       train=memfit.TrainConfig(optim="adam"))
    with pytest.raises(memfit.MemfitError, match="'sideways' is not a"):
        memfit.compile(GPT, input_shapes=SHAPES,
                       train=memfit.TrainConfig(remat="sideways"))
    with pytest.raises(memfit.MemfitError, match="unknown option 'colour'"):
        memfit._memfit.compile(GPT, {"colour": 1})
