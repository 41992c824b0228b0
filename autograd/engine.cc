// The reverse-mode autograd engine: a topological order over the graph and one iterative pass.
#include "autograd/engine.h"

#include <algorithm>
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
  // The backward's captures are parked too: a saved input keeps its graph links, so freeing it can
  // free the node that made it, which would otherwise recurse down the chain.
  thread_local std::vector<std::shared_ptr<Node>> pending;  // not pooled: it outlives the pool at thread exit
  thread_local std::vector<BackwardFn> pending_fns;
  thread_local bool draining = false;
  for (auto& n : next_)
    if (n && n.use_count() == 1) pending.push_back(std::move(n));
  next_.clear();
  if (fn_) {
    pending_fns.push_back(std::move(fn_));
    fn_ = nullptr;
  }
  if (draining) return;
  draining = true;
  while (!pending.empty() || !pending_fns.empty()) {
    if (!pending_fns.empty()) {
      BackwardFn f = std::move(pending_fns.back());
      pending_fns.pop_back();
      f = nullptr;
      continue;
    }
    std::shared_ptr<Node> n = std::move(pending.back());
    pending.pop_back();
    n.reset();
  }
  draining = false;
}

void Node::release() {
  BackwardFn f = std::move(fn_);  // its captures freed on return, after fn_ is already empty
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

Tensor record_node(const char* name, Tensor out, const Tensor* inputs, size_t n, BackwardFn fn, Backward order) {
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
  o.grad_fn->differentiable_ = order == Backward::Differentiable;
  return out;
}

Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs, BackwardFn fn, Backward order) {
  return record_node(name, std::move(out), inputs.data(), inputs.size(), std::move(fn), order);
}

Tensor record(const char* name, Tensor out, std::initializer_list<Tensor> inputs, BackwardFn fn, Backward order) {
  return record_node(name, std::move(out), inputs.begin(), inputs.size(), std::move(fn), order);
}

Tensor record_rows(const char* name, Tensor out, const Tensor& x, int64_t start) {
  bool rows = x.dim() > 0 && start >= 0 && out.dim() == x.dim() && start + out.size(0) <= x.size(0);
  for (int64_t d = 1; rows && d < x.dim(); ++d) rows = out.size(d) == x.size(d);
  if (!rows)
    throw Error("record_rows: " + shape_str(out.shape()) + " from row " + std::to_string(start) +
                " is not a slice along dim 0 of a tensor of shape " + shape_str(x.shape()));
  if (!grad_enabled() || !x.requires_grad()) return out;
  out = record_node(name, std::move(out), &x, 1, nullptr, Backward::Differentiable);
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
// later ones added (+=). In a create_graph pass (grad mode on) a gradient with a graph is kept with
// it: the first one cloned by a recorded op, later ones added out of place (.grad = .grad + g), as
// PyTorch's AccumulateGrad does.
void accumulate_into(TensorImpl& leaf, Tensor g) {
  const bool graph = grad_enabled() && g.requires_grad();
  if (!leaf.grad) {
    if (graph) {
      leaf.grad = g.clone().impl_ptr();
    } else if (sole_owner(g) && g.impl().offset == 0) {  // as PyTorch steals the engine's buffer
      leaf.grad = g.impl_ptr();
    } else {
      Tensor copy = g.detach().clone();
      leaf.grad = copy.impl_ptr();
    }
  } else {
    Tensor acc(leaf.grad);
    if (graph || acc.requires_grad()) leaf.grad = add(acc, g).impl_ptr();
    else add_(acc, g);
  }
}

// Global so that nested or successive passes never mistake a node's scratch for their own.
std::atomic<uint64_t> g_pass{0};
// The node whose backward this thread is running (reattached() links a saved output to it).
thread_local Node* g_running = nullptr;

// Grad mode for the length of a pass: off, or on for create_graph.
class GradModeScope {
 public:
  explicit GradModeScope(bool on) : prev_(grad_enabled()) { set_grad_enabled(on); }
  ~GradModeScope() { set_grad_enabled(prev_); }
  GradModeScope(const GradModeScope&) = delete;
  GradModeScope& operator=(const GradModeScope&) = delete;

 private:
  bool prev_;
};

}  // namespace

