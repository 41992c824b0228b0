// Shapes: sizes, strides, broadcasting and dim normalization.
#include "autograd/shape.h"

#include <algorithm>

#include "base/error.h"

namespace normlab::autograd {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> unravel_index(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] > 0 ? flat % s[d] : 0;
    flat = s[d] > 0 ? flat / s[d] : 0;
  }
  return idx;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::string py_tuple(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + (s.size() == 1 ? ",)" : ")");
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      throw Error(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                  " cannot be broadcast (size " + std::to_string(da) + " vs " + std::to_string(db) +
                  " at dim " + std::to_string(i) + ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_dim(int64_t dim, int64_t rank, std::string_view op) {
  const int64_t lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;
  if (dim < lo || dim > hi)
    throw Error(std::string(op) + ": dim " + std::to_string(dim) + " out of range for a tensor of rank " +
                std::to_string(rank) + " (expected a dim in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "])");
  return dim < 0 ? dim + std::max<int64_t>(rank, 1) : dim;
}

void check_shape(const Shape& s, std::string_view op) {
  for (int64_t d : s)
    if (d < 0) throw Error(std::string(op) + ": negative size in shape " + shape_str(s));
  // The element count, and its bytes at 8 per element, must fit in int64_t: beyond 2^60 elements
  // the product would wrap and the allocation be asked for a wrong size.
  for (int64_t d : s)
    if (d == 0) return;  // no elements, whatever the other sizes
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 60))
      throw Error(std::string(op) + ": shape " + shape_str(s) + " has more than 2^60 elements");
}

}  // namespace normlab::autograd
