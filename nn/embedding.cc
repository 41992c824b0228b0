// Embedding module: the N(0, 1) table, PyTorch's parameter name, ids from a vector or a float tensor.
#include "nn/embedding.h"

#include <cmath>

#include "autograd/embedding.h"
#include "base/format.h"
#include "nn/init.h"

namespace normlab::nn {

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen, DType dtype)
    : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {
  if (num_embeddings < 0 || embedding_dim < 0)
    throw Error("Embedding: expected num_embeddings >= 0 and embedding_dim >= 0, got num_embeddings=" +
                std::to_string(num_embeddings) + ", embedding_dim=" + std::to_string(embedding_dim));
  weight_ = register_parameter("weight", autograd::empty({num_embeddings, embedding_dim}, dtype));
  init::normal_(weight_, 0, 1, gen);
}

Tensor Embedding::forward(const std::vector<int64_t>& ids, const Shape& shape) {
  try {
    return autograd::embedding(ids, shape, weight_);
  } catch (const Error& e) {
    throw Error(repr() + ": " + e.what());
  }
}

Tensor Embedding::forward(const Tensor& ids) {
  std::vector<int64_t> v(static_cast<size_t>(ids.numel()));
  autograd::dispatch(ids.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* p = ids.data<T>();
    for (int64_t i = 0, n = ids.numel(); i < n; ++i) {
      const double x = static_cast<double>(p[i]);
      if (!std::isfinite(x) || std::floor(x) != x)
        throw Error(repr() + ": expected ids that are whole numbers, got " + base::py_float(x) + " at position " +
                    autograd::py_tuple(autograd::unravel_index(i, ids.shape())) + " of ids of shape " + autograd::shape_str(ids.shape()));
      if (!(std::fabs(x) < 0x1p62))  // beyond int64_t (and any table): named here, the rest by the op
        throw Error(repr() + ": id " + base::py_float(x) + " at position " + autograd::py_tuple(autograd::unravel_index(i, ids.shape())) +
                    " is out of range for an embedding of " + std::to_string(num_embeddings_) + " rows");
      v[static_cast<size_t>(i)] = static_cast<int64_t>(x);
    }
  });
  return forward(v, ids.shape());
}

std::string Embedding::repr() const {
  return "Embedding(" + std::to_string(num_embeddings_) + ", " + std::to_string(embedding_dim_) + ")";
}

}  // namespace normlab::nn