Tensor reattached(const Tensor& saved_out) {
  if (!g_running || !grad_enabled() || !saved_out.defined()) return saved_out;
  Tensor t = saved_out.detach();
  t.impl().requires_grad = true;
  t.impl().grad_fn = g_running->shared_from_this();
  return t;
}

// The backward of a record_rows node n: g (of n's output shape) added into its rows of the gradient
// sum of n's input, which starts as zeros of the input's whole shape (x[rows] = 0 + g, as the sum of
// a zero-filled gradient per piece would give).
void add_rows(Node& n, const Tensor& g) {
  Node* c = n.next_[0].get();
  if (!c || !c->needed_) return;
  Tensor& b = c->grad_sum_;
  if (!b.defined()) b = zeros(c->out_shape_, c->out_dtype_);
  else if (!sole_owner(b)) b = b.detach().clone();  // never write into a gradient someone else sees
  add_(narrow(b, n.rows_start_, n.out_shape_[0]), g);
}

// One backward pass over the graph below some roots. Without captures (Tensor::backward) every
// node runs and the leaves' .grad accumulate; with captures (autograd::grad) only the nodes on a
// path to a captured node run, and the gradients arriving at the captured nodes are returned.
class Pass {
 public:
  Pass(bool create_graph, bool retain_graph) : create_graph_(create_graph), retain_graph_(retain_graph) {}

  // Runs from roots (nodes) seeded with grads. captures[k] = (node, index into *captured).
  void run(const std::vector<Node*>& roots, std::vector<Tensor> grads,
           const std::vector<std::pair<Node*, size_t>>* captures, std::vector<Tensor>* captured);

 private:
  // Every node reachable from the roots, with its count of consumers in pending_.
  void collect(const std::vector<Node*>& roots);
  // needed_ = the node is captured or some node below it is (reverse topological order).
  void mark_needed(const std::vector<std::pair<Node*, size_t>>& captures);
  std::vector<Tensor> run_node(Node* n, const Tensor& g);
  // A gradient made by a FirstOrder backward in a create_graph pass: the same values, with a node
  // that refuses to be differentiated, naming the op.
  static Tensor first_order_only(const Tensor& g, const Node& made_by);

  bool create_graph_, retain_graph_;
  uint64_t pass_ = 0;
  std::vector<Node*> nodes_;
};

void Pass::collect(const std::vector<Node*>& roots) {
  pass_ = ++g_pass;
  nodes_.reserve(64);
  for (Node* r : roots) {
    if (r->pass_ == pass_) continue;
    r->pass_ = pass_;
    r->pending_ = 0;
    r->needed_ = true;
    r->grad_sum_ = Tensor();
    nodes_.push_back(r);
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    for (const auto& c : nodes_[i]->next_) {
      if (!c) continue;
      if (c->pass_ != pass_) {
        c->pass_ = pass_;
        c->pending_ = 0;
        c->needed_ = true;
        c->grad_sum_ = Tensor();
        nodes_.push_back(c.get());
      }
      ++c->pending_;
    }
  }
}

void Pass::mark_needed(const std::vector<std::pair<Node*, size_t>>& captures) {
  // Kahn's order over the consumer counts (copied), then needed_ from the bottom up.
  std::vector<int64_t> left(nodes_.size());
  std::vector<Node*> order, ready;
  order.reserve(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node* n = nodes_[i];
    n->needed_ = false;
    n->order_ = static_cast<int64_t>(i);
    left[i] = n->pending_;
    if (left[i] == 0) ready.push_back(n);
  }
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    order.push_back(n);
    for (const auto& c : n->next_)
      if (c && --left[c->order_] == 0) ready.push_back(c.get());
  }
  for (const auto& [n, k] : captures) n->needed_ = true;
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (const auto& c : (*it)->next_)
      if (c && c->needed_) (*it)->needed_ = true;
}

Tensor Pass::first_order_only(const Tensor& g, const Node& made_by) {
  Tensor t = g.detach();
  const std::string name = made_by.name_;
  auto refuse = [name](const Tensor&, const Needs&) -> std::vector<Tensor> {
    throw Error("backward: cannot differentiate the gradient computed by " + name + " again: " + name +
                "'s backward is first-order only (its second derivative is not implemented)");
  };
  // Linked to the op's inputs, so that a pass differentiating the gradient with respect to them
  // reaches this node (and refuses), rather than pruning it as unrelated and returning zero.
  auto node = std::allocate_shared<Node>(PoolAllocator<Node>(), "NotDifferentiableBackward", made_by.next_,
                                         std::move(refuse), t.shape());
  node->out_dtype_ = t.dtype();
  t.impl().requires_grad = true;
  t.impl().grad_fn = std::move(node);
  return t;
}

