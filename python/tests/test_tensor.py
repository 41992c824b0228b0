"""normlab's Python package: tensors from and to NumPy, the ops against NumPy, autograd against
the gradients written out by hand, grad mode, gradcheck, the errors Python gets, and PyTorch's
values where python3-torch is installed."""
import math

import numpy as np
import pytest

import normlab
from normlab import autograd


def test_numpy_shares_the_tensors_memory_and_keeps_it_alive():
    t = normlab.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    a = t.numpy()
    assert a.dtype == np.float32 and a.shape == (2, 3) and a.flags.c_contiguous and a.flags.writeable
    a[0, 1] = 42.0  # as torch.Tensor.numpy(): the tensor sees it
    assert t[0].tolist() == [0.0, 42.0, 2.0]
    with normlab.no_grad():
        t.mul_(2.0)
    assert a[0, 1] == 84.0
    row = t[1].numpy()  # a select is a view of the same storage at an offset, or a copy: either way right
    np.testing.assert_array_equal(row, [6.0, 8.0, 10.0])
    del t
    import gc
    gc.collect()
    assert a.sum() == 0 + 84 + 4 + 6 + 8 + 10  # the buffer outlives the tensor
    assert normlab.zeros(0, 3).numpy().shape == (0, 3)
    assert normlab.tensor(np.array(3.0)).numpy().shape == ()


def test_numpy_round_trip_keeps_values_dtype_and_shape_and_copies():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    t = normlab.tensor(a)
    assert t.dtype == "float64" and t.shape == (2, 3, 4) and t.ndim == 3 and t.numel() == 24
    np.testing.assert_array_equal(t.numpy(), a)
    a[0, 0, 0] = 100.0  # a copy: the tensor does not see the change
    assert t.numpy()[0, 0, 0] == 0.0
    assert normlab.tensor([[1, 2], [3, 4]]).dtype == "float32"  # ints and lists: float32
    assert normlab.tensor(np.ones(2), dtype="float32").dtype == "float32"
    # A non-contiguous view is read in its logical order.
    v = np.arange(6.0).reshape(2, 3).T
    np.testing.assert_array_equal(normlab.tensor(v).numpy(), v)
    assert normlab.tensor(np.zeros((0, 3))).shape == (0, 3)
    assert normlab.tensor(2.5).item() == 2.5


def test_from_numpy_shares_the_arrays_memory_where_it_can():
    import gc
    import sys
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    refs = sys.getrefcount(a)
    t = normlab.from_numpy(a)
    assert t.dtype == "float32" and t.shape == (2, 3)
    assert sys.getrefcount(a) == refs + 1  # the tensor holds the array
    a[1, 2] = 50.0  # as torch.from_numpy: the tensor sees the array's writes...
    assert t[1, 2].item() == 50.0
    with normlab.no_grad():
        t.add_(1.0)  # ...and the array sees the tensor's
    assert a[0, 0] == 1.0 and a[1, 2] == 51.0
    assert np.shares_memory(t.numpy(), a)
    y = (t * 2).sum()  # ops read the borrowed memory
    assert y.item() == 2 * float(a.sum())
    w = normlab.from_numpy(np.ones(4))  # float64 stays float64, shared
    assert w.dtype == "float64"
    view = t[1]
    del t
    gc.collect()
    assert sys.getrefcount(a) == refs + 1  # a view of it keeps the array too
    del view
    gc.collect()
    assert sys.getrefcount(a) == refs  # released with the last tensor
    # Arrays it cannot share are copied: strided, read-only, other dtypes.
    for other in (np.arange(12.0).reshape(3, 4)[:, ::2], np.arange(4.0).reshape(2, 2).T,
                  np.frombuffer(b"\0" * 16, dtype=np.float32), np.arange(3), np.array([True, False])):
        c = normlab.from_numpy(other)
        np.testing.assert_array_equal(c.numpy(), other.astype(c.numpy().dtype))
        assert not np.shares_memory(c.numpy(), other)
    assert normlab.from_numpy(np.arange(3)).dtype == "float32"
    z = normlab.from_numpy(np.zeros((0, 3), dtype=np.float32))
    assert z.shape == (0, 3) and z.sum().item() == 0.0


def test_a_borrowed_array_freed_inside_backward_is_released_with_the_gil():
    # The graph holds the only tensor over the array; backward (which runs without the GIL) frees
    # it, and the release takes the GIL to drop the array: no deadlock, no crash.
    import sys
    a = np.linspace(-1, 1, 8)
    refs = sys.getrefcount(a)
    w = normlab.tensor(np.ones(8), requires_grad=True)
    y = (normlab.from_numpy(a) * w).sum()
    assert sys.getrefcount(a) == refs + 1
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), a)
    del y
    assert sys.getrefcount(a) == refs


