"""normlab.distributed in one process (rank 0 of a world of 1), SyncBatchNorm (BatchNorm there),
convert_sync_batchnorm, and noisy BatchNorm's training and eval transforms. The same over 2 ranks
under mpirun is python/tests/mpi/sync_batchnorm_ranks.py (CTest python/mpirun_sync_batchnorm)."""
import numpy as np
import pytest

import normlab
import normlab.distributed as dist
from normlab import nn


def test_a_process_without_mpirun_is_rank_0_of_1():
    if not dist.is_initialized():
        dist.init_process_group()
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    t = normlab.tensor([1.0, -2.5, 3.0])
    dist.all_reduce(t)  # the sum over one rank
    assert t.tolist() == [1.0, -2.5, 3.0]
    dist.broadcast(t, src=0)
    dist.barrier()
    with pytest.raises(ValueError, match="not a rank"):
        dist.broadcast(t, src=1)
    with pytest.raises(RuntimeError, match="twice"):
        dist.init_process_group()
    with pytest.raises(ValueError, match="mpi"):
        dist.init_process_group(backend="nccl")
    with pytest.raises(TypeError, match="mpirun sets"):
        dist.init_process_group(world_size=2)
    with pytest.raises(ValueError, match="SUM"):
        dist.all_reduce(t, op="max")
    with pytest.raises(TypeError, match="normlab.Tensor"):
        dist.all_reduce(np.ones(3))
    w = normlab.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        dist.all_reduce(w)


def test_calls_before_init_say_so(monkeypatch):
    monkeypatch.setattr(dist, "_initialized", False)
    with pytest.raises(RuntimeError, match="init_process_group"):
        dist.get_rank()


def test_sync_batchnorm_in_one_process_is_batchnorm():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4, 3))
    bn = nn.BatchNorm1d(4, momentum=0.3, dtype="float64")
    sync = nn.SyncBatchNorm(4, momentum=0.3, dtype="float64")
    sync.load_state_dict({k: v * 0 + rng.standard_normal(v.shape) if v.ndim else v
                          for k, v in bn.state_dict().items()})
    bn.load_state_dict(sync.state_dict())
    xs, xb = normlab.tensor(x, requires_grad=True), normlab.tensor(x, requires_grad=True)
    ys, yb = sync(xs), bn(xb)
    np.testing.assert_allclose(ys.detach().numpy(), yb.detach().numpy(), rtol=0, atol=1e-12)
    g = normlab.tensor(rng.standard_normal(x.shape))
    (ys * g).sum().backward()
    (yb * g).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xb.grad.numpy(), rtol=0, atol=1e-12)
    np.testing.assert_allclose(sync.weight.grad.numpy(), bn.weight.grad.numpy(), rtol=0, atol=1e-12)
    for k, v in bn.state_dict().items():
        np.testing.assert_allclose(sync.state_dict()[k], v, rtol=0, atol=1e-12)
    sync.eval(), bn.eval()
    with normlab.no_grad():
        np.testing.assert_allclose(sync(normlab.tensor(x)).numpy(), bn(normlab.tensor(x)).numpy(), rtol=0,
                                   atol=1e-12)
    assert "SyncBatchNorm" in repr(sync)
    with pytest.raises(ValueError, match="process_group"):
        nn.SyncBatchNorm(4, process_group="group")
    with pytest.raises(ValueError, match="SyncBatchNorm"):
        nn.SyncBatchNorm(0)


def test_convert_sync_batchnorm_keeps_the_state_and_mode():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, eps=1e-3), nn.ReLU(),
                          nn.Sequential(nn.Linear(4, 2), nn.BatchNorm1d(2, momentum=None)))
    model(normlab.tensor(np.random.default_rng(1).standard_normal((5, 3)), dtype="float32"))  # running statistics move
    model.eval()
    before = model.state_dict()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model
    assert isinstance(model[1], nn.SyncBatchNorm) and isinstance(model[3][1], nn.SyncBatchNorm)
    assert not model[1].training
    after = model.state_dict()
    assert list(after) == list(before)
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])
    assert model(normlab.ones(2, 3)).shape == (2, 2)


def test_noisy_batchnorm_scales_and_shifts_each_unit_per_step():
    rng = np.random.default_rng(2)
    x = normlab.tensor(rng.standard_normal((16, 3)), dtype="float64")
    noisy = nn.NoisyBatchNorm1d(3, seed=5, dtype="float64")
    bn = nn.BatchNorm1d(3, dtype="float64")
    z = bn(x).detach().numpy()  # BN(x) with the batch statistics (weight 1, bias 0)
    outs = []
    for _ in range(2):
        y = noisy(x).detach().numpy()
        # y = s_c z + m_c per unit c: a least-squares line through each column.
        for c in range(3):
            s, m = np.polyfit(z[:, c], y[:, c], 1)
            assert 0.5 <= s < 2.0 and -0.5 <= m < 1.5
            np.testing.assert_allclose(y[:, c], s * z[:, c] + m, rtol=0, atol=1e-9)
        outs.append(y)
    assert not np.allclose(outs[0], outs[1])  # drawn anew at every step
    assert noisy.state_dict()["noise_step"] == 2
    again = nn.NoisyBatchNorm1d(3, seed=5, dtype="float64")
    np.testing.assert_array_equal(again(x).detach().numpy(), outs[0])  # (seed, step) fixes the noise
    noisy.eval(), bn.eval()
    bn.load_state_dict({k: v for k, v in noisy.state_dict().items() if k != "noise_step"})
    with normlab.no_grad():
        np.testing.assert_allclose(noisy(x).numpy(), 1.25 * bn(x).numpy() + 0.5, rtol=0, atol=1e-12)
    image = nn.NoisyBatchNorm2d(2, scale=(1.0, 1.5), shift=(0.0, 0.1))
    assert image(normlab.zeros(2, 2, 3, 3)).shape == (2, 2, 3, 3)
    with pytest.raises(ValueError, match="NoisyBatchNorm1d"):
        nn.NoisyBatchNorm1d(3, scale=(2.0, 1.0))
    with pytest.raises(TypeError, match="pairs"):
        nn.NoisyBatchNorm1d(3, shift=0.5)
