// Flatten and Unflatten: views through autograd's reshape ops, with PyTorch's reprs.
#include "nn/flatten.h"

#include "autograd/shape_ops.h"

namespace normlab::nn {

Tensor Flatten::forward(const Tensor& x) { return autograd::flatten(x, start_, end_); }

std::string Flatten::repr() const {
  return "Flatten(start_dim=" + std::to_string(start_) + ", end_dim=" + std::to_string(end_) + ")";
}

Unflatten::Unflatten(int64_t dim, Shape sizes) : dim_(dim), sizes_(std::move(sizes)) {
  if (sizes_.empty()) throw Error("Unflatten: unflattened_size must not be empty");
  for (int64_t s : sizes_)
    if (s < 1) throw Error("Unflatten: every size must be at least 1, got " + autograd::shape_str(sizes_));
}

Tensor Unflatten::forward(const Tensor& x) {
  const int64_t d = dim_ < 0 ? dim_ + x.dim() : dim_;
  if (d < 0 || d >= x.dim() || x.size(d) != autograd::numel(sizes_))
    throw Error(repr() + ": expected dim " + std::to_string(dim_) + " of size " + std::to_string(autograd::numel(sizes_)) +
                ", got input of shape " + autograd::shape_str(x.shape()));
  Shape s(x.shape().begin(), x.shape().begin() + d);
  s.insert(s.end(), sizes_.begin(), sizes_.end());
  s.insert(s.end(), x.shape().begin() + d + 1, x.shape().end());
  return autograd::reshape(x, s);
}

std::string Unflatten::repr() const {
  std::string t = "(";
  for (size_t i = 0; i < sizes_.size(); ++i) t += (i ? ", " : "") + std::to_string(sizes_[i]);
  if (sizes_.size() == 1) t += ",";
  return "Unflatten(dim=" + std::to_string(dim_) + ", unflattened_size=" + t + "))";
}

}  // namespace normlab::nn
