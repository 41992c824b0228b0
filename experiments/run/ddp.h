// Data-parallel training (PyTorch's DistributedDataParallel semantics) over the ranks of an mpirun
// job (dist/): the same initial weights everywhere, each rank's slice of every global batch,
// gradients averaged over the ranks before every optimizer step, buffers (BatchNorm's running
// statistics) taken from rank 0 before every forward. Every rank then holds the same weights.
#pragma once
#include <string>
#include <vector>

#include "autograd/tensor.h"
#include "data/loader.h"
#include "nn/module.h"

namespace normlab::experiments {

// Rank 0's parameters and buffers replace every rank's.
void broadcast_state(nn::Module& m);
// Rank 0's buffers replace every rank's (before each forward, as DDP's broadcast_buffers).
void broadcast_buffers(nn::Module& m);
// Every parameter's gradient becomes the mean over the ranks: one flat buffer per dtype, summed in
// rank order (dist::allreduce_sum), divided by the world size. A parameter without a gradient on
// every rank is left alone (it must lack one on all).
void average_gradients(const std::vector<autograd::Tensor>& params);
// This rank's slice of a global batch: rows [rank * B / W, (rank + 1) * B / W) (B divisible by W).
data::Batch shard(const data::Batch& b);
// Throws the same normlab::Error on every rank unless every rank was started with the same
// settings (their descriptions compared, e.g. the command line and the data's size).
void check_same_settings(const std::string& description);

}  // namespace normlab::experiments
