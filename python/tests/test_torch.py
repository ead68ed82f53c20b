"""PyTorch and Hugging Face models through memfit.from_torch and
memfit.from_pretrained: loss and gradients equal PyTorch autograd's, a
training curve equals memfit-run's on the same exported file, and
save_pretrained's folders load in transformers and PEFT with the losses
memfit trained to.

Gradients are compared per tensor relative to the largest |gradient| of
that tensor (max |memfit - torch| / max |torch|); a tensor whose PyTorch
gradient is below 1e-9 of the model's largest (BERT's key biases: softmax
does not see them) must be as small in memfit. Models are tiny (2 layers,
hidden size 64, vocabulary 128, every dropout 0), batch 2 x sequence 16 with
the second row padded from position 12, on the host backend."""

import json
import os
import re
import subprocess
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("onnxscript")
import memfit  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MEMFIT_RUN = os.environ.get("MEMFIT_RUN",
                            os.path.join(ROOT, "build", "bin", "memfit-run"))
B, S, V = 2, 16, 128
PAD_FROM = 12
GRAD_TOL = 1e-5
LOSS_TOL = 1e-5

transformers.logging.set_verbosity_error()
torch.set_num_threads(1)


def build(family):
    """A seeded tiny Hugging Face model (test/models/make_hf_fixtures.py's
    configs), every dropout 0."""
    from transformers import (BertConfig, BertForMaskedLM, GPT2Config,
                              GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM)
    torch.manual_seed({"gpt2": 11, "bert": 12, "llama": 13}[family])
    if family == "gpt2":
        return GPT2LMHeadModel(GPT2Config(
            n_layer=2, n_embd=64, n_head=4, vocab_size=V, n_positions=64,
            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
            bos_token_id=0, eos_token_id=0))
    if family == "bert":
        return BertForMaskedLM(BertConfig(
            num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
            intermediate_size=128, vocab_size=V, max_position_embeddings=64,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))
    return LlamaForCausalLM(LlamaConfig(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=128, vocab_size=V,
        max_position_embeddings=64))


def batch(seed):
    """input_ids, attention_mask (row 1 padded) and labels as Hugging Face
    takes them: the ids themselves, -100 where padded. No id is 0, BERT's
    pad token: nn.Embedding(padding_idx=0) keeps that row's gradient zero,
    which the exported Gather does not say, so memfit trains it."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, V, (B, S)).astype(np.int64)
    mask = np.ones((B, S), np.int64)
    mask[1, PAD_FROM:] = 0
    labels = np.where(mask == 1, ids, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def hf_loss(model, feeds):
    out = model(**{k: torch.from_numpy(v) for k, v in feeds.items()})
    return out.loss


def grad_errors(model, memfit_out, module):
    """{torch name: relative error} of memfit's gradients against the
    module's .grad, through the recorded names (a weight that the export
    holds twice, once transposed, has one gradient: memfit ties them)."""
    grads = {n: p.grad.numpy() for n, p in module.named_parameters()
             if p.grad is not None}
    top = max(float(np.abs(g).max()) for g in grads.values())
    errors = {}
    for onnx_name, (name, transposed) in model._torch_source.names.items():
        got = memfit_out.get("grad." + onnx_name)
        if name not in grads or got is None:
            continue
        want = grads[name].T if transposed else grads[name]
        scale = float(np.abs(want).max())
        diff = float(np.abs(got - want).max())
        errors[name] = diff / scale if scale > 1e-9 * top else diff / top
    return errors, set(grads)


def check_gradients(model, module, feeds, ref_loss):
    out = model.run(**feeds)
    loss = float(out["loss"])
    assert abs(loss - ref_loss) <= LOSS_TOL * abs(ref_loss), (loss, ref_loss)
    errors, names = grad_errors(model, out, module)
    assert set(errors) == names  # every trainable parameter has a gradient
    worst = max(errors, key=errors.get)
    assert errors[worst] <= GRAD_TOL, (worst, errors[worst])
    return abs(loss - ref_loss) / abs(ref_loss), errors[worst]


# -- from_torch ---------------------------------------------------------------

class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.fc2 = torch.nn.Linear(32, 10)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.norm(self.fc1(x))))


def test_from_torch_mlp():
    torch.manual_seed(0)
    net = MLP()
    x = torch.randn(4, 16)
    y = torch.randint(0, 10, (4,))

    forward = memfit.from_torch(net, (x,), device="host")
    assert forward._torch_source.exporter == "dynamo"
    assert forward.entries["main"][0] == [("x", "f32", [4, 16])]
    got = forward.run(x=x)  # torch in, torch out
    (out,) = got.values()
    assert isinstance(out, torch.Tensor)
    np.testing.assert_allclose(out.numpy(), net(x).detach().numpy(),
                               rtol=1e-5, atol=1e-6)

    model = memfit.from_torch(net, (x,), device="host",
                              train=memfit.TrainConfig(optim="none"))
    assert {n for n, _ in model._torch_source.names.values()} == \
        set(net.state_dict())
    net.zero_grad()
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    check_gradients(model, net, {"x": x.numpy(), "labels": y.numpy()},
                    loss.item())


class Branchy(torch.nn.Module):
    """Data-dependent control flow (the dynamo exporter refuses it) and an
    embedding tied to the output projection, read through a 3-D matmul
    (the TorchScript exporter stores that weight transposed, renamed)."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(32, 16)
        self.proj = torch.nn.Linear(16, 16, bias=False)
        self.head = torch.nn.Linear(16, 32, bias=False)
        self.head.weight = self.embed.weight

    def forward(self, ids):
        h = self.embed(ids)
        if h.sum() > -1e9:  # always true, unknowable to torch.export
            h = torch.tanh(self.proj(h))
        return self.head(h)


