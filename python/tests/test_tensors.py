"""torch tensors in and out of the memfit package (DLPack): the same
results as NumPy arrays, outputs as torch tensors when the inputs were,
and the errors of a wrong dtype or shape."""

import os

import numpy as np
import pytest

import memfit

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
GPT = os.path.join(ROOT, "test", "models", "gpt_ts.onnx")
SHAPES = {"input_ids": (2, 16)}


def ids(seed):
    return np.random.default_rng(seed).integers(0, 64, (2, 16)).astype(
        np.int64)


@pytest.fixture(scope="module")
def forward():
    return memfit.compile(GPT, input_shapes=SHAPES, device="host")


def test_run_with_torch_tensors(forward):
    x = ids(0)
    want = forward.run(input_ids=x)
    got = forward.run(input_ids=torch.from_numpy(x))
    assert set(got) == set(want)
    for name, value in got.items():
        assert isinstance(value, torch.Tensor)
        assert value.dtype == torch.float32
        np.testing.assert_array_equal(value.numpy(), want[name])


def test_non_contiguous_tensor(forward):
    """A transposed view is read in C order (a copy where the layout needs
    one), so it gives what its contiguous copy gives."""
    x = torch.from_numpy(ids(1))
    view = x.t().contiguous().t()
    assert not view.is_contiguous()
    a = forward.run(input_ids=view)
    b = forward.run(input_ids=x)
    for name in a:
        assert torch.equal(a[name], b[name])


def test_step_and_state_dict_with_torch():
    """Training from torch tensors gives NumPy's losses; state_dict and
    load_state_dict take and give torch tensors."""
    batches = [(ids(2 * i), ids(2 * i + 1)) for i in range(3)]
    config = memfit.TrainConfig(learning_rate=1e-2)
    a = memfit.compile(GPT, input_shapes=SHAPES, device="host", train=config)
    b = memfit.compile(GPT, input_shapes=SHAPES, device="host", train=config)
    start = b.state_dict(framework="torch")
    assert all(isinstance(v, torch.Tensor) for v in start.values())
    for x, y in batches:
        assert a.step(input_ids=x, labels=y) == b.step(
            input_ids=torch.from_numpy(x), labels=torch.from_numpy(y))
    trained = a.state_dict()
    for name, value in b.state_dict(framework="torch").items():
        np.testing.assert_array_equal(value.numpy(), trained[name])
    # The starting weights back from torch tensors.
    b.load_state_dict(start)
    for name, value in b.state_dict().items():
        np.testing.assert_array_equal(value, start[name].numpy())


def test_torch_errors(forward):
    x = torch.from_numpy(ids(3))
    with pytest.raises(memfit.MemfitError,
                       match="expected i64 elements, got an array of int32"):
        forward.run(input_ids=x.int())
    with pytest.raises(memfit.MemfitError,
                       match="expected i64 elements, got an array of float32"):
        forward.run(input_ids=x.float())
    with pytest.raises(memfit.MemfitError, match="expected 2x16xi64, got 2x8xi64"):
        forward.run(input_ids=x[:, :8])
    with pytest.raises(memfit.MemfitError, match="framework 'jax'"):
        forward.session.output("logits", "jax")


def test_write_safetensors_round_trip(tmp_path):
    """The extension's safetensors writer, read back by the safetensors
    package: names, dtypes (bf16 included) and values."""
    st = pytest.importorskip("safetensors.torch")
    tensors = {"w": torch.randn(3, 4), "b": torch.randn(5).bfloat16(),
               "ids": np.arange(6, dtype=np.int64).reshape(2, 3)}
    path = tmp_path / "t.safetensors"
    memfit._memfit.write_safetensors(str(path), tensors, {"format": "pt"})
    back = st.load_file(str(path))
    assert set(back) == set(tensors)
    assert torch.equal(back["w"], tensors["w"])
    assert back["b"].dtype == torch.bfloat16
    assert torch.equal(back["b"], tensors["b"])
    assert torch.equal(back["ids"], torch.from_numpy(tensors["ids"]))
    with pytest.raises(memfit.MemfitError, match="tensor 'c'"):
        memfit._memfit.write_safetensors(
            str(path), {"c": torch.zeros(2, dtype=torch.complex64)})
