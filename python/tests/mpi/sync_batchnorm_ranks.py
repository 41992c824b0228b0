"""Run under mpirun with 2 or 3 ranks (CTest python/mpirun_sync_batchnorm): each rank holds its
part of one batch; SyncBatchNorm's output and input gradient on every rank equal BatchNorm's on the
whole batch (the rank's rows), its running statistics equal the whole batch's, its weight gradient
summed over the ranks equals BatchNorm's, and all_reduce and broadcast give the sum and rank src's
values. Exits non-zero (an AssertionError) on any mismatch."""
import numpy as np

import normlab
import normlab.distributed as dist
from normlab import nn

dist.init_process_group()
rank, world = dist.get_rank(), dist.get_world_size()
assert world >= 2, f"run this under mpirun with 2 or more ranks (world {world})"

# all_reduce and broadcast.
t = normlab.tensor([float(rank), 1.0, 2.0 ** rank], dtype="float64")
dist.all_reduce(t)
assert t.tolist() == [sum(range(world)), float(world), float(sum(2 ** r for r in range(world)))], t.tolist()
b = normlab.tensor([float(rank) + 0.5] * 4)
dist.broadcast(b, src=world - 1)
assert b.tolist() == [world - 0.5] * 4, b.tolist()

# One batch of 4 rows per rank, the same on every rank (the seed), each rank taking its rows.
rng = np.random.default_rng(0)
n, c = 4 * world, 3
x_all = rng.standard_normal((n, c, 2)) * 3 + 1
g_all = rng.standard_normal((n, c, 2))
rows = slice(4 * rank, 4 * rank + 4)

bn = nn.BatchNorm1d(c, momentum=0.2, dtype="float64")
sync = nn.SyncBatchNorm(c, momentum=0.2, dtype="float64")
state = {k: (v + rng.standard_normal(v.shape)) if v.ndim else v for k, v in bn.state_dict().items()}
bn.load_state_dict(state)
sync.load_state_dict(state)

xb = normlab.tensor(x_all, requires_grad=True)
yb = bn(xb)
(yb * normlab.tensor(g_all)).sum().backward()

xs = normlab.tensor(x_all[rows], requires_grad=True)
ys = sync(xs)
(ys * normlab.tensor(g_all[rows])).sum().backward()

np.testing.assert_allclose(ys.detach().numpy(), yb.detach().numpy()[rows], rtol=0, atol=1e-12)
np.testing.assert_allclose(xs.grad.numpy(), xb.grad.numpy()[rows], rtol=0, atol=1e-12)
for k, v in bn.state_dict().items():
    np.testing.assert_allclose(sync.state_dict()[k], v, rtol=0, atol=1e-12, err_msg=k)
wg = normlab.tensor(sync.weight.grad.numpy())
dist.all_reduce(wg)
np.testing.assert_allclose(wg.numpy(), bn.weight.grad.numpy(), rtol=0, atol=1e-12)
dist.barrier()
print(f"rank {rank} of {world}: SyncBatchNorm matches BatchNorm on the whole batch")
