// The reverse-mode autograd engine: a topological order over the graph and one iterative pass.
#include "autograd/engine.h"

#include <unordered_map>

#include "autograd/elementwise.h"

namespace normlab::autograd {

namespace {
thread_local bool g_grad_enabled = true;
}

bool grad_enabled() { return g_grad_enabled; }
void set_grad_enabled(bool on) { g_grad_enabled = on; }

Node::Node(std::string name, std::vector<std::shared_ptr<Node>> next, BackwardFn fn, Shape out_shape)
    : name_(std::move(name)), next_(std::move(next)), fn_(std::move(fn)), out_shape_(std::move(out_shape)) {}

std::shared_ptr<Node> Node::accumulator(const std::shared_ptr<TensorImpl>& leaf) {
  auto n = std::make_shared<Node>("AccumulateGrad", std::vector<std::shared_ptr<Node>>{}, nullptr,
                                  leaf->shape);
  n->leaf_ = leaf;
  n->out_dtype_ = leaf->dtype;
  return n;
}

Node::~Node() {
  // A chain of a million nodes would recurse a million deep if each destructor freed the next.
  // Instead, nodes whose last owner is this one are parked on a per-thread list, and only the
  // outermost destructor empties it, one node at a time.
  thread_local std::vector<std::shared_ptr<Node>> pending;
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

Tensor record(const char* name, Tensor out, const std::vector<Tensor>& inputs, BackwardFn fn) {
  if (!should_record(inputs)) return out;
  std::vector<std::shared_ptr<Node>> next(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
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
  o.grad_fn = std::make_shared<Node>(name, std::move(next), std::move(fn), o.shape);
  o.grad_fn->out_dtype_ = o.dtype;
  return out;
}

Tensor renamed(Tensor t, const char* name) {
  if (t.grad_fn()) t.grad_fn()->name_ = name;
  return t;
}

namespace {

// g into a leaf's .grad: the first gradient is taken as is when nothing else can see it (the
// engine's own buffer of a leaf's gradient, as PyTorch steals it), else copied; later ones added (+=).
void accumulate_into(TensorImpl& leaf, const Tensor& g, bool may_take = false) {
  if (!leaf.grad) {
    const auto& gi = g.impl_ptr();
    if (may_take && gi.use_count() == 1 && gi->storage.use_count() == 1 && !gi->requires_grad && gi->offset == 0) {
      leaf.grad = gi;
      return;
    }
    Tensor copy = g.detach().clone();
    leaf.grad = copy.impl_ptr();
  } else {
    Tensor acc(leaf.grad);
    add_(acc, g);
  }
}

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
    accumulate_into(root.impl(), grad);
    return;
  }

  // 1. Count, for every node reachable from the root, how many edges point to it (iterative DFS).
  Node* start = root.grad_fn().get();
  std::unordered_map<Node*, int> deps;
  std::vector<Node*> stack{start};
  deps[start] = 0;
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const auto& c : n->next_) {
      if (!c) continue;
      auto [it, fresh] = deps.try_emplace(c.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(c.get());
    }
  }

  // 2. Run each node once all its consumers have given it their gradient.
  std::unordered_map<Node*, Tensor> buffer;
  buffer[start] = grad;
  std::vector<Node*> ready{start};
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    Tensor g = std::move(buffer[n]);
    buffer.erase(n);
    std::vector<Tensor> grads;
    if (auto kept = n->retained_.lock(); kept && g.defined()) accumulate_into(*kept, g);
    if (n->leaf_) {
      if (g.defined()) accumulate_into(*n->leaf_, g, /*may_take=*/true);
    } else if (g.defined()) {
      if (n->released_)
        throw Error("backward: trying to backward through the graph a second time (the saved "
                    "tensors of " + n->name_ + " were freed by the first backward); pass "
                    "retain_graph=true to the first backward if you need to");
      Needs needs(n->next_.size());
      for (size_t i = 0; i < needs.size(); ++i) needs[i] = n->next_[i] != nullptr;
      grads = n->fn_(g, needs);
      if (!retain_graph) n->release();
    }
    for (size_t i = 0; i < n->next_.size(); ++i) {
      Node* c = n->next_[i].get();
      if (!c) continue;
      if (i < grads.size() && grads[i].defined()) {
        // A wrong gradient would otherwise broadcast silently into the sum below.
        if (grads[i].shape() != c->out_shape_ || grads[i].dtype() != c->out_dtype_)
          throw Error("backward: " + n->name_ + " returned a gradient of shape " + shape_str(grads[i].shape()) +
                      " " + dtype_name(grads[i].dtype()) + " for its input " + std::to_string(i) +
                      ", which has shape " + shape_str(c->out_shape_) + " " + dtype_name(c->out_dtype_));
        Tensor& b = buffer[c];
        if (!b.defined()) b = grads[i];
        else b = add(b, grads[i]);
      }
      if (--deps[c] == 0) ready.push_back(c);
    }
  }
}

}  // namespace normlab::autograd
