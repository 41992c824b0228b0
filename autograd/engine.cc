// The reverse-mode autograd engine: a topological order over the graph and one iterative pass.
#include "autograd/engine.h"

#include <atomic>

#include "autograd/allocator.h"
#include "autograd/elementwise.h"
#include "autograd/shape_ops.h"

namespace normlab::autograd {

namespace {
thread_local bool g_grad_enabled = true;
}

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }

Node::Node(const char* name, NodeList next, BackwardFn fn, Shape out_shape)
    : name_(name), next_(std::move(next)), fn_(std::move(fn)), out_shape_(std::move(out_shape)) {}

std::shared_ptr<Node> Node::accumulator(const std::shared_ptr<TensorImpl>& leaf) {
  auto n = std::allocate_shared<Node>(PoolAllocator<Node>(), "AccumulateGrad", NodeList{}, nullptr, leaf->shape);
  n->leaf_ = leaf;
  n->out_dtype_ = leaf->dtype;
  return n;
}

Node::~Node() {
  // A chain of a million nodes would recurse a million deep if each destructor freed the next.
  // Instead, nodes whose last owner is this one are parked on a per-thread list, and only the
  // outermost destructor empties it, one node at a time.
  thread_local std::vector<std::shared_ptr<Node>> pending;  // not pooled: it outlives the pool at thread exit
  thread_local bool draining = false;
  for (auto& n : next_)
    if (n && n.use_count() == 1) pending.push_back(std::move(n));
  next_.clear();
  if (draining) return;
  draining = true;
  while (!pending.empty()) {
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    n.reset();
  }
  draining = false;
}

void Node::release() {
  fn_ = nullptr;
  released_ = true;
}

