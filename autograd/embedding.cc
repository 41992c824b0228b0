// Embedding lookup: forward (row copies) and backward (row sums into the table) side by side.
#include "autograd/embedding.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "autograd/engine.h"
#include "autograd/grain.h"
#include "base/thread_pool.h"

namespace normlab::autograd {

namespace {

// gw (V, D) = 0, then gw[ids[i], :] += g[i, :] for i = 0 .. n-1 in order. The columns are split
// between threads (64 per block, so no two threads write one cache line); each column sees the
// positions in the same order whatever the split, so the sums do not depend on the thread count.
template <typename T>
void embedding_backward(const std::vector<int64_t>& ids, int64_t D, const T* g, T* gw, int64_t V) {
  const int64_t n = static_cast<int64_t>(ids.size());
  std::fill(gw, gw + V * D, T(0));
  const int threads = threads_for(static_cast<double>(n) * D, grains().embedding);
  base::parallel_blocks(threads, D, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t i = 0; i < n; ++i) {
      const T* src = g + i * D;
      T* dst = gw + ids[static_cast<size_t>(i)] * D;
      for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
    }
  });
}

}  // namespace

Tensor embedding(const std::vector<int64_t>& ids, const Shape& ids_shape, const Tensor& weight) {
  check_shape(ids_shape, "embedding");
  if (numel(ids_shape) != static_cast<int64_t>(ids.size()))
    throw Error("embedding: ids_shape " + shape_str(ids_shape) + " holds " + std::to_string(numel(ids_shape)) +
                " ids, but " + std::to_string(ids.size()) + " ids were given");
  if (weight.dim() != 2)
    throw Error("embedding: the weight must be 2-D (num_embeddings, embedding_dim), got shape " +
                shape_str(weight.shape()));
  const int64_t V = weight.size(0), D = weight.size(1), n = static_cast<int64_t>(ids.size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = ids[static_cast<size_t>(i)];
    if (id < 0 || id >= V)
      throw Error("embedding: id " + std::to_string(id) + " at position " + py_tuple(unravel_index(i, ids_shape)) +
                  " of ids of shape " + shape_str(ids_shape) + " is out of range for an embedding of " +
                  std::to_string(V) + " rows (valid ids are 0 to " + std::to_string(V - 1) + ")");
  }
  Shape os = ids_shape;
  os.push_back(D);
  Tensor out = empty(os, weight.dtype());
  // out[i, :] = weight[ids[i], :]: one row copy per position.
  const size_t row_bytes = static_cast<size_t>(D) * dtype_size(weight.dtype());
  const char* w = static_cast<const char*>(weight.raw_data());
  char* y = static_cast<char*>(out.raw_data());
  if (row_bytes > 0)
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(y + i * row_bytes, w + ids[static_cast<size_t>(i)] * row_bytes, row_bytes);
  // The ids are copied into the node (the caller's vector may not outlive the graph).
  // The backward is linear in g (a scatter-add by id) and its adjoint is the embedding itself, so in
  // a create_graph pass it is recorded with embedding as its backward (any order).
  return record("EmbeddingBackward0", out, {weight},
                [ids, ids_shape, V, D, dt = weight.dtype()](const Tensor& g, const Needs&) {
                  Tensor gw = empty({V, D}, dt);
                  dispatch(dt, [&](auto zero) {
                    using T = decltype(zero);
                    embedding_backward<T>(ids, D, g.data<T>(), gw.data<T>(), V);
                  });
                  return std::vector<Tensor>{record("EmbeddingBackwardBackward0", gw, {g},
                                                    [ids, ids_shape](const Tensor& gg, const Needs&) {
                                                      return std::vector<Tensor>{embedding(ids, ids_shape, gg)};
                                                    }, Backward::Differentiable)};
                }, Backward::Differentiable);
}

}  // namespace normlab::autograd
