"""Tensor indexing against NumPy's (the reference for every key: ints, slices of any positive step,
None, Ellipsis, one integer array or boolean mask), the gradients of indexing (each picked element
gets its output's gradient, a repeated index accumulating) checked by hand and by gradcheck in
float64, and x[key] = value against NumPy's assignment."""
import numpy as np
import pytest

import normlab
from normlab import autograd

A = np.arange(2 * 3 * 4 * 5, dtype=np.float64).reshape(2, 3, 4, 5) * 0.5 - 7.0

KEYS = [
    0, -1, 1,
    (0, 1), (1, 2, 3), (1, 2, 3, 4), (-1, -2, -3, -4),
    slice(None), slice(1, None), slice(0, 1), slice(None, -1), slice(5, 9),
    (slice(None), 0), (slice(None), slice(1, 3)), (slice(None), slice(None, None, 2)),
    (Ellipsis, 0), (Ellipsis, slice(1, 4, 2)), (0, Ellipsis, 1), (Ellipsis,), Ellipsis,
    None, (None, 0), (0, None, slice(None), None), (Ellipsis, None),
    (slice(None), slice(None), slice(None, None, 3)), (1, slice(0, 3, 2), slice(3, 0, 1)),
    [1, 0], [0, 0, 1], np.array([1, -2]), (slice(None), [2, 0, 2]), (Ellipsis, [4, 0]),
    (slice(None), np.array([[0, 1], [2, 2]])), (1, [2, 0, 2]),
    (np.int64(1), np.int32(2)), (slice(None), np.array(2)),
    np.array([True, False]), (slice(None), np.array([False, True, True])),
    (0, np.arange(12).reshape(3, 4) % 3 == 0), (Ellipsis, np.array([True, False, True, False, True])),
    (slice(None), slice(None), []),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k) for k in KEYS])
def test_indexing_matches_numpy(key):
    t = normlab.tensor(A)
    got = t[key]
    want = A[key]
    assert got.shape == want.shape, key
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("key", [(slice(None), [2, 0, 2]), (1, slice(0, 3, 2), slice(3, 0, 1)), 0,
                                 (Ellipsis, np.array([True, False, True, False, True])), (None, 1, slice(1, 3)),
                                 (0, np.arange(12).reshape(3, 4) % 3 == 0)],
                         ids=["array-repeated", "step", "int", "mask-last", "none", "mask-2d"])
def test_the_gradient_of_indexing(key):
    x = normlab.tensor(A, requires_grad=True)
    w = np.random.default_rng(0).standard_normal(A[key].shape)
    (x[key] * normlab.tensor(w)).sum().backward()
    want = np.zeros_like(A)
    np.add.at(want, key, w)  # each picked element's gradient, a repeated index added twice
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=0, atol=1e-12)
    assert autograd.gradcheck(lambda v: (v[key] ** 2).sum(), [normlab.tensor(A * 0.1, requires_grad=True)])


def test_an_int_and_an_array_apart_place_the_arrays_dims_as_pytorch_does():
    # PyTorch takes an int as a select before the array index, so the array's dims stay where the
    # dim it indexes was; NumPy would broadcast the int with the array and put their dims first.
    t = normlab.tensor(A)
    idx = np.array([[0, 1], [3, 3]])
    got = t[0, :, idx]
    assert got.shape == (3, 2, 2, 5)
    np.testing.assert_array_equal(got.numpy(), A[0][:, idx])
    assert A[0, :, idx].shape == (2, 2, 3, 5)  # NumPy's rule, for the record


def test_indexing_a_select_then_a_slice_shares_nothing_it_should_not():
    t = normlab.tensor(A)
    row = t[1]
    assert row.shape == (3, 4, 5)
    assert t[1][2][3].tolist() == A[1, 2, 3].tolist()
    assert t[0, 0, 0, 0].item() == A[0, 0, 0, 0]


SET_KEYS = [0, (1, 2), slice(0, 1), (slice(None), 1, slice(1, 3)), (Ellipsis, 0), [1, 0],
            (0, np.array([True, False, True])), (slice(None), slice(None, None, 2))]


@pytest.mark.parametrize("key", SET_KEYS, ids=[repr(k) for k in SET_KEYS])
def test_assignment_matches_numpy(key):
    t = normlab.tensor(A)
    same = normlab.Tensor(t)  # a second handle sees the write
    want = A.copy()
    want[key] = -1.5
    t[key] = -1.5
    np.testing.assert_array_equal(t.numpy(), want)
    np.testing.assert_array_equal(same.numpy(), want)
    values = np.random.default_rng(1).standard_normal(A[key].shape)
    want[key] = values
    t[key] = normlab.tensor(values)
    np.testing.assert_array_equal(t.numpy(), want)


def test_assignment_to_a_tensor_that_requires_grad_needs_no_grad():
    w = normlab.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="no_grad"):
        w[0] = 5.0
    with normlab.no_grad():
        w[0] = 5.0
        w[1:] = [7.0, 8.0]
    assert w.tolist() == [5.0, 7.0, 8.0] and w.requires_grad


def test_float32_stays_float32():
    t = normlab.tensor(A.astype(np.float32))
    assert t[0, [1, 2]].dtype == "float32" and t[..., ::2].dtype == "float32"
    t[0] = 2.25
    assert t.dtype == "float32" and t.numpy()[0].max() == 2.25