bool should_record(const std::vector<Tensor>& inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

bool should_record(std::initializer_list<Tensor> inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor record_node(const char* name, Tensor out, const Tensor* inputs, size_t n, BackwardFn fn) {
  if (!grad_enabled()) return out;
  bool any = false;
  for (size_t i = 0; i < n && !any; ++i) any = inputs[i].defined() && inputs[i].requires_grad();
  if (!any) return out;
  NodeList next(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    if (t.grad_fn()) {
      next[i] = t.grad_fn();
    } else {  // a leaf: one accumulator node, shared by all its uses
      TensorImpl& impl = t.impl();
      next[i] = impl.grad_accumulator.lock();
      if (!next[i]) {
        next[i] = Node::accumulator(t.impl_ptr());
        impl.grad_accumulator = next[i];
      }
    }
  }
  TensorImpl& o = out.impl();
  o.requires_grad = true;
  // Pooled: a step makes and frees the same nodes every time.
  o.grad_fn = std::allocate_shared<Node>(PoolAllocator<Node>(), name, std::move(next), std::move(fn), o.shape);
  o.grad_fn->out_dtype_ = o.dtype;
  return out;
}

Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs, BackwardFn fn) {
  return record_node(name, std::move(out), inputs.data(), inputs.size(), std::move(fn));
}

Tensor record(const char* name, Tensor out, std::initializer_list<Tensor> inputs, BackwardFn fn) {
  return record_node(name, std::move(out), inputs.begin(), inputs.size(), std::move(fn));
}

Tensor record_rows(const char* name, Tensor out, const Tensor& x, int64_t start) {
  bool rows = x.dim() > 0 && start >= 0 && out.dim() == x.dim() && start + out.size(0) <= x.size(0);
  for (int64_t d = 1; rows && d < x.dim(); ++d) rows = out.size(d) == x.size(d);
  if (!rows)
    throw Error("record_rows: " + shape_str(out.shape()) + " from row " + std::to_string(start) +
                " is not a slice along dim 0 of a tensor of shape " + shape_str(x.shape()));
  if (!grad_enabled() || !x.requires_grad()) return out;
  out = record_node(name, std::move(out), &x, 1, nullptr);
  out.grad_fn()->rows_start_ = start;
  return out;
}

Tensor renamed(Tensor t, const char* name) {
  if (t.grad_fn()) t.grad_fn()->name_ = name;
  return t;
}

namespace {

// True when nothing but this handle sees g's data: g's buffer can be taken over or updated in place.
bool sole_owner(const Tensor& g) {
  return g.impl_ptr().use_count() == 1 && g.impl().storage.use_count() == 1 && !g.impl().grad_fn &&
         !g.impl().requires_grad;
}

// g into a leaf's .grad: the first gradient is taken over (when nothing else sees it) or copied,
// later ones added (+=).
void accumulate_into(TensorImpl& leaf, Tensor g) {
  if (!leaf.grad) {
    if (sole_owner(g) && g.impl().offset == 0) {  // as PyTorch steals the engine's buffer
      leaf.grad = g.impl_ptr();
    } else {
      Tensor copy = g.detach().clone();
      leaf.grad = copy.impl_ptr();
    }
  } else {
    Tensor acc(leaf.grad);
    add_(acc, g);
  }
}

}  // namespace

// The backward of a record_rows node n: g (of n's output shape) added into its rows of the gradient
// sum of n's input, which starts as zeros of the input's whole shape (x[rows] = 0 + g, as the sum of
// a zero-filled gradient per piece would give).
void add_rows(Node& n, const Tensor& g) {
  Node* c = n.next_[0].get();
  if (!c) return;
  Tensor& b = c->grad_sum_;
  if (!b.defined()) b = zeros(c->out_shape_, c->out_dtype_);
  else if (!sole_owner(b)) b = b.detach().clone();  // never write into a gradient someone else sees
  add_(narrow(b, n.rows_start_, n.out_shape_[0]), g);
}

namespace {

// Global so that nested or successive passes never mistake a node's scratch for their own.
std::atomic<uint64_t> g_pass{0};

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_in, bool retain_graph) {
  check(root.defined(), "backward: called on an undefined tensor");
  if (!root.requires_grad())
    throw Error("backward: the tensor does not require grad and has no grad_fn (did you call "
                "requires_grad_() on the inputs, or run the forward pass under no_grad?)");
  Tensor grad = grad_in;
  if (!grad.defined()) {
    if (root.numel() != 1)
      throw Error("backward: grad can be implicitly created only for scalar outputs; this tensor "
                  "has shape " + shape_str(root.shape()) + ", so pass a gradient of that shape");
    grad = ones_like(root);
  } else {
    if (grad.shape() != root.shape())
      throw Error("backward: the gradient has shape " + shape_str(grad.shape()) +
                  " but the tensor has shape " + shape_str(root.shape()));
    if (grad.dtype() != root.dtype())
      throw Error("backward: the gradient is " + dtype_name(grad.dtype()) + " but the tensor is " +
                  dtype_name(root.dtype()));
  }
  NoGradGuard no_grad;
  if (!root.grad_fn()) {  // a leaf: its gradient is grad itself
    accumulate_into(root.impl(), std::move(grad));
    return;
  }

  // 1. Count, for every node reachable from the root, how many edges point to it. The nodes are
  // listed in `nodes` (breadth-first); a node belongs to this pass when its pass_ is this pass.
  const uint64_t pass = ++g_pass;
  Node* start = root.grad_fn().get();
  std::vector<Node*> nodes;
  nodes.reserve(64);
  start->pass_ = pass;
  start->pending_ = 0;
  nodes.push_back(start);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const auto& c : nodes[i]->next_) {
      if (!c) continue;
      if (c->pass_ != pass) {
        c->pass_ = pass;
        c->pending_ = 0;
        c->grad_sum_ = Tensor();
        nodes.push_back(c.get());
      }
      ++c->pending_;
    }
  }
  // Gradients still parked in nodes when a backward throws are dropped.
  struct Cleanup {
    std::vector<Node*>& nodes;
    ~Cleanup() {
      for (Node* n : nodes) n->grad_sum_ = Tensor();
    }
  } cleanup{nodes};

  // 2. Run each node once all its consumers have given it their gradient.
  start->grad_sum_ = std::move(grad);
  std::vector<Node*> ready{start};
  ready.reserve(16);
  Needs needs;  // needs[i] = next_[i] != nullptr for the node being run (one buffer for the pass)
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    Tensor g = std::move(n->grad_sum_);
    n->grad_sum_ = Tensor();
    std::vector<Tensor> grads;
    if (auto kept = n->retained_.lock(); kept && g.defined()) accumulate_into(*kept, g);
    if (n->leaf_) {
      if (g.defined()) accumulate_into(*n->leaf_, std::move(g));
    } else if (g.defined()) {
      if (n->released_)
        throw Error("backward: trying to backward through the graph a second time (the saved "
                    "tensors of " + n->name() + " were freed by the first backward); pass "
                    "retain_graph=true to the first backward if you need to");
      if (n->rows_start_ >= 0) {  // a slice: its gradient goes straight into its rows (no grads below)
        add_rows(*n, g);
      } else {
        needs.assign(n->next_.size(), false);
        for (size_t i = 0; i < n->next_.size(); ++i) needs[i] = n->next_[i] != nullptr;
        grads = n->fn_(g, needs);
      }
      g = Tensor();
      if (!retain_graph) n->release();
    }
    for (size_t i = 0; i < n->next_.size(); ++i) {
      Node* c = n->next_[i].get();
      if (!c) continue;
      if (i < grads.size() && grads[i].defined()) {
        // A wrong gradient would otherwise broadcast silently into the sum below.
        if (grads[i].shape() != c->out_shape_ || grads[i].dtype() != c->out_dtype_)
          throw Error("backward: " + n->name() + " returned a gradient of shape " + shape_str(grads[i].shape()) +
                      " " + dtype_name(grads[i].dtype()) + " for its input " + std::to_string(i) +
                      ", which has shape " + shape_str(c->out_shape_) + " " + dtype_name(c->out_dtype_));
        Tensor& b = c->grad_sum_;
        if (!b.defined()) b = std::move(grads[i]);
        else if (sole_owner(b)) add_(b, grads[i]);  // b + g, the same sum as add(b, g)
        else b = add(b, grads[i]);
      }
      if (--c->pending_ == 0) ready.push_back(c);
    }
  }
}

}  // namespace normlab::autograd
