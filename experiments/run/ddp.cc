// Data-parallel training over dist/: broadcasts, averaged gradients, batch shards.
#include "experiments/run/ddp.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "autograd/engine.h"
#include "autograd/shape_ops.h"
#include "base/error.h"
#include "dist/dist.h"

namespace normlab::experiments {

using autograd::Tensor;

namespace {

// Runs `exchange` (a broadcast, a sum over the ranks) on the values of every tensor in ts, through
// one flat buffer per dtype (kept between calls: no allocation once grown), not one collective per
// tensor: many are small and a collective costs its latency. The values come back divided by
// `divisor` (1: as they are).
template <class Exchange>
void through_flat_buffers(const std::vector<Tensor>& ts, const Exchange& exchange, int divisor) {
  thread_local std::vector<float> f;
  thread_local std::vector<double> d;
  f.clear(), d.clear();
  for (const Tensor& t : ts) {
    if (t.dtype() == autograd::DType::Float64) d.insert(d.end(), t.data<double>(), t.data<double>() + t.numel());
    else f.insert(f.end(), t.data<float>(), t.data<float>() + t.numel());
  }
  exchange(f.data(), static_cast<int64_t>(f.size()));
  exchange(d.data(), static_cast<int64_t>(d.size()));
  size_t fi = 0, di = 0;
  for (const Tensor& t : ts) {
    if (t.dtype() == autograd::DType::Float64)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = d[di++] / divisor;
    else
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = f[fi++] / static_cast<float>(divisor);
  }
}

// Rank 0's values of every tensor in ts.
void broadcast_tensors(const autograd::NamedTensors& ts) {
  std::vector<Tensor> values;
  for (const auto& [name, t] : ts) values.push_back(t);
  through_flat_buffers(values, [](auto* x, int64_t n) { dist::broadcast(x, n); }, 1);
}

}  // namespace

void broadcast_state(nn::Module& m) {
  if (dist::world_size() == 1) return;
  broadcast_tensors(m.named_parameters());
  broadcast_tensors(m.named_buffers());
}

void broadcast_buffers(nn::Module& m) {
  if (dist::world_size() > 1) broadcast_tensors(m.named_buffers());
}

void average_gradients(const std::vector<Tensor>& params) {
  if (dist::world_size() == 1) return;
  std::vector<Tensor> grads;  // in parameter order
  for (const Tensor& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  through_flat_buffers(grads, [](auto* x, int64_t n) { dist::allreduce_sum(x, n); }, dist::world_size());
}

data::Batch shard(const data::Batch& b) {
  const int64_t w = dist::world_size(), n = b.size();
  if (w == 1) return b;
  if (n % w != 0)
    throw Error("a batch of " + std::to_string(n) + " samples cannot be split evenly over " + std::to_string(w) +
                " ranks: give --batch-size a multiple of the number of ranks");
  const int64_t per = n / w, begin = per * dist::rank();
  data::Batch s;
  s.x = autograd::narrow(b.x, begin, per).clone();
  if (b.y.defined()) s.y = autograd::narrow(b.y, begin, per).clone();
  if (!b.labels.empty()) s.labels.assign(b.labels.begin() + begin, b.labels.begin() + begin + per);
  s.indices.assign(b.indices.begin() + begin, b.indices.begin() + begin + per);
  return s;
}

void check_same_settings(const std::string& description) {
  if (dist::world_size() == 1) return;
  const std::vector<std::string> all = dist::allgather(description);
  for (int r = 1; r < dist::world_size(); ++r)
    if (all[r] != all[0])
      throw Error("the ranks were started with different settings: rank 0 has \"" + all[0] + "\", rank " +
                  std::to_string(r) + " has \"" + all[r] + "\" (start every rank with the same command and data)");
}

}  // namespace normlab::experiments
