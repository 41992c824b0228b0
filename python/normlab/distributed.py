"""normlab.distributed: the processes of a data-parallel job, with torch.distributed's names, over
MPI (OpenMPI). Start the script with mpirun (`mpirun -n 2 python3 train.py`); each process calls
init_process_group() once, then get_rank() and get_world_size() say which part of the batch is its
own. all_reduce sums a tensor over the ranks in place (in rank order: the same bits on every rank and
from run to run), broadcast copies rank src's values to every rank. nn.SyncBatchNorm uses the same
processes. A script not started by mpirun is rank 0 of a world of 1, and every call works there.

    import normlab, normlab.distributed as dist
    dist.init_process_group()
    rank, world = dist.get_rank(), dist.get_world_size()
    ...
    for p in model.parameters():           # average the gradients, as DistributedDataParallel does
        dist.all_reduce(p.grad)
        with normlab.no_grad():
            p.grad.div_(world)
"""
from ._normlab import Tensor, _dist

__all__ = ["is_available", "init_process_group", "is_initialized", "get_rank", "get_world_size", "barrier",
           "all_reduce", "broadcast", "ReduceOp", "destroy_process_group"]

_initialized = False


class ReduceOp:
    """The reductions all_reduce supports: SUM only."""
    SUM = "sum"


def is_available():
    """Whether normlab was built with MPI (data-parallel jobs of more than one process)."""
    return _dist.is_available()


def init_process_group(backend=None, **kwargs):
    """Joins the job (MPI_Init when started by mpirun; nothing to do otherwise). backend: None or
    "mpi". torch's other arguments (init_method, world_size, rank, ...) come from mpirun here: none is
    accepted."""
    global _initialized
    if backend not in (None, "mpi"):
        raise ValueError(f"normlab's processes communicate over MPI: backend must be 'mpi' or None, got {backend!r}")
    if kwargs:
        raise TypeError("init_process_group: mpirun sets the ranks and the world size; unexpected arguments: " +
                        ", ".join(sorted(kwargs)))
    if _initialized:
        raise RuntimeError("trying to initialize the default process group twice")
    _dist.init()
    _initialized = True


def is_initialized():
    return _initialized


_NO_TENSOR = object()


def _check(who, tensor=_NO_TENSOR):
    """Refuses a call before init_process_group, and a collective's argument that is not a Tensor."""
    if not _initialized:
        raise RuntimeError(f"{who}: call normlab.distributed.init_process_group() first")
    if tensor is not _NO_TENSOR and not isinstance(tensor, Tensor):
        raise TypeError(f"{who}: expected a normlab.Tensor, got {type(tensor).__name__}")


def get_rank():
    _check("get_rank")
    return _dist.rank()


def get_world_size():
    _check("get_world_size")
    return _dist.world_size()


def barrier():
    """Waits until every rank is here."""
    _check("barrier")
    _dist.barrier()


def all_reduce(tensor, op=ReduceOp.SUM):
    """Sums tensor over the ranks, in place on every rank (each value's terms added in rank order)."""
    _check("all_reduce", tensor)
    if op != ReduceOp.SUM:
        raise ValueError(f"all_reduce: only ReduceOp.SUM is supported, got {op!r}")
    _dist.all_reduce_sum(tensor)


def broadcast(tensor, src=0):
    """Rank src's values of tensor replace every rank's (in place)."""
    _check("broadcast", tensor)
    _dist.broadcast(tensor, int(src))


def destroy_process_group():
    """Leaves nothing to do: MPI is finalized when the process exits."""
    global _initialized
    _initialized = False