def test_ops_match_numpy_with_broadcasting():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    ta, tb = normlab.tensor(a), normlab.tensor(b)
    np.testing.assert_allclose((ta + tb).numpy(), a + b)
    np.testing.assert_allclose((ta - tb).numpy(), a - b)
    np.testing.assert_allclose((ta * tb).numpy(), a * b)
    np.testing.assert_allclose((ta / (tb * tb + 1)).numpy(), a / (b * b + 1))
    np.testing.assert_allclose((2 * ta + 1).numpy(), 2 * a + 1)
    np.testing.assert_allclose((1 - ta).numpy(), 1 - a)
    m = rng.standard_normal((4, 5))
    np.testing.assert_allclose((ta @ normlab.tensor(m)).numpy(), a @ m, rtol=1e-12)
    np.testing.assert_allclose(ta.sum().item(), a.sum())
    np.testing.assert_allclose(ta.sum(1).numpy(), a.sum(1))
    np.testing.assert_allclose(ta.mean(0, keepdim=True).numpy(), a.mean(0, keepdims=True))
    np.testing.assert_allclose(ta.var(1).numpy(), a.var(1, ddof=1))
    np.testing.assert_allclose(ta.var(1, unbiased=False).numpy(), a.var(1))
    np.testing.assert_array_equal(ta.reshape(2, 6).numpy(), a.reshape(2, 6))
    np.testing.assert_array_equal(ta.transpose(0, 1).numpy(), a.T)
    np.testing.assert_array_equal(ta.T.numpy(), a.T)
    np.testing.assert_allclose(ta.exp().numpy(), np.exp(a))
    np.testing.assert_allclose(normlab.log(ta.exp()).numpy(), a, atol=1e-12)
    np.testing.assert_array_equal(ta.relu().numpy(), np.maximum(a, 0))
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(ta.softmax(1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(ta[1].numpy(), a[1])
    np.testing.assert_array_equal(ta[-1].numpy(), a[-1])
    assert len(ta) == 3


def test_backward_gives_the_gradients_written_out_by_hand():
    rng = np.random.default_rng(1)
    xv, wv = rng.standard_normal((5, 3)), rng.standard_normal((3, 4))
    x = normlab.tensor(xv, requires_grad=True)
    w = normlab.tensor(wv, requires_grad=True)
    y = ((x @ w) * (x @ w)).sum()  # d/dW = 2 x^T (x W), d/dx = 2 (x W) W^T
    y.backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * xv.T @ (xv @ wv), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 2 * (xv @ wv) @ wv.T, rtol=1e-12)
    assert x.is_leaf and not y.is_leaf
    # Cross-entropy: (softmax - onehot) / N.
    logits = normlab.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    target = np.array([0, 2, 1, 2])
    loss = normlab.cross_entropy(logits, target)
    loss.backward()
    p = logits.softmax(1).detach().numpy()
    p[np.arange(4), target] -= 1
    np.testing.assert_allclose(logits.grad.numpy(), p / 4, rtol=1e-10, atol=1e-14)
    lp = logits.detach().log_softmax(1).numpy()
    np.testing.assert_allclose(loss.item(), -lp[np.arange(4), target].mean(), rtol=1e-12)


def test_autograd_grad_leaves_grad_alone_and_differentiates_twice():
    x = normlab.tensor(np.array([1.0, 2.0, -3.0]), requires_grad=True)
    y = (x * x * x).sum()
    (g,) = autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * np.array([1.0, 4.0, 9.0]))
    assert x.grad is None
    (h,) = autograd.grad(g.sum(), x)  # d/dx of sum 3 x^2 = 6 x
    np.testing.assert_allclose(h.numpy(), [6.0, 12.0, -18.0])


def test_no_grad_records_nothing_and_restores_the_mode():
    x = normlab.tensor(np.ones(3), requires_grad=True)
    with normlab.no_grad():
        assert not normlab.is_grad_enabled()
        assert not (x * 2).requires_grad
        with normlab.enable_grad():
            assert (x * 2).requires_grad
        assert not normlab.is_grad_enabled()
    assert normlab.is_grad_enabled() and (x * 2).requires_grad

    @normlab.no_grad()
    def doubled(t):
        return t * 2

    assert not doubled(x).requires_grad and normlab.is_grad_enabled()
    with pytest.raises(ZeroDivisionError):
        with normlab.no_grad():
            1 / 0
    assert normlab.is_grad_enabled()  # restored after an exception too


