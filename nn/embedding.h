// Embedding module (PyTorch's nn.Embedding): a learned table of vectors looked up by integer ids.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/module.h"

namespace normlab::nn {

/// A lookup table of embeddings, PyTorch's nn.Embedding: token ids -> rows of weight.
class Embedding : public Module {
 public:
  /// weight (num_embeddings, embedding_dim) ~ N(0, 1), drawn from gen as PyTorch's reset_parameters()
  /// (init::normal_); dtype is PyTorch's factory argument (Float64 for gradient checks). Negative sizes
  /// are an error.
  Embedding(int64_t num_embeddings, int64_t embedding_dim, Generator& gen, DType dtype = DType::Float32);

  /// ids (flat, row-major) of shape `shape` -> (*shape, embedding_dim): autograd::embedding. An id
  /// outside [0, num_embeddings) is an error naming it, its position and num_embeddings.
  Tensor forward(const std::vector<int64_t>& ids, const Shape& shape);
  /// The same with the ids held in a tensor of any shape and dtype (whole numbers stored as floats:
  /// exact up to 2^24 in float32, 2^53 in float64). A value that is not a whole number (or is not
  /// finite) is an error naming it and its position.
  Tensor forward(const Tensor& ids) override;
  /// "Embedding(10, 3)".
  std::string repr() const override;

  int64_t num_embeddings() const { return num_embeddings_; }  ///< Rows of the table (the id range).
  int64_t embedding_dim() const { return embedding_dim_; }  ///< Features per embedding.
  /// The table (num_embeddings, embedding_dim).
  const Tensor& weight() const { return weight_; }

 private:
  int64_t num_embeddings_, embedding_dim_;
  Tensor weight_;
};

}  // namespace normlab::nn
