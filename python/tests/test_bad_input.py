"""The bad-input battery from Python: every case is a clean Python exception of the type PyTorch
raises (TypeError, ValueError, IndexError, RuntimeError, AttributeError, KeyError, OSError) with a
message saying what was expected; none crashes or hangs the interpreter. Each case is a callable
and the exception and message it must raise."""
import math

import numpy as np
import pytest

import normlab
from normlab import nn, optim
from normlab.optim import lr_scheduler

T = normlab.tensor


def leaf():
    return T([1.0, 2.0, 3.0], requires_grad=True)


def lin():
    return nn.Linear(3, 2)


def sgd():
    return optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


CASES = [
    # ---- making tensors -------------------------------------------------------------------
    ("tensor of a string", lambda: T("abc"), TypeError, "numeric"),
    ("tensor of a ragged list", lambda: T([[1.0, 2.0], [3.0]]), (ValueError, TypeError), ""),
    ("tensor of None", lambda: T(None), TypeError, ""),
    ("tensor of a dict", lambda: T({"a": 1}), TypeError, ""),
    ("tensor of complex numbers", lambda: T(np.array([1 + 2j])), TypeError, "numeric"),
    ("tensor of an object array", lambda: T(np.array([object()])), TypeError, "numeric"),
    ("tensor of datetimes", lambda: T(np.array(["2020-01-01"], dtype="datetime64[D]")), TypeError, "numeric"),
    ("tensor with dtype int64", lambda: T([1.0], dtype="int64"), TypeError, "float32 or float64"),
    ("tensor with dtype 3", lambda: T([1.0], dtype=3), TypeError, "float32 or float64"),
    ("tensor with dtype numpy.int32", lambda: T([1.0], dtype=np.int32), TypeError, "float32 or float64"),
    ("from_numpy of a list", lambda: normlab.from_numpy([1, 2]), TypeError, ""),
    ("from_numpy of strings", lambda: normlab.from_numpy(np.array(["a"])), TypeError, "numeric"),
    ("zeros with a negative size", lambda: normlab.zeros(-1, 2), RuntimeError, "negative|-1"),
    ("ones with a float size", lambda: normlab.ones(2.5), TypeError, ""),
    ("zeros of a huge shape", lambda: normlab.zeros(2 ** 40, 2 ** 40), RuntimeError, "2\\^60|too large|elements"),
    ("arange with step 0", lambda: normlab.arange(0, 5, 0), RuntimeError, "step"),
    ("arange with a NaN end", lambda: normlab.arange(0, float("nan")), RuntimeError, "finite"),
    ("arange of 1e300 values", lambda: normlab.arange(0, 1e300), RuntimeError, "2\\^60"),
    ("a huge broadcast array", lambda: T(np.broadcast_to(np.zeros(1, np.float32), (2 ** 21, 2 ** 20))),
     ValueError, "too large"),
    ("Tensor() of a string", lambda: normlab.Tensor("x"), TypeError, "numeric"),
    # ---- reading tensors ------------------------------------------------------------------
    ("numpy() of a tensor that requires grad", lambda: leaf().numpy(), ValueError, "detach"),
    ("item() of three elements", lambda: leaf().item(), ValueError, "3 elements"),
    ("item() of no element", lambda: T([]).item(), ValueError, "0 elements"),
    ("len() of a 0-d tensor", lambda: len(T(1.0)), TypeError, "0-d"),
    ("index out of range", lambda: T([1.0, 2.0])[2], IndexError, "out of bounds"),
    ("negative index out of range", lambda: T([1.0, 2.0])[-3], IndexError, "out of bounds"),
    ("index of a 0-d tensor", lambda: T(1.0)[0], IndexError, "0-dim"),
    ("index by a string", lambda: T([1.0])["a"], IndexError, "got str"),
    ("index by a float", lambda: T([1.0])[0.5], IndexError, "got float"),
    ("too many indices", lambda: normlab.zeros(2, 3)[0, 1, 2], IndexError, "too many indices"),
    ("two ellipses", lambda: normlab.zeros(2, 3)[..., ...], IndexError, "single ellipsis"),
    ("a slice of step 0", lambda: normlab.zeros(4)[::0], ValueError, "step"),
    ("a negative step", lambda: normlab.zeros(4)[::-1], ValueError, "greater than zero"),
    ("an index array out of range", lambda: normlab.zeros(2, 3)[:, [0, 3]], IndexError, "dimension 1 with size 3"),
    ("an index array of floats", lambda: normlab.zeros(3)[np.array([0.5])], IndexError, "integer or boolean"),
    ("two index arrays", lambda: normlab.zeros(3, 3)[[0, 1], [1, 2]], IndexError, "at most one"),
    ("a tensor as an index", lambda: normlab.zeros(3)[T([0.0])], IndexError, "cannot be indices"),
    ("a mask of the wrong shape", lambda: normlab.zeros(2, 3)[np.array([True, False, True])], IndexError,
     "shape of the mask"),
    ("a boolean scalar index", lambda: normlab.zeros(3)[True], IndexError, "got bool"),
    ("assignment of the wrong shape", lambda: normlab.zeros(2, 3).__setitem__(0, [1.0, 2.0]), ValueError,
     "broadcast"),
    ("assignment of a string", lambda: normlab.zeros(2).__setitem__(0, "a"), ValueError, ""),
    ("assignment out of range", lambda: normlab.zeros(2).__setitem__(5, 1.0), IndexError, "out of bounds"),
    ("assignment with a negative step", lambda: normlab.zeros(4).__setitem__(slice(None, None, -1), 1.0), ValueError,
     "greater than zero"),
    ("size of dim 5", lambda: T([1.0]).size(5), (IndexError, RuntimeError), "dim|range"),
    ("to int8", lambda: T([1.0]).to("int8"), TypeError, "float32 or float64"),
    # ---- ops ------------------------------------------------------------------------------
    ("add of shapes that do not broadcast", lambda: T([1.0, 2.0]) + T([1.0, 2.0, 3.0]), RuntimeError, "broadcast"),
    ("mul of float32 and float64", lambda: T([1.0]) * T(np.array([1.0])), RuntimeError, "dtype"),
    ("add of a string", lambda: T([1.0]) + "a", TypeError, "unsupported operand"),
    ("add of None", lambda: T([1.0]) + None, TypeError, "unsupported operand"),
    ("matmul of (2,3) by (2,3)", lambda: normlab.zeros(2, 3) @ normlab.zeros(2, 3), RuntimeError, "matmul"),
    ("matmul of a 0-d tensor", lambda: T(1.0) @ T(2.0), RuntimeError, ""),
    ("matmul with a number", lambda: normlab.zeros(2, 2) @ 3, TypeError, ""),
    ("sum over dim 3 of a 1-d tensor", lambda: T([1.0]).sum(3), (IndexError, RuntimeError), "dim"),
    ("mean over a repeated dim", lambda: normlab.zeros(2, 2).mean([0, 0]), RuntimeError, "dim"),
    ("reshape to the wrong size", lambda: normlab.zeros(2, 3).reshape(4, 2), RuntimeError, "shape"),
    ("reshape with two -1", lambda: normlab.zeros(2, 3).reshape(-1, -1), RuntimeError, "-1"),
    ("transpose of dim 2 of a 2-d tensor", lambda: normlab.zeros(2, 3).transpose(0, 2), (IndexError, RuntimeError), ""),
    ("permute with too few dims", lambda: normlab.zeros(2, 3).permute(0), RuntimeError, ""),
    ("permute with a repeated dim", lambda: normlab.zeros(2, 3).permute(0, 0), RuntimeError, ""),
    ("squeeze of dim 4", lambda: normlab.zeros(2, 1).squeeze(4), (IndexError, RuntimeError), ""),
    ("unsqueeze at dim 5", lambda: normlab.zeros(2).unsqueeze(5), (IndexError, RuntimeError), ""),
    ("flatten with start after end", lambda: normlab.zeros(2, 3, 4).flatten(2, 1), RuntimeError, ""),
    ("softmax over dim 2 of a 2-d tensor", lambda: normlab.zeros(2, 3).softmax(dim=2), (IndexError, RuntimeError), ""),
    ("pow by a tensor", lambda: T([1.0]) ** T([2.0]), TypeError, ""),
    ("cross_entropy of 1-d logits", lambda: normlab.cross_entropy(T([1.0, 2.0]), [0]), RuntimeError, ""),
    ("cross_entropy with a class out of range", lambda: normlab.cross_entropy(normlab.zeros(2, 3), [0, 3]),
     RuntimeError, "3"),
    ("cross_entropy with a negative class", lambda: normlab.cross_entropy(normlab.zeros(2, 3), [0, -1]),
     RuntimeError, "-1"),
    ("cross_entropy with too few targets", lambda: normlab.cross_entropy(normlab.zeros(2, 3), [0]), RuntimeError, ""),
    ("cross_entropy with string targets", lambda: normlab.cross_entropy(normlab.zeros(1, 3), ["a"]),
     (TypeError, ValueError), ""),
    ("mse_loss of different shapes", lambda: normlab.mse_loss(normlab.zeros(2), normlab.zeros(3)), RuntimeError, ""),
    ("layer_norm over the wrong shape", lambda: normlab.layer_norm(normlab.zeros(2, 3), [4]), RuntimeError, ""),
    ("layer_norm with a wrong weight", lambda: normlab.layer_norm(normlab.zeros(2, 3), [3], normlab.zeros(2)),
     RuntimeError, ""),
    ("layer_norm with eps -1", lambda: normlab.layer_norm(normlab.zeros(2, 3), [3], eps=-1.0), RuntimeError, "eps"),
    # ---- in-place updates -------------------------------------------------------------------
    ("add_ on a leaf that requires grad", lambda: leaf().add_(1.0), RuntimeError, "normlab.no_grad"),
    ("-= on a leaf that requires grad", lambda: leaf().__isub__(1.0), RuntimeError, "requires grad"),
    ("copy_ of another shape", lambda: normlab.zeros(2).copy_(normlab.zeros(3)), (RuntimeError, ValueError), ""),
    ("add_ that would broadcast the tensor", lambda: normlab.zeros(1).add_(normlab.zeros(3)), ValueError,
     "broadcast shape"),
    ("fill_ with a string", lambda: normlab.zeros(2).fill_("a"), TypeError, ""),
    # ---- autograd -------------------------------------------------------------------------
    ("backward of a non-scalar without a gradient", lambda: (leaf() * 2).backward(), RuntimeError, "scalar|gradient"),
    ("backward of a tensor that does not require grad", lambda: T([1.0]).sum().backward(), RuntimeError, "grad"),
    ("backward twice", lambda: (lambda y: (y.backward(retain_graph=False), y.backward()))((leaf() * leaf()).sum()),
     RuntimeError, "second time|retain_graph|freed"),
    ("backward with a gradient of the wrong shape", lambda: (leaf() * 2).backward(normlab.zeros(2)), RuntimeError,
     "shape"),
    ("grad of an input not in the graph", lambda: normlab.autograd.grad((leaf() * 2).sum(), [leaf()]), RuntimeError,
     ""),
    ("grad with inputs of a string", lambda: normlab.autograd.grad(leaf().sum(), "x"), TypeError, ""),
    ("a .grad of the wrong type", lambda: setattr(leaf(), "grad", 3), TypeError, ""),
    ("gradcheck of a function returning a number",
     lambda: normlab.autograd.gradcheck(lambda t: 3.0, [T(np.array([1.0]), requires_grad=True)]), TypeError,
     "must return a Tensor"),
    ("gradcheck of a wrong gradient",
     lambda: normlab.autograd.gradcheck(lambda t: (t * t).detach() * t, [T(np.array([1.0, 2.0]), requires_grad=True)]),
     RuntimeError, ""),
    ("gradcheck of a raising function",
     lambda: normlab.autograd.gradcheck(lambda t: 1 / 0, [T(np.array([1.0]), requires_grad=True)]), ZeroDivisionError,
     ""),
    ("set_num_threads of 0", lambda: normlab.set_num_threads(0), RuntimeError, "1"),
    ("set_grad_enabled of a string", lambda: normlab.set_grad_enabled("yes"), TypeError, ""),
    # ---- modules: construction --------------------------------------------------------------
    ("Linear with a negative size", lambda: nn.Linear(-1, 2), ValueError, "Linear"),
    ("Linear with a float size", lambda: nn.Linear(2.5, 2), TypeError, ""),
    ("Conv2d with kernel 0", lambda: nn.Conv2d(1, 1, 0), ValueError, "Conv2d"),
    ("Conv2d with a string kernel", lambda: nn.Conv2d(1, 1, "3"), TypeError, "kernel_size"),
    ("Conv2d with a 3-tuple kernel", lambda: nn.Conv2d(1, 1, (3, 3, 3)), TypeError, "pair"),
    ("Conv2d with groups not dividing", lambda: nn.Conv2d(3, 4, 3, groups=2), ValueError, "groups"),
    ("MaxPool2d with kernel 0", lambda: nn.MaxPool2d(0), ValueError, "MaxPool2d"),
    ("BatchNorm1d of 0 features", lambda: nn.BatchNorm1d(0), ValueError, "BatchNorm1d"),
    ("BatchNorm1d with momentum 2", lambda: nn.BatchNorm1d(3, momentum=2.0), ValueError, "momentum"),
    ("BatchNorm2d with eps -1", lambda: nn.BatchNorm2d(3, eps=-1.0), ValueError, "eps"),
    ("LayerNorm of an empty shape", lambda: nn.LayerNorm([]), ValueError, "LayerNorm"),
    ("LayerNorm of a string shape", lambda: nn.LayerNorm("4"), TypeError, ""),
    ("GroupNorm with groups not dividing", lambda: nn.GroupNorm(3, 4), ValueError, "GroupNorm"),
    ("InstanceNorm2d of -2 features", lambda: nn.InstanceNorm2d(-2), ValueError, "InstanceNorm2d"),
    ("RMSNorm with eps 0", lambda: nn.RMSNorm(4, eps=0.0), ValueError, "RMSNorm"),
    ("Embedding of -1 rows", lambda: nn.Embedding(-1, 3), ValueError, "Embedding"),
    ("Dropout with p 1.5", lambda: nn.Dropout(1.5), ValueError, "Dropout"),
    ("LSTM of hidden size 0", lambda: nn.LSTM(3, 0), ValueError, "LSTM"),
    ("GPT with heads not dividing width", lambda: nn.GPT(10, 8, 1, 3, 16), ValueError, "GPT"),
    ("GPT with an unknown norm", lambda: nn.GPT(10, 8, 1, 2, 16, norm="weird"), ValueError, "layer"),
    ("TransformerBlock with position middle", lambda: nn.TransformerBlock(16, 2, position="middle"), ValueError,
     "pre"),
    ("Sequential of a number", lambda: nn.Sequential(3), TypeError, "not a Module"),
    ("CrossEntropyLoss with reduction sum", lambda: nn.CrossEntropyLoss(reduction="sum"), ValueError, "reduction"),
    ("a Parameter of a string", lambda: nn.Parameter("x"), TypeError, "numeric"),
    # ---- modules: forward -------------------------------------------------------------------
    ("Linear on the wrong width", lambda: lin()(normlab.zeros(4, 5)), RuntimeError, "expected input of shape"),
    ("Linear on float64 input", lambda: lin()(T(np.zeros((2, 3)))), RuntimeError, "to\\(float64\\)"),
    ("Linear on a list", lambda: lin()([1.0, 2.0, 3.0]), TypeError, ""),
    ("Linear on None", lambda: lin()(None), TypeError, ""),
    ("Conv2d on 3-d input", lambda: nn.Conv2d(1, 2, 3)(normlab.zeros(1, 5, 5)), RuntimeError, ""),
    ("Conv2d with the wrong channels", lambda: nn.Conv2d(2, 2, 3)(normlab.zeros(1, 3, 5, 5)), RuntimeError, ""),
    ("Conv2d with a kernel larger than the image", lambda: nn.Conv2d(1, 1, 5)(normlab.zeros(1, 1, 3, 3)),
     RuntimeError, ""),
    ("MaxPool2d larger than the image", lambda: nn.MaxPool2d(4)(normlab.zeros(1, 1, 2, 2)), RuntimeError, ""),
    ("BatchNorm1d in training on one sample", lambda: nn.BatchNorm1d(3)(normlab.zeros(1, 3)), (RuntimeError, ValueError),
     "more than 1 value"),
    ("BatchNorm1d on the wrong features", lambda: nn.BatchNorm1d(3)(normlab.zeros(4, 5)), RuntimeError, ""),
    ("BatchNorm2d on 2-d input", lambda: nn.BatchNorm2d(3)(normlab.zeros(4, 3)), RuntimeError, ""),
    ("LayerNorm on the wrong last dim", lambda: nn.LayerNorm(4)(normlab.zeros(2, 3)), RuntimeError, ""),
    ("GroupNorm on the wrong channels", lambda: nn.GroupNorm(2, 4)(normlab.zeros(2, 6, 3)), RuntimeError, ""),
    ("Embedding of an id out of range", lambda: nn.Embedding(4, 2)(np.array([4])), RuntimeError, "range"),
    ("Embedding of a negative id", lambda: nn.Embedding(4, 2)(np.array([-1])), RuntimeError, ""),
    ("Embedding of fractional ids", lambda: nn.Embedding(4, 2)(T([0.5])), RuntimeError, "whole numbers"),
    ("Embedding of NaN ids", lambda: nn.Embedding(4, 2)(T([math.nan])), RuntimeError, "whole numbers"),
    ("Embedding of float ids given as an array", lambda: nn.Embedding(4, 2)(np.array([1.0])), TypeError, "integer"),
    ("LSTM on 2-d input", lambda: nn.LSTM(3, 4)(normlab.zeros(5, 3)), RuntimeError, "expected"),
    ("LSTM with the wrong features", lambda: nn.LSTM(3, 4)(normlab.zeros(5, 2, 2)), RuntimeError, "expected"),
    ("LSTM with hx of one tensor", lambda: nn.LSTM(3, 4)(normlab.zeros(5, 2, 3), normlab.zeros(1, 2, 4)),
     TypeError, "pair \\(h_0, c_0\\)"),
    ("GPT on a sequence longer than the block", lambda: nn.GPT(10, 4, 1, 2, 8)(np.zeros((1, 5), np.int64)),
     RuntimeError, "block"),
    ("GPT on an id out of range", lambda: nn.GPT(10, 4, 1, 2, 8)(np.array([[10]])), RuntimeError, "10"),
    ("GPT on 1-d ids", lambda: nn.GPT(10, 4, 1, 2, 8)(np.array([1, 2])), RuntimeError, "\\(B, T\\)"),
    ("Module without forward", lambda: nn.Module()(1), NotImplementedError, "forward"),
    ("Sequential index out of range", lambda: nn.Sequential(nn.ReLU())[1], IndexError, "out of range"),
    ("CrossEntropyLoss with a wrong target count", lambda: nn.CrossEntropyLoss()(normlab.zeros(2, 3), [0]),
     RuntimeError, ""),
    # ---- modules: attributes and state ------------------------------------------------------
    ("a native parameter replaced", lambda: setattr(lin(), "weight", nn.Parameter(normlab.zeros(2, 3))),
     AttributeError, "copy new values in"),
    ("a Python parameter set to a plain tensor",
     lambda: (lambda m: (setattr(m, "w", nn.Parameter(normlab.zeros(1))), setattr(m, "w", normlab.zeros(1))))(nn.Module()),
     TypeError, "Parameter or None"),
    ("a parameter before Module.__init__", lambda: setattr(object.__new__(nn.Module), "w", nn.Parameter(T([1.0]))),
     AttributeError, "__init__"),
    ("register_buffer of a number", lambda: nn.Module().register_buffer("b", 3), TypeError, "buffer"),
    ("register_buffer with a dotted name", lambda: nn.Module().register_buffer("a.b", T([1.0])), KeyError, "\\."),
    ("add_module of a number", lambda: nn.Module().add_module("x", 3), TypeError, "not a Module"),
    ("an attribute that does not exist", lambda: lin().nothing, AttributeError, "no attribute 'nothing'"),
    ("train with a string", lambda: lin().train("yes"), ValueError, "boolean"),
    ("to int32", lambda: lin().to("int32"), TypeError, "float32 or float64"),
    ("load_state_dict of a list", lambda: lin().load_state_dict([1, 2]), TypeError, "dict-like"),
    ("load_state_dict with a missing key", lambda: lin().load_state_dict({"weight": np.zeros((2, 3))}), RuntimeError,
     'Missing key\\(s\\) in state_dict: "bias"'),
    ("load_state_dict with an unexpected key",
     lambda: lin().load_state_dict({**lin().state_dict(), "x": np.zeros(1)}), RuntimeError, 'Unexpected key\\(s\\)'),
    ("load_state_dict with a wrong shape",
     lambda: lin().load_state_dict({"weight": np.zeros((3, 3)), "bias": np.zeros(2)}), RuntimeError, "size mismatch"),
    ("load_state_dict of strings", lambda: lin().load_state_dict({"weight": np.full((2, 3), "a"), "bias": np.zeros(2)}),
     TypeError, "numbers"),
    # ---- optimizers and schedules -----------------------------------------------------------
    ("SGD without lr", lambda: optim.SGD(lin().parameters()), TypeError, "lr"),
    ("SGD of an empty list", lambda: optim.SGD([], lr=0.1), ValueError, "empty parameter list"),
    ("SGD of a tensor", lambda: optim.SGD(leaf(), lr=0.1), TypeError, "iterable of Tensors"),
    ("SGD of numbers", lambda: optim.SGD([1.0], lr=0.1), TypeError, "only optimize Tensors"),
    ("SGD with lr -1", lambda: optim.SGD(lin().parameters(), lr=-1.0), ValueError, "lr"),
    ("SGD with lr NaN", lambda: optim.SGD(lin().parameters(), lr=float("nan")), ValueError, "lr"),
    ("SGD with momentum 1.5", lambda: optim.SGD(lin().parameters(), lr=0.1, momentum=1.5), ValueError, "momentum"),
    ("SGD nesterov without momentum", lambda: optim.SGD(lin().parameters(), lr=0.1, nesterov=True), ValueError,
     "nesterov|Nesterov"),
    ("SGD of a tensor twice", lambda: (lambda p: optim.SGD([p, p], lr=0.1))(leaf()), ValueError, ""),
    ("SGD of a non-leaf", lambda: optim.SGD([leaf() * 2], lr=0.1), ValueError, "leaf"),
    ("Adam with beta 1", lambda: optim.Adam(lin().parameters(), betas=(1.0, 0.9)), ValueError, "beta"),
    ("Adam with eps -1", lambda: optim.Adam(lin().parameters(), eps=-1.0), ValueError, "eps"),
    ("Adam with betas of one number", lambda: optim.Adam(lin().parameters(), betas=(0.9,)), (TypeError, ValueError), ""),
    ("AdamW with weight decay -1", lambda: optim.AdamW(lin().parameters(), weight_decay=-1.0), ValueError,
     "weight_decay"),
    ("param groups", lambda: optim.SGD([{"params": list(lin().parameters())}], lr=0.1), ValueError, "groups"),
    ("lr set to -1", lambda: sgd().param_groups[0].__setitem__("lr", -1.0), ValueError, "lr"),
    ("lr set to a string", lambda: sgd().param_groups[0].__setitem__("lr", "x"), ValueError, ""),
    ("a step with a gradient of the wrong shape",
     lambda: (lambda p, o: (setattr(p, "grad", normlab.zeros(5)), o.step()))(*(lambda p: (p, optim.SGD([p], lr=0.1)))(leaf())),
     RuntimeError, "shape"),
    ("load_state_dict of an empty dict", lambda: sgd().load_state_dict({}), ValueError, "state"),
    ("load_state_dict of Adam's state into SGD",
     lambda: sgd().load_state_dict(optim.Adam(nn.Linear(2, 2).parameters()).state_dict()), RuntimeError, ""),
    ("load_state_dict with two groups",
     lambda: sgd().load_state_dict({"state": {}, "param_groups": [{}, {}]}), ValueError, "groups"),
    ("load_state_dict with a state of the wrong shape",
     lambda: (lambda o: o.load_state_dict({"state": {0: {"momentum_buffer": np.zeros(7)}},
                                           "param_groups": o.state_dict()["param_groups"]}))(
         optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1, momentum=0.9)), RuntimeError, ""),
    ("StepLR with step_size 0", lambda: lr_scheduler.StepLR(sgd(), step_size=0), ValueError, "StepLR"),
    ("CosineAnnealingLR with T_max 0", lambda: lr_scheduler.CosineAnnealingLR(sgd(), T_max=0), ValueError,
     "CosineAnnealingLR"),
    ("LinearLR with start 0", lambda: lr_scheduler.LinearLR(sgd(), start_factor=0.0), ValueError, "LinearLR"),
    ("SequentialLR with too many milestones",
     lambda: (lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.StepLR(o, 1)], [1, 2]))(sgd()), ValueError,
     "milestone"),
    ("SequentialLR of another optimizer's scheduler",
     lambda: lr_scheduler.SequentialLR(sgd(), [lr_scheduler.StepLR(sgd(), 1), lr_scheduler.StepLR(sgd(), 1)], [1]),
     ValueError, "optimizer"),
    # ---- files ----------------------------------------------------------------------------
    ("load_file of a missing file", lambda: normlab.load_file("/nonexistent/model.safetensors"), RuntimeError,
     "model.safetensors"),
    ("save_file into a missing folder", lambda: normlab.save_file({"a": T([1.0])}, "/nonexistent/x.safetensors"),
     RuntimeError, "x.safetensors"),
    ("save_file of a list", lambda: normlab.save_file([T([1.0])], "x.safetensors"), TypeError, "dict"),
    ("save_file with a number as name", lambda: normlab.save_file({1: T([1.0])}, "x.safetensors"), TypeError, "names"),
    ("save_file of strings", lambda: normlab.save_file({"a": np.array(["x"])}, "x.safetensors"), TypeError, "numeric"),
    ("save_file with metadata of a number", lambda: normlab.save_file({"a": T([1.0])}, "x.safetensors", {"k": 1}),
     TypeError, "metadata"),
    ("save_file with a reserved name", lambda: normlab.save_file({"__metadata__": T([1.0])}, "x.safetensors"),
     RuntimeError, "__metadata__"),
    ("save_file with an empty name", lambda: normlab.save_file({"": T([1.0])}, "x.safetensors"), RuntimeError, ""),
]


