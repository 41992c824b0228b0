// Tensor: an N-dimensional float32/float64 array with autograd, a cheap handle sharing its storage.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/dtype.h"
#include "autograd/generator.h"
#include "autograd/shape.h"
#include "base/error.h"

namespace normlab::autograd {

class Node;

/// What Tensor::backward does beyond its gradient (PyTorch's backward keywords).
struct BackwardOptions {
  std::optional<bool> retain_graph;  ///< keep the graph's saved tensors; default: create_graph
  bool create_graph = false;  ///< record the backward, so the .grad it gives can be differentiated again
};

/// A contiguous, SIMD-aligned (64-byte) buffer, shared by the tensors that view it.
struct Storage {
  explicit Storage(size_t bytes);  ///< An aligned buffer of bytes bytes (from the caching allocator).
  /// A buffer owned elsewhere (a NumPy array's, for Python's from_numpy), not allocated or freed
  /// here: `release` runs once, when the last tensor lets go of it. The kernels load and store
  /// unaligned, so data needs only its element type's alignment.
  Storage(void* data, size_t bytes, std::function<void()> release);
  ~Storage();  ///< Frees the buffer (back to the cache), or calls release for a borrowed one.
  Storage(const Storage&) = delete;  ///< Not copyable: tensors share a storage through a shared_ptr.
  Storage& operator=(const Storage&) = delete;  ///< Not copyable.
  void* data = nullptr;  ///< the buffer
  size_t bytes = 0;  ///< its size in bytes
  std::function<void()> release;  ///< set for a borrowed buffer
};

/// What a Tensor handle points to. Storage is always row-major contiguous from `offset`.
struct TensorImpl {
  Shape shape;  ///< sizes of the dims
  DType dtype = DType::Float32;  ///< element type
  std::shared_ptr<Storage> storage;  ///< the data, shared with other views
  int64_t offset = 0;                       ///< in elements
  bool requires_grad = false;  ///< whether autograd tracks this tensor
  bool retains_grad = false;                ///< non-leaf that keeps its .grad (retain_grad())
  std::shared_ptr<TensorImpl> grad;         ///< accumulated gradient (same shape and dtype)
  std::shared_ptr<Node> grad_fn;            ///< the op that made this tensor (null for a leaf)
  std::weak_ptr<Node> grad_accumulator;     ///< a leaf's accumulate-grad node, shared by its uses
};

/// A handle to a tensor: copying it is cheap and shares the data (use clone() for a deep copy).
class Tensor {
 public:
  Tensor() = default;  ///< an undefined tensor (defined() is false)
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}  ///< A handle to impl.

  bool defined() const { return impl_ != nullptr; }  ///< False for a default-constructed (undefined) tensor.
  const Shape& shape() const { return impl().shape; }  ///< Sizes of the dims.
  /// Rank (number of dims).
  int64_t dim() const { return static_cast<int64_t>(impl().shape.size()); }
  /// Size of dim d (negative d counts from the end).
  int64_t size(int64_t d) const;
  int64_t numel() const { return autograd::numel(impl().shape); }  ///< Number of elements.
  DType dtype() const { return impl().dtype; }  ///< Element type.

  /// Typed pointer to the first element; throws if T is not this tensor's dtype.
  template <typename T> T* data() const;
  /// Untyped pointer to the first element.
  void* raw_data() const;

  /// The value of a one-element tensor, as a double.
  double item() const;
  /// Element at a full index (for tests and printing), as a double.
  double at(std::initializer_list<int64_t> index) const;
  /// Element at a flat (row-major) position, as a double.
  double flat(int64_t i) const;
  /// Sets the element at a flat position (not recorded by autograd).
  void set_flat(int64_t i, double v) const;
  /// All elements in row-major order, as doubles.
  std::vector<double> to_vector() const;