def test_gradcheck_passes_a_correct_function_and_catches_a_wrong_one():
    rng = np.random.default_rng(2)
    x = normlab.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    w = normlab.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    assert autograd.gradcheck(lambda a, b: ((a @ b).tanh() * a.sum()).sum(), [x, w])
    assert autograd.gradcheck(lambda a: normlab.layer_norm(a, [3]), [x])
    # A function whose backward is wrong: the detached factor's derivative is missing.
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):
        autograd.gradcheck(lambda a: a * a.detach(), [x])


def test_the_seed_documents_layer_norm_example():
    # x = [4, 2, 8], gamma = [1.5, 1, 0.5], beta = [0.5, 0, -0.5]: PyTorch's 0.0991, -1.0690, 0.1682.
    x = normlab.tensor([[4.0, 2.0, 8.0]], dtype="float64")
    y = normlab.layer_norm(x, [3], normlab.tensor([1.5, 1.0, 0.5], dtype="float64"),
                           normlab.tensor([0.5, 0.0, -0.5], dtype="float64"))
    np.testing.assert_allclose(y.numpy()[0], [0.0991, -1.0690, 0.1682], atol=5e-5)
    mean, var = 14 / 3, np.var([4.0, 2.0, 8.0])
    expected = np.array([1.5, 1.0, 0.5]) * (np.array([4.0, 2.0, 8.0]) - mean) / math.sqrt(var + 1e-5) + [0.5, 0, -0.5]
    np.testing.assert_allclose(y.numpy()[0], expected, rtol=1e-12)


def test_bad_input_is_a_python_exception_in_normlab_s_words():
    a, b = normlab.zeros(2, 3), normlab.zeros(4)
    with pytest.raises(RuntimeError, match="broadcast"):
        a + b
    with pytest.raises(RuntimeError):
        a @ normlab.zeros(2, 2)
    with pytest.raises(RuntimeError):
        a.reshape(5)
    with pytest.raises(IndexError, match="out of bounds"):
        a[2]
    with pytest.raises(IndexError):
        normlab.tensor(1.0)[0]
    with pytest.raises(ValueError, match="requires grad"):
        normlab.tensor([1.0], requires_grad=True).numpy()
    with pytest.raises(ValueError, match="cannot be converted"):
        a.item()
    with pytest.raises(TypeError):
        normlab.tensor(np.array(["a", "b"]))
    with pytest.raises(TypeError, match="dtype must be float32 or float64"):
        normlab.tensor([1.0], dtype="int8")
    with pytest.raises(TypeError):
        a + "x"
    with pytest.raises(RuntimeError):
        normlab.cross_entropy(normlab.zeros(2, 3), np.array([0, 3]))  # a class out of range
    with pytest.raises(RuntimeError):
        normlab.zeros(2).backward()  # a gradient of a 2-element output needs grad_outputs
    with pytest.raises(TypeError):
        len(normlab.tensor(1.0))


try:
    import torch  # Debian's python3-torch: the parity cases run where it is installed
except ImportError:  # pragma: no cover
    torch = None


@pytest.mark.skipif(torch is None, reason="python3-torch is not installed")
def test_values_and_gradients_match_pytorch():
    rng = np.random.default_rng(3)
    xv = rng.standard_normal((4, 6))
    x = normlab.tensor(xv, requires_grad=True)
    tx = torch.tensor(xv, requires_grad=True)
    y = normlab.layer_norm(x, [6]).tanh().softmax(1).log().mean()
    ty = torch.nn.functional.layer_norm(tx, (6,)).tanh().softmax(1).log().mean()
    y.backward()
    ty.backward()
    np.testing.assert_allclose(y.item(), ty.item(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-13)


def test_gradgradcheck_of_second_derivatives():
    rng = np.random.default_rng(4)
    x = normlab.tensor(rng.normal(size=(3, 4)), requires_grad=True)
    w = normlab.tensor(rng.normal(size=4), requires_grad=True)
    b = normlab.tensor(rng.normal(size=4), requires_grad=True)
    assert autograd.gradgradcheck(lambda a, g, c: normlab.layer_norm(a, [4], g, c), [x, w, b])
    assert autograd.gradgradcheck(lambda a: (a.tanh() * a).sum(dim=1), [x])
    v = normlab.tensor(rng.normal(size=(3, 4)))
    assert autograd.gradgradcheck(lambda a: a.softmax(dim=1), [x], grad_outputs=v)
    with pytest.raises(TypeError, match="must return a Tensor"):
        autograd.gradgradcheck(lambda a: 1.0, [x])
    with pytest.raises(RuntimeError, match="float64"):
        autograd.gradgradcheck(lambda a: a * a, [normlab.tensor([1.0], requires_grad=True)])
