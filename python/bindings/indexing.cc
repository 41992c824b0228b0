// Tensor[key] and Tensor[key] = value with NumPy's and PyTorch's rules: ints, slices (step >= 1),
// None, Ellipsis, and one integer array (a list or an integer ndarray) or boolean mask per key.
//
// Reading is differentiable: an int is select, a slice of step 1 is narrow, a slice of a larger
// step and an integer array gather along the dim (the embedding op on the dim moved to the front:
// its backward adds each picked row's gradient into place, a repeated index accumulating), and a
// boolean mask over dims d..d+m-1 merges those dims and gathers its true positions (row-major). As
// in PyTorch, an int is a select taken before the array index, so the array's dims always take the
// place of the dim it indexes (NumPy puts them first when an int and the array are apart).
// Writing is an in-place update (as add_ and copy_): through a NumPy view of the tensor's values.
#include "python/bindings/indexing.h"

#include <cstdint>
#include <string>
#include <vector>

namespace normlab::python {

namespace ag = normlab::autograd;

namespace {

const char* kValidIndices =
    "only integers, slices (`:`), ellipsis (`...`), None and integer or boolean arrays (lists or NumPy arrays) are "
    "valid indices";

bool is_int_index(const py::handle& o) {
  // Python ints and NumPy integer scalars (they implement __index__), not bools.
  return !py::isinstance<py::bool_>(o) && !py::isinstance<py::array>(o) && PyIndex_Check(o.ptr()) &&
         !py::isinstance<Tensor>(o);
}

bool is_array_index(const py::handle& o) {
  return py::isinstance<py::array>(o) || py::isinstance<py::list>(o);
}

// The array index as NumPy sees it; a TypeError for anything but integers and bools.
py::array index_array(const py::handle& o) {
  const py::array a = py::array::ensure(o);
  if (!a) throw py::index_error(kValidIndices);
  const char k = a.dtype().kind();
  // An empty list is NumPy's float64 array: an empty integer index.
  if (a.size() == 0 && k == 'f') return py::array_t<int64_t>(std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()));
  if (k != 'i' && k != 'u' && k != 'b')
    throw py::index_error(std::string("arrays used as indices must be of integer or boolean type, got dtype ") +
                          std::string(py::str(a.dtype())));
  return a;
}

// i into a dim of `size` (negative from the end), an IndexError when out of range.
int64_t wrap(int64_t i, int64_t size, int64_t dim) {
  if (i < -size || i >= size)
    throw py::index_error("index " + std::to_string(i) + " is out of bounds for dimension " + std::to_string(dim) +
                          " with size " + std::to_string(size));
  return i < 0 ? i + size : i;
}

// y with dim `dim` replaced by idx_shape: out[..., i..., ...] = y[..., idx[i...], ...].
Tensor take(const Tensor& y, int64_t dim, const std::vector<int64_t>& idx, const Shape& idx_shape) {
  const int64_t n = y.dim(), k = static_cast<int64_t>(idx_shape.size());
  Shape rest;  // y's shape without dim, in order
  for (int64_t i = 0; i < n; ++i)
    if (i != dim) rest.push_back(y.size(i));
  Shape out(rest.begin(), rest.begin() + dim);
  out.insert(out.end(), idx_shape.begin(), idx_shape.end());
  out.insert(out.end(), rest.begin() + dim, rest.end());
  int64_t r = 1;
  for (const int64_t s : rest) r *= s;
  if (r == 0 || idx.empty()) return ag::zeros(out, y.dtype());
  // (size_dim, rest...) -> (size_dim, r) rows; embedding picks rows: (idx_shape..., r).
  std::vector<int64_t> front{dim};
  for (int64_t i = 0; i < n; ++i)
    if (i != dim) front.push_back(i);
  const Tensor f = dim == 0 ? y : ag::permute(y, front);
  Shape picked(idx_shape);
  picked.insert(picked.end(), rest.begin(), rest.end());
  Tensor g = ag::reshape(ag::embedding(idx, idx_shape, ag::reshape(f, {y.size(dim), r})), picked);
  if (dim == 0) return g;
  // The index's dims (first k of g) to position dim: rest[0..dim) first, then them, then the others.
  std::vector<int64_t> back;
  for (int64_t i = 0; i < dim; ++i) back.push_back(k + i);
  for (int64_t i = 0; i < k; ++i) back.push_back(i);
  for (int64_t i = k + dim; i < static_cast<int64_t>(picked.size()); ++i) back.push_back(i);
  return ag::permute(g, back);
}

// A slice's start, step and length over a dim of `size`; a ValueError for a step below 1.
struct SliceRange {
  py::ssize_t start = 0, step = 1, len = 0;
};
SliceRange slice_range(const py::object& it, int64_t size) {
  SliceRange r;
  py::ssize_t stop = 0;
  if (!it.cast<py::slice>().compute(static_cast<py::ssize_t>(size), &r.start, &stop, &r.step, &r.len))
    throw py::error_already_set();
  if (r.step <= 0) throw py::value_error("step must be greater than zero");
  return r;
}

// The key as a list of items with the Ellipsis expanded to full slices and each list index as its
// NumPy array; checks what each item is, that there is at most one array index, and that a 0-dim
// tensor gets only None, Ellipsis or ().
std::vector<py::object> expand_key(const Tensor& x, const py::object& key) {
  if (x.dim() == 0 && !key.is_none() && !key.is(py::ellipsis()) &&
      !(py::isinstance<py::tuple>(key) && key.cast<py::tuple>().empty()))
    throw py::index_error("invalid index of a 0-dim tensor");
  std::vector<py::object> items;
  if (py::isinstance<py::tuple>(key)) {
    for (const py::handle h : key.cast<py::tuple>()) items.push_back(py::reinterpret_borrow<py::object>(h));
  } else {
    items.push_back(key);
  }
  int64_t consumed = 0, ellipses = 0, arrays = 0;
  for (py::object& it : items) {
    if (it.is_none()) continue;
    if (it.is(py::ellipsis())) {
      ++ellipses;
    } else if (py::isinstance<py::slice>(it) || is_int_index(it)) {
      ++consumed;
    } else if (py::isinstance<Tensor>(it)) {
      throw py::index_error("normlab tensors hold float32 or float64 values and cannot be indices: index with an "
                            "integer or boolean NumPy array or a list");
    } else if (is_array_index(it)) {
      const py::array a = index_array(it);
      consumed += a.dtype().kind() == 'b' ? std::max<int64_t>(1, a.ndim()) : 1;
      ++arrays;
      it = a;
    } else {
      throw py::index_error(std::string(kValidIndices) + " (got " +
                            std::string(py::str(py::type::of(it).attr("__name__"))) + ")");
    }
  }
  if (ellipses > 1) throw py::index_error("an index can only have a single ellipsis ('...')");
  if (arrays > 1)
    throw py::index_error("normlab indexes with at most one integer or boolean array per index (got " +
                          std::to_string(arrays) + "); index one dim at a time");
  if (consumed > x.dim())
    throw py::index_error("too many indices for tensor of dimension " + std::to_string(x.dim()));
  std::vector<py::object> out;
  for (const py::object& it : items) {
    if (it.is(py::ellipsis())) {
      for (int64_t i = 0; i < x.dim() - consumed; ++i) out.push_back(py::slice(py::none(), py::none(), py::none()));
    } else {
      out.push_back(it);
    }
  }
  return out;
}

}  // namespace