def test_from_torch_falls_back_to_torchscript():
    torch.manual_seed(1)
    net = Branchy()
    ids = torch.randint(0, 32, (2, 8))
    with pytest.warns(UserWarning, match="dynamo exporter failed .*"
                      "TorchScript exporter"):
        model = memfit.from_torch(net, (ids,), device="host",
                                  train=memfit.TrainConfig(optim="none"))
    source = model._torch_source
    assert source.exporter == "torchscript"
    mapped = set(source.names.values())
    assert ("proj.weight", True) in mapped  # onnx::MatMul_*, transposed
    assert {n for n, _ in mapped} == {"embed.weight", "proj.weight"}
    assert source.state_names == ["embed.weight", "proj.weight"]
    labels = torch.randint(0, 32, (2, 8))
    net.zero_grad()
    loss = torch.nn.functional.cross_entropy(net(ids).reshape(-1, 32),
                                             labels.reshape(-1))
    loss.backward()
    check_gradients(model, net, {"ids": ids.numpy(),
                                 "labels": labels.numpy()}, loss.item())


# -- Hugging Face: gradients ------------------------------------------------

@pytest.mark.parametrize("family", ["gpt2", "bert", "llama"])
def test_hf_gradients(family):
    hf = build(family)
    model = memfit.from_pretrained(hf, batch_size=B, seq_len=S,
                                   device="host",
                                   train=memfit.TrainConfig(optim="none"))
    assert model._torch_source.task == ("masked-lm" if family == "bert"
                                        else "causal-lm")
    feeds = batch(5)
    hf.train()  # as memfit exported it (every dropout is 0)
    hf.zero_grad()
    loss = hf_loss(hf, feeds)
    loss.backward()
    check_gradients(model, hf, feeds, loss.item())


# -- Hugging Face: training, saving, loading ----------------------------------

ADAMW = dict(learning_rate=1e-3, weight_decay=0.01, adam_beta1=0.9,
             adam_beta2=0.999, adam_epsilon=1e-8)
STEPS = 50


def train_curve(family):
    """`family` after STEPS AdamW steps of Model.step, its losses and data."""
    model = memfit.from_pretrained(build(family), batch_size=B, seq_len=S,
                                   device="host",
                                   train=memfit.TrainConfig(**ADAMW))
    data = [batch(100 + i) for i in range(STEPS)]
    losses = [model.step(**b) for b in data]
    return model, losses, data


@pytest.fixture(scope="module")
def gpt2_trained():
    return train_curve("gpt2")


@pytest.mark.parametrize("family", ["gpt2", "bert", "llama"])
def test_curve_equals_memfit_run(gpt2_trained, family, tmp_path):
    model, losses, data = gpt2_trained if family == "gpt2" else \
        train_curve(family)
    assert losses[-1] < losses[0]
    args = [MEMFIT_RUN, model._source_path, "--device=host", "--train",
            "--quiet", "--input-shape=batch=2,seq=16", "--fuse",
            "--loss=cross-entropy", "--optimizer=adamw", f"--steps={STEPS}",
            "--lr=1e-3", "--beta1=0.9", "--beta2=0.999", "--eps=1e-8",
            "--weight-decay=0.01", f"--losses={tmp_path / 'losses.csv'}"]
    for key in ("input_ids", "attention_mask", "labels"):
        rows = np.stack([b[key] for b in data])
        # What Hugging Face's causal LM predicts; a masked LM's labels are
        # the tokens themselves.
        if key == "labels" and family != "bert":
            rows = np.concatenate(
                [rows[..., 1:], np.full_like(rows[..., :1], -100)], -1)
        np.save(tmp_path / f"{key}.npy", rows)
        args.append(f"--data={key}={tmp_path / key}.npy")
    args += [f"--frozen={f}" for f in model._options["train"].get(
        "frozen", [])]
    subprocess.run(args, check=True, capture_output=True, text=True)
    lines = (tmp_path / "losses.csv").read_text().split()
    assert lines[0] == "step,loss"
    theirs = [float(line.split(",")[1]) for line in lines[1:]]
    assert len(theirs) == STEPS
    # The same weights step for step; a loss may differ in its last bit
    # (measured on GPT-2: 1 ulp at 9 of the 50 steps, 1.0e-7 relative).
    worst = max(abs(a - b) / abs(b) for a, b in zip(losses, theirs))
    assert worst <= 1e-6, worst


