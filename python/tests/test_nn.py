"""normlab.nn from Python: the C++ layers (forward against NumPy, their tensors as attributes),
Python modules with Parameters and buffers, Sequential, state_dict / load_state_dict (checked all
or nothing), train/eval, dtype conversion, forward hooks, the LSTMs and the GPT, safetensors files."""
import os
import subprocess

import numpy as np
import pytest

import normlab
from normlab import nn


def test_linear_matches_numpy_and_its_tensors_are_attributes():
    normlab.manual_seed(0)
    lin = nn.Linear(3, 2)
    assert repr(lin) == "Linear(in_features=3, out_features=2, bias=True)"
    assert lin.weight.shape == (2, 3) and lin.bias.shape == (2,)
    bound = 1 / np.sqrt(3)
    assert np.all(np.abs(lin.weight.detach().numpy()) <= bound)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = lin(normlab.tensor(x)).detach().numpy()
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    np.testing.assert_allclose(y, x @ w.T + b, rtol=1e-6, atol=1e-6)
    # The attribute is the module's tensor: its gradient is the one backward wrote.
    lin(normlab.tensor(x)).sum().backward()
    np.testing.assert_allclose(lin.weight.grad.numpy(), np.tile(x.sum(0), (2, 1)), rtol=1e-6)
    np.testing.assert_allclose(lin.bias.grad.numpy(), [4.0, 4.0])


def test_manual_seed_makes_the_same_weights():
    normlab.manual_seed(7)
    a = nn.Linear(5, 4).weight.detach().numpy()
    normlab.manual_seed(7)
    b = nn.Linear(5, 4).weight.detach().numpy()
    c = nn.Linear(5, 4).weight.detach().numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(b, c)


def test_a_native_layers_tensors_are_not_replaced_by_assignment():
    lin = nn.Linear(2, 2)
    with pytest.raises(AttributeError, match="copy new values in"):
        lin.weight = nn.Parameter(normlab.zeros(2, 2))
    with normlab.no_grad():
        lin.weight.copy_(normlab.ones(2, 2))
        lin.bias.zero_()
    np.testing.assert_array_equal(lin(normlab.tensor([[1.0, 2.0]])).detach().numpy(), [[3.0, 3.0]])
    with pytest.raises(RuntimeError, match="requires grad"):
        lin.weight.copy_(normlab.ones(2, 2))


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(normlab.tensor([2.0]))
        self.fc1 = nn.Linear(2, 4)
        self.norm = nn.LayerNorm(4)
        self.fc2 = nn.Linear(4, 1)
        self.register_buffer("calls", normlab.zeros(1))

    def forward(self, x):
        return self.fc2(self.norm(self.fc1(x * self.scale)).relu())


def test_a_python_module_registers_parameters_children_and_buffers_in_pytorchs_order():
    m = TwoLayer()
    names = [n for n, _ in m.named_parameters()]
    assert names == ["scale", "fc1.weight", "fc1.bias", "norm.weight", "norm.bias", "fc2.weight", "fc2.bias"]
    assert [n for n, _ in m.named_buffers()] == ["calls"]
    assert list(m.state_dict()) == ["scale", "calls", "fc1.weight", "fc1.bias", "norm.weight", "norm.bias",
                                    "fc2.weight", "fc2.bias"]
    assert sum(p.numel() for p in m.parameters()) == 1 + 12 + 8 + 5
    assert repr(m) == ("TwoLayer(\n  (fc1): Linear(in_features=2, out_features=4, bias=True)\n"
                       "  (norm): LayerNorm((4,), eps=1e-05, elementwise_affine=True)\n"
                       "  (fc2): Linear(in_features=4, out_features=1, bias=True)\n)")
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'scale'"):
        m.scale = normlab.zeros(1)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        m.nothing


def test_a_parameter_shared_by_two_modules_is_listed_once():
    m = nn.Module()
    m.a = nn.Linear(2, 2)
    m.b = m.a
    assert len(list(m.parameters())) == 2


