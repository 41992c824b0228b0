// Module: parameter and buffer registration, train/eval, state_dict and load_state_dict.
#include "nn/module.h"

#include <map>
#include <set>

namespace normlab::nn {

using autograd::shape_str;

Tensor Module::operator()(const Tensor& x) {
  Tensor y = forward(x);
  for (const auto& [id, hook] : forward_hooks_) hook(*this, x, y);
  return y;
}

int64_t Module::register_forward_hook(ForwardHook hook) {
  forward_hooks_.emplace_back(next_hook_id_, std::move(hook));
  return next_hook_id_++;
}

void Module::remove_forward_hook(int64_t id) {
  std::erase_if(forward_hooks_, [id](const auto& h) { return h.first == id; });
}

void Module::train(bool on) {
  training_ = on;
  on_train(on);
  for (auto& [name, child] : children_) child->train(on);
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  for (auto& [n, p] : params_)
    if (n == name) throw Error("register_parameter: a parameter named '" + name + "' exists already");
  t.requires_grad_(true);
  params_.emplace_back(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t) {
  for (auto& [n, b] : buffers_)
    if (n == name) throw Error("register_buffer: a buffer named '" + name + "' exists already");
  buffers_.emplace_back(name, t);
  return t;
}

void Module::set_buffer(const std::string& name, Tensor t) {
  for (auto& [n, b] : buffers_)
    if (n == name) {
      b = std::move(t);
      return;
    }
  throw Error("set_buffer: no buffer named '" + name + "'");
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m) {
  if (!m) throw Error("register_module: module '" + name + "' is null");
  for (auto& [n, c] : children_)
    if (n == name) throw Error("register_module: a child named '" + name + "' exists already");
  children_.emplace_back(name, std::move(m));
}

void Module::collect(const std::string& prefix, NamedTensors* params, NamedTensors* buffers) const {
  if (params)
    for (auto& [n, p] : params_) params->emplace_back(prefix + n, p);
  if (buffers)
    for (auto& [n, b] : buffers_)
      if (b.defined()) buffers->emplace_back(prefix + n, b);
  for (auto& [n, c] : children_) c->collect(prefix + n + ".", params, buffers);
}

// Keeps the first occurrence of each tensor (PyTorch's remove_duplicate=True).
static NamedTensors unique_tensors(const NamedTensors& all) {
  NamedTensors out;
  std::set<const autograd::TensorImpl*> seen;
  for (auto& [n, t] : all)
    if (seen.insert(t.impl_ptr().get()).second) out.emplace_back(n, t);
  return out;
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", &out, nullptr);
  return unique_tensors(out);
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", nullptr, &out);
  return unique_tensors(out);
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [n, p] : named_parameters()) out.push_back(p);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

void Module::zero_grad() {
  for (const Tensor& p : parameters()) p.set_grad(Tensor());
}

Module& Module::to(DType dtype) {
  for (auto& [n, p] : named_parameters()) autograd::convert_(p, dtype);
  for (auto& [n, b] : named_buffers()) autograd::convert_(b, dtype);
  return *this;
}

NamedTensors Module::state_dict() const {
  // PyTorch's order: own parameters, own buffers, then children recursively.
  NamedTensors out;
  for (auto& [n, p] : params_) out.emplace_back(n, p);
  for (auto& [n, b] : buffers_)
    if (b.defined()) out.emplace_back(n, b);
  for (auto& [cn, c] : children_)
    for (auto& [n, t] : c->state_dict()) out.emplace_back(cn + "." + n, t);
  return out;
}

void Module::load_state_dict(const NamedTensors& state) {
  const NamedTensors mine = state_dict();
  std::map<std::string, Tensor> given;
  std::vector<std::string> unexpected, missing, mismatched, duplicate;
  for (auto& [n, t] : state)
    if (!given.emplace(n, t).second) duplicate.push_back(n);
  std::set<std::string> known;
  for (auto& [n, t] : mine) {
    known.insert(n);
    auto it = given.find(n);
    if (it == given.end()) missing.push_back(n);
    else if (!it->second.defined() || it->second.shape() != t.shape())
      mismatched.push_back(n + " (expected shape " + shape_str(t.shape()) + ", got " +
                           (it->second.defined() ? shape_str(it->second.shape()) : "undefined") + ")");
  }
  for (auto& [n, t] : given)
    if (!known.count(n)) unexpected.push_back(n);
  if (!missing.empty() || !unexpected.empty() || !mismatched.empty() || !duplicate.empty()) {
    std::string msg = "load_state_dict: the state does not match the module";
    auto list = [&](const char* what, const std::vector<std::string>& v) {
      if (v.empty()) return;
      msg += std::string("; ") + what + ": ";
      for (size_t i = 0; i < v.size(); ++i) msg += (i ? ", " : "") + v[i];
    };
    list("missing", missing);
    list("unexpected", unexpected);
    list("wrong shape", mismatched);
    list("given twice", duplicate);
    throw Error(msg);
  }
  // Everything checked: now copy (converting dtype where the given tensor differs).
  autograd::NoGradGuard no_grad;
  for (auto& [n, t] : mine) autograd::copy_(t, given.at(n).to(t.dtype()));
}

std::string Module::str() const {
  if (children_.empty()) return repr();
  std::string s = repr() + "(\n";
  for (auto& [n, c] : children_) {
    std::string sub = c->str(), indented;
    for (char ch : sub) indented += ch == '\n' ? std::string("\n  ") : std::string(1, ch);
    s += "  (" + n + "): " + indented + "\n";
  }
  return s + ")";
}

}  // namespace normlab::nn
