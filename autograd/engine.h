// The reverse-mode autograd engine: graph nodes, grad mode, and the helper every op uses to record
// its backward right after its forward.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autograd/allocator.h"
#include "autograd/tensor.h"

namespace normlab::autograd {

/// Which inputs of an op need a gradient (the backward skips the others).
using Needs = std::vector<bool>;
/// An op's backward: from the gradient of its output, the gradients of its inputs (an undefined
/// Tensor for an input that needs none). Runs with grad mode off, or on in a create_graph pass:
/// then the ops it calls are recorded, so its gradients can be differentiated again.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_out, const Needs& needs)>;

/// Whether an op's backward can itself be differentiated. A `Differentiable` backward computes its
/// gradients with recorded ops whenever grad mode is on (a create_graph pass): from the saved
/// tensors with their graph links, never from raw kernels alone. A `FirstOrder` backward's
/// gradients, made in a create_graph pass, carry a node that refuses a further backward by name,
/// so a second derivative through such an op is an error, never a silent zero.
enum class Backward { FirstOrder, Differentiable };

class Node;
/// A node's edges to the nodes of its inputs, in the small-object pool (autograd/allocator.h): a
/// step makes and frees one such list per op.
using NodeList = std::vector<std::shared_ptr<Node>, PoolAllocator<std::shared_ptr<Node>>>;

/// One recorded op in the graph. `next[i]` is where the gradient of input i goes (null: nowhere).
class Node : public std::enable_shared_from_this<Node> {
 public:
  /// `name` must outlive the node (a string literal, as every op passes).
  Node(const char* name, NodeList next, BackwardFn fn, Shape out_shape);
  /// Makes the node that accumulates into the .grad of a leaf.
  static std::shared_ptr<Node> accumulator(const std::shared_ptr<TensorImpl>& leaf);
  /// Frees the chain of nodes below iteratively, so a graph of any depth is freed without recursion.
  ~Node();

  std::string name() const { return name_; }  ///< The op's name, e.g. "MulBackward0".
  const NodeList& next() const { return next_; }  ///< The nodes of the op's inputs (null: no gradient).
  /// Drops the saved tensors (after a backward without retain_graph).
  void release();

 private:
  friend class Pass;
  friend Tensor renamed(Tensor, const char*);
  friend Tensor record_node(const char*, Tensor, const Tensor*, size_t, BackwardFn, Backward);
  friend Tensor record_rows(const char*, Tensor, const Tensor&, int64_t);
  friend Tensor reattached(const Tensor&);
  friend void add_rows(Node&, const Tensor&);
  const char* name_;
  NodeList next_;
  BackwardFn fn_;
  Shape out_shape_;                   // shape and dtype of the tensor this node made (or the leaf):
  DType out_dtype_ = DType::Float32;  // what a gradient flowing into it must have
  bool released_ = false;
  bool differentiable_ = false;       // its backward records its ops under grad mode (Backward)
  std::shared_ptr<TensorImpl> leaf_;  // set on accumulate-grad nodes only
  std::weak_ptr<TensorImpl> retained_;  // the output tensor, when it asked to retain_grad()
  // Set by record_rows only: this node's output is rows rows_start_.. of its one input along dim 0,
  // and the engine adds its gradient into those rows of the input's gradient sum (fn_ is unused).
  int64_t rows_start_ = -1;
  // Scratch of the backward pass that is running through this node (one pass at a time per graph):
  // the pass number that last visited it, its count of consumers still to deliver a gradient, the
  // sum of the gradients delivered so far, and what autograd::grad's pruning needs.
  uint64_t pass_ = 0;
  int64_t pending_ = 0;
  Tensor grad_sum_;
  bool needed_ = true;   // on a path to a captured node (autograd::grad); always, for backward()
  int64_t order_ = 0;    // its index in the pass's list of nodes (autograd::grad's pruning)
  friend class Tensor;
};

/// Backpropagates grad (or 1 for a one-element root) from root through the graph, into the .grad
/// of the leaves. With opts.create_graph the backward's ops are recorded (the gradients have a
/// graph of their own); retain_graph defaults to create_graph.
void run_backward(const Tensor& root, const Tensor& grad, const BackwardOptions& opts);
void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph);  ///< Without create_graph.