std::vector<Tensor> Pass::run_node(Node* n, const Tensor& g) {
  if (n->released_)
    throw Error("backward: trying to backward through the graph a second time (the saved "
                "tensors of " + n->name() + " were freed by the first backward); pass "
                "retain_graph=true to the first backward if you need to");
  std::vector<Tensor> grads;
  if (n->rows_start_ >= 0) {  // a slice along dim 0
    Node* c = n->next_[0].get();
    if (create_graph_ && c && c->needed_)  // a recorded op: its gradient can be differentiated
      grads.push_back(slice_backward(g, c->out_shape_, 0, n->rows_start_));
    else  // straight into its rows of the input's gradient sum
      add_rows(*n, g);
  } else {
    Needs needs(n->next_.size(), false);
    for (size_t i = 0; i < n->next_.size(); ++i) needs[i] = n->next_[i] != nullptr && n->next_[i]->needed_;
    struct Running {
      Node* prev = g_running;
      explicit Running(Node* n) { g_running = n; }
      ~Running() { g_running = prev; }
    } running(n);
    grads = n->fn_(g, needs);
    if (create_graph_ && !n->differentiable_)
      for (Tensor& t : grads)
        if (t.defined() && !t.requires_grad()) t = first_order_only(t, *n);
  }
  if (!retain_graph_) n->release();
  return grads;
}

void Pass::run(const std::vector<Node*>& roots, std::vector<Tensor> grads,
               const std::vector<std::pair<Node*, size_t>>* captures, std::vector<Tensor>* captured) {
  collect(roots);
  if (captures) mark_needed(*captures);
  // Gradients still parked in nodes when a backward throws are dropped.
  struct Cleanup {
    std::vector<Node*>& nodes;
    ~Cleanup() {
      for (Node* n : nodes) n->grad_sum_ = Tensor();
    }
  } cleanup{nodes_};

  const auto deliver = [](Node* c, Tensor g) {
    Tensor& b = c->grad_sum_;
    if (!b.defined()) b = std::move(g);
    else if (sole_owner(b) && !g.requires_grad()) add_(b, g);  // b + g, the same sum as add(b, g)
    else b = add(b, g);
  };
  std::vector<Node*> ready;
  ready.reserve(16);
  for (size_t i = 0; i < roots.size(); ++i) deliver(roots[i], std::move(grads[i]));
  // Only a root can have no consumer; a root below another root waits for it.
  for (Node* r : roots)
    if (r->pending_ == 0 && r->needed_ && std::find(ready.begin(), ready.end(), r) == ready.end()) ready.push_back(r);
  // Run each node once all its consumers have given it their gradient.
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    Tensor g = std::move(n->grad_sum_);
    n->grad_sum_ = Tensor();
    if (captures) {
      for (const auto& [c, k] : *captures)
        if (c == n) (*captured)[k] = g;
    } else if (auto kept = n->retained_.lock(); kept && g.defined()) {
      accumulate_into(*kept, g);
    }
    std::vector<Tensor> out;
    if (n->leaf_) {
      if (g.defined() && !captures) accumulate_into(*n->leaf_, std::move(g));
    } else if (g.defined()) {
      out = run_node(n, g);
    }
    g = Tensor();
    for (size_t i = 0; i < n->next_.size(); ++i) {
      Node* c = n->next_[i].get();
      if (!c || !c->needed_) continue;
      if (i < out.size() && out[i].defined()) {
        // A wrong gradient would otherwise broadcast silently into the sum below.
        if (out[i].shape() != c->out_shape_ || out[i].dtype() != c->out_dtype_)
          throw Error("backward: " + n->name() + " returned a gradient of shape " + shape_str(out[i].shape()) +
                      " " + dtype_name(out[i].dtype()) + " for its input " + std::to_string(i) +
                      ", which has shape " + shape_str(c->out_shape_) + " " + dtype_name(c->out_dtype_));
        deliver(c, std::move(out[i]));
      }
      if (--c->pending_ == 0) ready.push_back(c);
    }
  }
}