Tensor getitem(const Tensor& x, const py::object& key) {
  Tensor y = x;
  int64_t d = 0;  // the dim of y the next item indexes
  for (const py::object& it : expand_key(x, key)) {
    if (it.is_none()) {
      y = ag::unsqueeze(y, d++);
    } else if (is_int_index(it)) {
      y = ag::select(y, d, wrap(it.cast<int64_t>(), y.size(d), d));
    } else if (py::isinstance<py::slice>(it)) {
      const SliceRange r = slice_range(it, y.size(d));
      if (r.step == 1) {
        if (r.len != y.size(d)) y = ag::narrow(y, d, r.start, r.len);
      } else {
        std::vector<int64_t> idx(static_cast<size_t>(r.len));
        for (py::ssize_t i = 0; i < r.len; ++i) idx[i] = r.start + i * r.step;
        y = take(y, d, idx, {static_cast<int64_t>(r.len)});
      }
      ++d;
    } else {
      const py::array a = it.cast<py::array>();  // expand_key made it an array
      if (a.dtype().kind() == 'b') {
        // A mask over dims d..d+m-1 of exactly their sizes. A 0-d mask (NumPy's x[np.True_] adds a
        // dim) is refused: None says that plainly.
        const int64_t m = a.ndim();
        if (m == 0) throw py::index_error("a 0-d boolean array index is not supported: use None to add a dim");
        Shape merged(y.shape().begin(), y.shape().begin() + d);
        int64_t cells = 1;
        for (int64_t i = 0; i < m; ++i) {
          if (a.shape(i) != y.size(d + i))
            throw py::index_error("The shape of the mask [" + ag::shape_str(Shape(a.shape(), a.shape() + m)).substr(1) +
                                  " at index " + std::to_string(i) + " does not match the shape of the indexed tensor " +
                                  ag::shape_str(y.shape()) + " at index " + std::to_string(d + i));
          cells *= y.size(d + i);
        }
        merged.push_back(cells);
        merged.insert(merged.end(), y.shape().begin() + d + m, y.shape().end());
        const auto mask = py::array_t<bool, py::array::c_style | py::array::forcecast>::ensure(a);
        std::vector<int64_t> idx;
        for (int64_t i = 0; i < cells; ++i)
          if (mask.data()[i]) idx.push_back(i);
        y = take(ag::reshape(y, merged), d, idx, {static_cast<int64_t>(idx.size())});
        ++d;
      } else {
        const auto c = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
        std::vector<int64_t> idx(static_cast<size_t>(c.size()));
        for (py::ssize_t i = 0; i < c.size(); ++i) idx[i] = wrap(c.data()[i], y.size(d), d);
        const Shape idx_shape(c.shape(), c.shape() + c.ndim());
        y = take(y, d, idx, idx_shape);
        d += static_cast<int64_t>(idx_shape.size());
      }
    }
  }
  return y;
}

void setitem(const Tensor& x, const py::object& key, const py::object& value) {
  check_inplace(x, "__setitem__");
  // The key is checked as for reading (the same errors), then NumPy writes through a view.
  py::list items;
  for (const py::object& it : expand_key(x, key)) {
    if (py::isinstance<py::slice>(it)) slice_range(it, 1);  // its step
    items.append(it);
  }
  const py::object v = py::isinstance<Tensor>(value) ? py::object(to_array(value.cast<Tensor>().detach())) : value;
  share_array(x).attr("__setitem__")(py::tuple(items), v);
}

}  // namespace normlab::python