/// What autograd::grad does beyond its arguments (PyTorch's torch.autograd.grad keywords).
struct GradOptions {
  std::optional<bool> retain_graph;  ///< keep the graph's saved tensors; default: create_graph
  bool create_graph = false;  ///< record the backward, so the gradients can be differentiated again
  bool allow_unused = false;  ///< an input the outputs do not depend on gets an undefined gradient, not an error
};
/// The gradients of sum_i <grad_outputs[i], outputs[i]> with respect to each of inputs, as
/// torch.autograd.grad: returned, not accumulated into any .grad (no leaf's .grad changes). Only the
/// part of the graph between the outputs and the inputs runs. grad_outputs may be empty (or hold
/// undefined tensors) for one-element outputs (a gradient of 1). Inputs may be leaves or
/// intermediate tensors; each must require grad.
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {}, const GradOptions& opts = {});

/// Is grad mode on (ops record the graph)? On by default, per thread.
bool grad_enabled();
void set_grad_enabled(bool on);  ///< Turns grad mode on or off for this thread (NoGradGuard does it for a scope).

/// RAII guard: no graph is recorded while it lives (PyTorch's torch.no_grad()).
class NoGradGuard {
 public:
  NoGradGuard() : prev_(grad_enabled()) { set_grad_enabled(false); }  ///< Turns grad mode off, remembering the previous mode.
  ~NoGradGuard() { set_grad_enabled(prev_); }  ///< Restores the previous grad mode.
  NoGradGuard(const NoGradGuard&) = delete;  ///< Not copyable.
  NoGradGuard& operator=(const NoGradGuard&) = delete;  ///< Not copyable.

 private:
  bool prev_;
};

/// Records an op: when grad mode is on and some input requires grad, gives `out` a node named
/// `name` whose backward is `fn` (inputs in the order of `inputs`). Returns out.
/// The backward captures an input as saved(t) (with its graph links: a second derivative flows
/// through it) and the op's own output as saved_output(t), read back with reattached(t).
Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs, BackwardFn fn,
              Backward order = Backward::FirstOrder);
/// The same for a braced list of inputs ({a, b}), without building a vector.
Tensor record(const char* name, Tensor out, std::initializer_list<Tensor> inputs, BackwardFn fn,
              Backward order = Backward::FirstOrder);
/// The same over inputs[0..n).
Tensor record_node(const char* name, Tensor out, const Tensor* inputs, size_t n, BackwardFn fn,
                   Backward order = Backward::FirstOrder);
/// Records `out`, the rows start..start+out.size(0) of x along dim 0 (a view of x), with a node
/// whose gradient the engine adds straight into those rows of x's gradient sum, which it zero-fills
/// once per backward pass. So the T pieces x[0], ..., x[T-1] of one x cost O(T * numel(x[t])) in the
/// backward, where a backward returning a zero-filled gradient of x's whole shape per piece would
/// cost O(T * numel(x)) (T^2 rows) to fill and add up. The sums are the same: each row gets its
/// pieces' gradients in arrival order, as before. Returns out.
Tensor record_rows(const char* name, Tensor out, const Tensor& x, int64_t start);
/// Renames the node that made t, if t was recorded: an op built from primitives names its last node
/// after itself, as PyTorch does (mean -> "MeanBackward0"). Only for a node the op just made. Returns t.
Tensor renamed(Tensor t, const char* name);
/// True when an op on these inputs would be recorded.
bool should_record(const std::vector<Tensor>& inputs);
bool should_record(std::initializer_list<Tensor> inputs);  ///< The same for a braced list of inputs.
/// An op's input to capture in its backward: the tensor itself, graph links included, so that a
/// backward that uses it in recorded ops (a create_graph pass) differentiates through it. (The
/// input's node is already kept alive by the op's node, so this holds nothing more.)
inline Tensor saved(const Tensor& t) { return t; }
/// An op's output to capture in its backward: same data, no graph links (the output's node is the
/// op's own node, which must not own itself).
inline Tensor saved_output(const Tensor& t) { return t.defined() ? t.detach() : t; }
/// In the backward of the node that made it: a saved_output with its link back to that node when a
/// create_graph pass is running it (so d(backward)/d(output) flows on), else the tensor itself.
Tensor reattached(const Tensor& saved_out);

}  // namespace normlab::autograd