  bool requires_grad() const { return impl().requires_grad; }  ///< Whether autograd records ops on this tensor.
  /// Marks a leaf as needing a gradient; returns *this.
  const Tensor& requires_grad_(bool on = true) const;
  /// The accumulated gradient (undefined until a backward pass reaches this tensor).
  Tensor grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }
  /// Replaces (or, with an undefined tensor, clears) the accumulated gradient.
  void set_grad(const Tensor& g) const;
  /// A non-leaf tensor keeps its gradient after backward.
  void retain_grad() const;
  /// The node that made this tensor (null for a leaf).
  const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
  /// True for tensors made by the user rather than by a recorded op.
  bool is_leaf() const { return impl().grad_fn == nullptr; }

  /// Backpropagates from this tensor: needs a one-element tensor or an explicit gradient of the
  /// same shape. Gradients accumulate (+=) into the .grad of leaves that require grad. The graph's
  /// saved tensors are freed unless retain_graph.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;
  /// The same with options: backward(g, {.create_graph = true}) records the backward's ops, so the
  /// leaves' .grad have a graph of their own (a gradient penalty, a Hessian-vector product).
  void backward(const Tensor& gradient, const BackwardOptions& opts) const;

  /// Same data, cut from the graph (requires_grad false).
  Tensor detach() const;
  /// A deep copy of the data (recorded by autograd: its gradient flows back to this tensor).
  Tensor clone() const;
  /// This tensor converted to dtype (a copy, recorded by autograd), or itself if already dtype.
  Tensor to(DType dtype) const;

  /// PyTorch 1.13's repr: "tensor([[1., 2.],\n        [3., 4.]])", "tensor([0.5000], requires_grad=True)".
  std::string str() const;

  TensorImpl& impl() const;  ///< The shared state (throws for an undefined tensor).
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }  ///< The shared state, null when undefined.
  /// True when both handles share the same TensorImpl.
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);  ///< Writes t.str().

// ---- Factories -----------------------------------------------------------------------------------

/// A tensor of this shape with uninitialized values.
Tensor empty(const Shape& shape, DType dtype = DType::Float32);
Tensor zeros(const Shape& shape, DType dtype = DType::Float32);  ///< A tensor of zeros.
Tensor ones(const Shape& shape, DType dtype = DType::Float32);  ///< A tensor of ones.
Tensor full(const Shape& shape, double value, DType dtype = DType::Float32);  ///< A tensor filled with value.
/// A rank-0 tensor holding value.
Tensor scalar(double value, DType dtype = DType::Float32);
/// zeros/ones/empty with the shape and dtype of t.
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);  ///< Ones with the shape and dtype of t.
Tensor empty_like(const Tensor& t);  ///< Uninitialized, with the shape and dtype of t.
/// [start, start+step, ...) below end, as PyTorch's arange.
Tensor arange(double start, double end, double step = 1, DType dtype = DType::Float32);
Tensor arange(int64_t n, DType dtype = DType::Float32);  ///< [0, 1, ..., n - 1].
/// A tensor from values in row-major order; values.size() must equal the shape's element count.
Tensor tensor(const std::vector<double>& values, const Shape& shape, DType dtype = DType::Float32);
/// Named tensors in a fixed order (a state_dict, a list of parameters, the tensors of a file).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// A 1-D tensor from values.
Tensor tensor(const std::vector<double>& values, DType dtype = DType::Float32);
/// Uniform in [lo, hi), drawn from gen.
Tensor rand(const Shape& shape, Generator& gen, double lo = 0, double hi = 1,
            DType dtype = DType::Float32);
/// Normal with this mean and standard deviation, drawn from gen.
Tensor randn(const Shape& shape, Generator& gen, double mean = 0, double std = 1,
             DType dtype = DType::Float32);

// ---- In-place updates (not recorded by autograd; for optimizers, initializers, buffers) --------

/// Throws if t is a tensor autograd records into (requires grad) while grad mode is on.
void check_inplace(const Tensor& t, const std::string& op);
/// t = value everywhere.
void fill_(const Tensor& t, double value);
/// dst = src (same shape and dtype).
void copy_(const Tensor& dst, const Tensor& src);
/// Converts t (and its gradient) to dtype in place: the storage inside the shared TensorImpl is
/// swapped, so every handle to t sees the new dtype (model.double(), model.float()).
void convert_(const Tensor& t, DType dtype);

}  // namespace normlab::autograd