namespace {

// The gradient to start from at root: grad, or 1 for a one-element root; `who` names the caller.
Tensor seed_gradient(const Tensor& root, const Tensor& grad, const std::string& who) {
  if (!grad.defined()) {
    if (root.numel() != 1)
      throw Error(who + ": grad can be implicitly created only for scalar outputs; this tensor "
                  "has shape " + shape_str(root.shape()) + ", so pass a gradient of that shape");
    return ones_like(root);
  }
  if (grad.shape() != root.shape())
    throw Error(who + ": the gradient has shape " + shape_str(grad.shape()) + " but the tensor has shape " +
                shape_str(root.shape()));
  if (grad.dtype() != root.dtype())
    throw Error(who + ": the gradient is " + dtype_name(grad.dtype()) + " but the tensor is " +
                dtype_name(root.dtype()));
  return grad;
}

}  // namespace

void run_backward(const Tensor& root, const Tensor& grad_in, const BackwardOptions& opts) {
  check(root.defined(), "backward: called on an undefined tensor");
  if (!root.requires_grad())
    throw Error("backward: the tensor does not require grad and has no grad_fn (did you call "
                "requires_grad_() on the inputs, or run the forward pass under no_grad?)");
  Tensor grad = seed_gradient(root, grad_in, "backward");
  GradModeScope mode(opts.create_graph);
  if (!root.grad_fn()) {  // a leaf: its gradient is grad itself
    accumulate_into(root.impl(), std::move(grad));
    return;
  }
  Pass pass(opts.create_graph, opts.retain_graph.value_or(opts.create_graph));
  std::vector<Tensor> grads;
  grads.push_back(std::move(grad));
  pass.run({root.grad_fn().get()}, std::move(grads), nullptr, nullptr);
}

void run_backward(const Tensor& root, const Tensor& grad, bool retain_graph) {
  BackwardOptions opts;
  opts.retain_graph = retain_graph;
  run_backward(root, grad, opts);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, const GradOptions& opts) {
  if (outputs.empty()) throw Error("grad: expected at least one output to differentiate");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw Error("grad: got " + std::to_string(grad_outputs.size()) + " grad_outputs for " +
                std::to_string(outputs.size()) + " outputs (give one per output, or none)");
  std::vector<Node*> roots;
  std::vector<Tensor> seeds, leaf_roots, leaf_seeds;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& y = outputs[i];
    const std::string who = "grad: output " + std::to_string(i);
    if (!y.defined()) throw Error(who + " is an undefined tensor");
    if (!y.requires_grad()) throw Error(who + " does not require grad and has no grad_fn");
    Tensor s = seed_gradient(y, grad_outputs.empty() ? Tensor() : grad_outputs[i], who);
    if (y.grad_fn()) roots.push_back(y.grad_fn().get()), seeds.push_back(std::move(s));
    else leaf_roots.push_back(y), leaf_seeds.push_back(std::move(s));
  }
  std::vector<std::pair<Node*, size_t>> captures;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    const std::string who = "grad: input " + std::to_string(k);
    if (!x.defined()) throw Error(who + " is an undefined tensor");
    if (!x.requires_grad()) throw Error(who + " does not require grad, so it has no gradient");
    Node* n = x.grad_fn() ? x.grad_fn().get() : x.impl().grad_accumulator.lock().get();
    if (n) captures.emplace_back(n, k);
  }
  GradModeScope mode(opts.create_graph);
  std::vector<Tensor> result(inputs.size());
  if (!roots.empty()) {
    Pass pass(opts.create_graph, opts.retain_graph.value_or(opts.create_graph));
    pass.run(roots, std::move(seeds), &captures, &result);
  }
  for (size_t j = 0; j < leaf_roots.size(); ++j)  // an output that is an input: d y / d y = 1
    for (size_t k = 0; k < inputs.size(); ++k)
      if (inputs[k].is_same(leaf_roots[j]))
        result[k] = result[k].defined() ? add(result[k], leaf_seeds[j]) : leaf_seeds[j];
  for (size_t k = 0; k < inputs.size(); ++k)
    if (!result[k].defined() && !opts.allow_unused)
      throw Error("grad: input " + std::to_string(k) + " (shape " + shape_str(inputs[k].shape()) +
                  ") was not used to compute the outputs; pass allow_unused = true if that is expected "
                  "(its gradient is then an undefined tensor)");
  return result;
}

}  // namespace normlab::autograd