@pytest.mark.parametrize("what,call,exc,pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_a_clean_exception(what, call, exc, pattern, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(exc, match=pattern):
        call()


FILE_CASES = [
    ("an empty file", b"", "8 bytes|too short|short"),
    ("a header longer than the file", (10 ** 6).to_bytes(8, "little") + b"{}", "header"),
    ("a header that is not JSON", (9).to_bytes(8, "little") + b"{not json", "JSON|json"),
    ("a header that is a list", (2).to_bytes(8, "little") + b"[]", "object"),
    ("an unknown dtype", None, "dtype"),
    ("offsets past the end", None, "offsets|data"),
]


def header_file(header):
    import json
    h = json.dumps(header).encode()
    return len(h).to_bytes(8, "little") + h


@pytest.mark.parametrize("what,data,pattern", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_a_bad_safetensors_file_is_named_in_the_error(what, data, pattern, tmp_path):
    if what == "an unknown dtype":
        data = header_file({"a": {"dtype": "Q8", "shape": [1], "data_offsets": [0, 4]}}) + b"\0" * 4
    elif what == "offsets past the end":
        data = header_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}) + b"\0" * 4
    path = write(tmp_path / "bad.safetensors", data)
    with pytest.raises(RuntimeError, match=pattern) as e:
        normlab.load_file(path)
    assert "bad.safetensors" in str(e.value)
    with pytest.raises(RuntimeError):
        lin().load_state_dict(normlab.load_file(path))


def test_the_battery_has_at_least_100_cases():
    assert len(CASES) + len(FILE_CASES) >= 100
