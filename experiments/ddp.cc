// Data-parallel training over dist/: broadcasts, averaged gradients, batch shards.
#include "experiments/ddp.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "autograd/engine.h"
#include "autograd/error.h"
#include "autograd/shape_ops.h"
#include "dist/dist.h"

namespace normlab::experiments {

using autograd::Tensor;

namespace {

// Rank 0's values of every tensor in ts: one broadcast per dtype, through a flat buffer (kept
// between calls), not one per tensor: BatchNorm's buffers are small and a broadcast costs its latency.
void broadcast_tensors(const autograd::NamedTensors& ts) {
  thread_local std::vector<float> f;
  thread_local std::vector<double> d;
  f.clear(), d.clear();
  for (const auto& [name, t] : ts) {
    if (t.dtype() == autograd::DType::Float64) d.insert(d.end(), t.data<double>(), t.data<double>() + t.numel());
    else f.insert(f.end(), t.data<float>(), t.data<float>() + t.numel());
  }
  dist::broadcast(f.data(), static_cast<int64_t>(f.size()));
  dist::broadcast(d.data(), static_cast<int64_t>(d.size()));
  size_t fi = 0, di = 0;
  for (const auto& [name, t] : ts) {
    if (t.dtype() == autograd::DType::Float64) {
      std::copy(d.begin() + static_cast<ptrdiff_t>(di), d.begin() + static_cast<ptrdiff_t>(di + t.numel()), t.data<double>());
      di += static_cast<size_t>(t.numel());
    } else {
      std::copy(f.begin() + static_cast<ptrdiff_t>(fi), f.begin() + static_cast<ptrdiff_t>(fi + t.numel()), t.data<float>());
      fi += static_cast<size_t>(t.numel());
    }
  }
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
  const int w = dist::world_size();
  if (w == 1) return;
  // float32 and float64 gradients in one flat buffer each, in parameter order (kept between steps:
  // no allocation once they have grown).
  thread_local std::vector<float> f;
  thread_local std::vector<double> d;
  f.clear(), d.clear();
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.dtype() == autograd::DType::Float64) d.insert(d.end(), g.data<double>(), g.data<double>() + g.numel());
    else f.insert(f.end(), g.data<float>(), g.data<float>() + g.numel());
  }
  dist::allreduce_sum(f.data(), static_cast<int64_t>(f.size()));
  dist::allreduce_sum(d.data(), static_cast<int64_t>(d.size()));
  size_t fi = 0, di = 0;
  for (const Tensor& p : params) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    if (g.dtype() == autograd::DType::Float64)
      for (int64_t i = 0; i < g.numel(); ++i) g.data<double>()[i] = d[di++] / w;
    else
      for (int64_t i = 0; i < g.numel(); ++i) g.data<float>()[i] = f[fi++] / static_cast<float>(w);
  }
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