def test_state_dict_round_trip_and_all_or_nothing_loading():
    normlab.manual_seed(1)
    a, b = TwoLayer(), TwoLayer()
    sd = a.state_dict()
    assert all(isinstance(v, np.ndarray) for v in sd.values())
    before = b.state_dict()
    bad = dict(sd)
    bad["fc1.weight"] = np.zeros((3, 3), np.float32)
    bad["extra"] = np.zeros(1)
    del bad["fc2.bias"]
    with pytest.raises(RuntimeError) as e:
        b.load_state_dict(bad)
    msg = str(e.value)
    assert 'Unexpected key(s) in state_dict: "extra"' in msg
    assert 'Missing key(s) in state_dict: "fc2.bias"' in msg
    assert "size mismatch for fc1.weight: copying a param with shape [3, 3]" in msg
    for k, v in b.state_dict().items():
        np.testing.assert_array_equal(v, before[k])  # unchanged
    result = b.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    x = normlab.tensor(np.random.default_rng(0).normal(size=(5, 2)).astype(np.float32))
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    # strict=False reports what did not match, and loads the rest.
    partial = {"scale": np.array([3.0])}
    r = b.load_state_dict(partial, strict=False)
    assert "fc1.weight" in r.missing_keys and b.scale.item() == 3.0


def test_batchnorm_train_and_eval_and_num_batches_tracked():
    bn = nn.BatchNorm1d(3)
    assert repr(bn) == "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    x = normlab.tensor(np.array([[1.0, 2.0, 3.0], [3.0, 6.0, 9.0]], np.float32))
    y = bn(x).detach().numpy()
    np.testing.assert_allclose(y, [[-1, -1, -1], [1, 1, 1]], atol=1e-4)
    np.testing.assert_allclose(bn.running_mean.numpy(), [0.2, 0.4, 0.6], rtol=1e-6)
    np.testing.assert_allclose(bn.running_var.numpy(), [0.9 + 0.1 * 2, 0.9 + 0.1 * 8, 0.9 + 0.1 * 18], rtol=1e-6)
    sd = bn.state_dict()
    assert sd["num_batches_tracked"].dtype == np.int64 and sd["num_batches_tracked"] == 1
    seq = nn.Sequential(nn.Linear(3, 3), bn)
    seq.eval()
    assert not bn.training and not seq[0].training
    bn(x)
    np.testing.assert_allclose(bn.running_mean.numpy(), [0.2, 0.4, 0.6], rtol=1e-6)  # eval: unchanged
    seq.train()
    assert bn.training


def test_sequential_indexing_printing_and_training_an_mlp():
    normlab.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.LayerNorm(16), nn.ReLU(), nn.Linear(16, 2))
    assert len(model) == 4 and isinstance(model[-1], nn.Linear) and len(model[1:3]) == 2
    assert repr(model).splitlines()[0] == "Sequential(" and "(2): ReLU()" in repr(model)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 2)).astype(np.float32)
    y = (x[:, 0] * x[:, 1] > 0).astype(np.int64)
    opt = normlab.optim.Adam(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    first = None
    for _ in range(60):
        opt.zero_grad()
        loss = loss_fn(model(normlab.tensor(x)), y)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert loss.item() < 0.5 * first


def test_to_double_keeps_the_optimizers_handles():
    m = TwoLayer()
    opt = normlab.optim.SGD(m.parameters(), lr=0.1)
    m.double()
    assert all(p.dtype == "float64" for p in m.parameters())
    assert m.calls.dtype == "float64"
    x = normlab.tensor(np.ones((3, 2)))
    m(x).sum().backward()
    before = m.fc2.bias.detach().numpy().copy()
    opt.step()
    np.testing.assert_allclose(m.fc2.bias.detach().numpy(), before - 0.1 * 3, rtol=1e-12)


def test_forward_hooks_see_every_call_and_can_be_removed():
    seen = []
    lin = nn.Linear(2, 3)
    h = lin.register_forward_hook(lambda mod, inputs, out: seen.append(out.shape))
    model = nn.Sequential(lin, nn.ReLU())
    model(normlab.zeros(4, 2))
    h.remove()
    model(normlab.zeros(4, 2))
    assert seen == [(4, 3)]


def test_conv_pool_and_norms_shapes():
    x = normlab.tensor(np.random.default_rng(1).normal(size=(2, 3, 8, 8)).astype(np.float32))
    net = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                        nn.GroupNorm(2, 4), nn.InstanceNorm2d(4), nn.AvgPool2d(2), nn.Flatten(), nn.RMSNorm(16))
    assert net(x).shape == (2, 16)
    assert nn.AdaptiveAvgPool2d(1)(x).shape == (2, 3, 1, 1)
    assert nn.Conv2d(3, 6, (3, 1), stride=(2, 1)).weight.shape == (6, 3, 3, 1)


