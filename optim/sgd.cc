// SGD: option checks, the step (one fused kernel call per parameter), and checkpoint state.
#include "optim/sgd.h"

#include <cmath>
#include <set>

#include "autograd/engine.h"
#include "base/format.h"
#include "optim/kernels/sgd.h"

namespace normlab::optim {

namespace {

constexpr const char* kBuffer = "momentum_buffer";  // tensors "momentum_buffer.<i>"

}  // namespace

void SGD::check_options(const SGDOptions& o, const std::string& where) {
  check(std::isfinite(o.lr) && o.lr >= 0, where + ": lr must be a finite number >= 0, got " + base::py_float(o.lr));
  check(std::isfinite(o.momentum) && o.momentum >= 0 && o.momentum < 1,
        where + ": momentum must be in [0, 1), got " + base::py_float(o.momentum));
  check(std::isfinite(o.dampening), where + ": dampening must be a finite number, got " + base::py_float(o.dampening));
  check(std::isfinite(o.weight_decay) && o.weight_decay >= 0,
        where + ": weight_decay must be a finite number >= 0, got " + base::py_float(o.weight_decay));
  check(!o.nesterov || (o.momentum > 0 && o.dampening == 0),
        where + ": Nesterov momentum requires a momentum and zero dampening, got momentum=" + base::py_float(o.momentum) +
            ", dampening=" + base::py_float(o.dampening));
}

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : Optimizer("SGD", std::move(params), options.lr),
      opts_(options),
      buffers_(params_.size()) {
  check_options(options, "SGD");
}

SGDOptions SGD::options() const {
  SGDOptions o = opts_;
  o.lr = lr_;
  return o;
}

void SGD::step() {
  autograd::NoGradGuard no_grad;
  kernels::SGDStep s;
  s.lr = lr_;
  s.momentum = opts_.momentum;
  s.dampening = opts_.dampening;
  s.weight_decay = opts_.weight_decay;
  s.nesterov = opts_.nesterov;
  s.maximize = opts_.maximize;
  check_grads();  // all first, so that a bad one leaves all parameters as they were
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    const Tensor g = p.grad();
    if (!g.defined()) continue;  // no gradient: skipped, buffer untouched (as PyTorch)
    s.first = false;
    if (s.momentum != 0 && !buffers_[i].defined()) {
      buffers_[i] = autograd::empty(p.shape(), p.dtype());  // filled by the kernel: buf = g
      s.first = true;
    }
    autograd::dispatch(p.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* buf = s.momentum != 0 ? buffers_[i].data<T>() : nullptr;
      kernels::sgd_step(s, p.numel(), p.data<T>(), g.data<T>(), buf);
    });
  }
  ++steps_;
}

OptimizerState SGD::state() const {
  OptimizerState st;
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].defined()) st.tensors.emplace_back(indexed(kBuffer, i), buffers_[i].detach().clone());
  st.scalars = {{"lr", lr_},
                {"momentum", opts_.momentum},
                {"dampening", opts_.dampening},
                {"weight_decay", opts_.weight_decay},
                {"nesterov", opts_.nesterov ? 1.0 : 0.0},
                {"maximize", opts_.maximize ? 1.0 : 0.0},
                {"step", static_cast<double>(steps_)}};
  return st;
}

void SGD::load_state(const OptimizerState& st) {
  const std::string where = "SGD.load_state";
  check_scalar_names(st, {"lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "step"});
  SGDOptions o;
  o.lr = st.scalars.at("lr");
  o.momentum = st.scalars.at("momentum");
  o.dampening = st.scalars.at("dampening");
  o.weight_decay = st.scalars.at("weight_decay");
  o.nesterov = read_flag(st, "nesterov");
  o.maximize = read_flag(st, "maximize");
  check_options(o, where);
  const int64_t step = read_step(st);

  std::vector<Tensor> buffers(params_.size());
  std::set<int64_t> seen;
  for (const auto& [name, t] : st.tensors) {
    const auto [kind, i] = split_indexed(name);
    check(kind == kBuffer && i >= 0,
          where + ": expected tensors named \"momentum_buffer.<i>\" (i = parameter index), got \"" + name + "\"");
    check_param_index(name, i);
    check(seen.insert(i).second, where + ": \"" + name + "\" appears more than once");
    check(o.momentum != 0, where + ": got \"" + name + "\", but momentum is 0, which keeps no momentum buffers");
    check_like_param(name, i, t);
    buffers[i] = t;
  }
  // Everything checked: commit (copies, so the optimizer never shares data with the caller).
  for (Tensor& b : buffers)
    if (b.defined()) b = b.detach().clone();
  lr_ = o.lr;
  opts_ = o;
  steps_ = step;
  buffers_ = std::move(buffers);
}

}  // namespace normlab::optim