def test_full_save_pretrained_and_back(gpt2_trained, tmp_path):
    model, _, _ = gpt2_trained
    folder = tmp_path / "full"
    model.save_pretrained(folder)
    assert sorted(os.listdir(folder)) == [
        "config.json", "generation_config.json", "model.safetensors"]
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".memfit")]
    feeds = batch(7)
    loss = model.step(**feeds)  # computed before this step's update
    loaded, info = transformers.AutoModelForCausalLM.from_pretrained(
        folder, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and \
        not info["mismatched_keys"], info
    with torch.no_grad():
        theirs = hf_loss(loaded.eval(), feeds).item()
    assert abs(theirs - loss) <= LOSS_TOL * loss, (theirs, loss)

    again = memfit.from_pretrained(str(folder), batch_size=B, seq_len=S,
                                   device="host",
                                   train=memfit.TrainConfig(optim="none"))
    assert again._torch_source.task == "causal-lm"
    ours = float(again.run(**feeds)["loss"])
    assert abs(ours - loss) <= LOSS_TOL * loss, (ours, loss)


@pytest.mark.parametrize("family,exporter,targets,adapted", [
    ("gpt2", "dynamo", ["c_attn"], ["transformer.h.{}.attn.c_attn"]),
    # TorchScript stores Llama's projections transposed, as onnx::MatMul_*.
    ("llama", "torchscript", ["q_proj", "v_proj"],
     ["model.layers.{}.self_attn.q_proj", "model.layers.{}.self_attn.v_proj"]),
])
def test_lora_save_pretrained_loads_in_peft(tmp_path, family, exporter,
                                            targets, adapted):
    peft = pytest.importorskip("peft")
    load_file = pytest.importorskip("safetensors.numpy").load_file
    lora = memfit.LoraConfig(r=4, lora_alpha=8, target_modules=targets)
    model = memfit.from_pretrained(
        build(family), batch_size=B, seq_len=S, device="host",
        exporter=exporter,
        train=memfit.TrainConfig(learning_rate=1e-2, lora=lora))
    assert model._torch_source.exporter == exporter
    for i in range(3):
        model.step(**batch(200 + i))
    folder = tmp_path / "adapters"
    model.save_pretrained(folder)
    feeds = batch(8)
    loss = model.step(**feeds)  # the trained adapters' loss, then an update

    config = json.loads((folder / "adapter_config.json").read_text())
    assert config["target_modules"] == sorted(
        m.format(i) for m in adapted for i in range(2))
    assert config["fan_in_fan_out"] == (family == "gpt2")  # GPT-2's Conv1D
    assert config["task_type"] == "CAUSAL_LM"
    assert (config["r"], config["lora_alpha"]) == (4, 8)
    saved = load_file(folder / "adapter_model.safetensors")
    assert len(saved) == 2 * len(config["target_modules"])
    assert f"base_model.model.{config['target_modules'][0]}.lora_A.weight" \
        in saved
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        peft_model = peft.PeftModel.from_pretrained(build(family), folder)
    assert not [w for w in caught if re.search(
        "missing|unexpected", str(w.message), re.I)]
    state = peft.utils.get_peft_model_state_dict(peft_model)
    assert set(state) == set(saved)
    for name, value in saved.items():
        np.testing.assert_array_equal(state[name].numpy(), value)
    assert any(np.abs(v).max() > 0 for n, v in saved.items()
               if "lora_B" in n)
    with torch.no_grad():
        theirs = hf_loss(peft_model.eval(), feeds).item()
    assert abs(theirs - loss) <= LOSS_TOL * loss, (theirs, loss)


# -- errors -----------------------------------------------------------------

def test_errors(tmp_path):
    net = MLP()
    x = torch.randn(4, 16)
    with pytest.raises(ValueError, match="takes no input named 'mask'"):
        memfit.from_torch(net, {"x": x, "mask": x})
    with pytest.raises(ValueError, match=r"takes 1 inputs \(x\), not 2"):
        memfit.from_torch(net, (x, x))
    with pytest.raises(ValueError, match="dynamic_axes names 'y'"):
        memfit.from_torch(net, (x,), dynamic_axes={"y": {0: "batch"}})
    with pytest.raises(memfit.MemfitError, match=re.escape(
            f"no folder '{tmp_path / 'nowhere'}'")):
        memfit.from_pretrained(tmp_path / "nowhere")
    with pytest.raises(memfit.MemfitError, match="has no config.json"):
        memfit.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="task 'seq2seq'"):
        memfit.from_pretrained(build("gpt2"), task="seq2seq")
    plain = memfit.compile(os.path.join(ROOT, "test", "models",
                                        "gpt_ts.onnx"),
                           input_shapes={"input_ids": (B, S)}, device="host")
    with pytest.raises(memfit.MemfitError, match="not made by from_torch"):
        plain.save_pretrained(tmp_path / "out")
    assert not os.path.exists(tmp_path / "out")