def test_embedding_takes_integer_ids():
    emb = nn.Embedding(10, 4)
    out = emb(np.array([[1, 2, 3], [4, 5, 9]]))
    assert out.shape == (2, 3, 4)
    np.testing.assert_array_equal(out.detach().numpy()[1, 2], emb.weight.detach().numpy()[9])
    with pytest.raises(RuntimeError, match="out of range|outside"):
        emb(np.array([10]))
    with pytest.raises(TypeError, match="integer"):
        emb(np.array([1.5]))


@pytest.mark.parametrize("cls", [nn.LSTM, nn.LayerNormLSTM, nn.BatchNormLSTM])
def test_the_lstms_return_the_output_and_the_last_states(cls):
    lstm = cls(3, 5, batch_first=True)
    x = normlab.tensor(np.random.default_rng(2).normal(size=(4, 6, 3)).astype(np.float32))
    out, (h, c) = lstm(x)
    assert out.shape == (4, 6, 5) and h.shape == (1, 4, 5) and c.shape == (1, 4, 5)
    np.testing.assert_allclose(out.detach().numpy()[:, -1], h.detach().numpy()[0], rtol=1e-6)
    out2, _ = lstm(x, (h, c))
    assert out2.shape == (4, 6, 5)
    with pytest.raises(RuntimeError, match="expected"):
        lstm(x, (normlab.zeros(1, 3, 5), c))


def test_gpt_forward_and_names():
    gpt = nn.GPT(vocab_size=11, block_size=8, n_layer=2, n_head=2, width=16)
    logits = gpt(np.array([[1, 2, 3, 4], [5, 6, 7, 8]]))
    assert logits.shape == (2, 4, 11)
    names = list(gpt.state_dict())
    assert names[0] == "transformer.wte.weight" and "transformer.h.1.ln_2.weight" in names
    assert names[-1] == "lm_head.weight"
    loss = normlab.cross_entropy(logits.reshape(8, 11), np.array([2, 3, 4, 5, 6, 7, 8, 9]))
    loss.backward()
    assert all(p.grad is not None for p in gpt.parameters())
    with pytest.raises(RuntimeError, match="block"):
        gpt(np.zeros((1, 9), np.int64))


def test_constructor_errors_are_value_errors_naming_the_layer():
    with pytest.raises(ValueError, match="Linear"):
        nn.Linear(-1, 2)
    with pytest.raises(ValueError, match="GroupNorm"):
        nn.GroupNorm(3, 4)
    with pytest.raises(TypeError, match="kernel_size"):
        nn.Conv2d(1, 1, "3")
    with pytest.raises(ValueError, match="reduction"):
        nn.CrossEntropyLoss(reduction="sum")


def test_save_file_and_load_file(tmp_path):
    m = TwoLayer()
    path = tmp_path / "model.safetensors"
    normlab.save_file(m.state_dict(), path, metadata={"note": "test"})
    loaded = normlab.load_file(path)
    assert set(loaded) == set(m.state_dict())
    fresh = TwoLayer()
    fresh.load_state_dict(loaded)
    for k, v in fresh.state_dict().items():
        np.testing.assert_array_equal(v, m.state_dict()[k])
    assert normlab.safetensors.load_metadata(path)["note"] == "test"
    (tmp_path / "bad.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json")
    with pytest.raises(RuntimeError, match="bad.safetensors"):
        normlab.load_file(tmp_path / "bad.safetensors")


def test_a_checkpoint_the_command_wrote_loads_into_the_same_layout(tmp_path):
    exe = os.environ.get("NORMLAB_BIN")
    if not exe:
        pytest.skip("NORMLAB_BIN (the normlab command, set by CTest) is not set")
    subprocess.run([exe, "train", "--quick", "--norm", "batch", "--epochs", "1", "--out", str(tmp_path / "run")],
                   check=True, capture_output=True)
    path = tmp_path / "run" / "model.safetensors"
    meta = normlab.safetensors.load_metadata(path)
    assert meta["model"] == "2-32-32-2" and meta["norm"] == "batch"
    model = nn.Sequential(nn.Linear(2, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 32), nn.BatchNorm1d(32),
                          nn.ReLU(), nn.Linear(32, 2))
    result = model.load_state_dict(normlab.load_file(path))
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(model) == meta["repr"]
    assert model.state_dict()["1.num_batches_tracked"] == int(meta["steps"])
