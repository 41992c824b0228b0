// Shapes: sizes of a tensor's dims, broadcasting rules and dim normalization (as in PyTorch).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace normlab::autograd {

using Shape = std::vector<int64_t>;

// Number of elements (1 for rank 0).
int64_t numel(const Shape& s);
// "[2, 3]", as PyTorch prints torch.Size.
std::string shape_str(const Shape& s);
// Row-major strides, in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);
// The broadcast of two shapes (NumPy rules); throws naming `op` and both shapes if they do not broadcast.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& op);
// Maps dim in [-rank, rank) to [0, rank); throws "op: dim d out of range for a tensor of rank r".
int64_t normalize_dim(int64_t dim, int64_t rank, const std::string& op);
// Throws unless every size is >= 0 (the message names `op`).
void check_shape(const Shape& s, const std::string& op);

}  // namespace normlab::autograd
