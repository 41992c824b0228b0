// Hessian-vector and Jacobian-vector products through create_graph backward passes, and the power
// iteration and Hutchinson estimates built on them.
#include "autograd/curvature.h"

#include <cmath>
#include <string>

#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/reduce.h"

namespace normlab::autograd {

namespace {

// v has one tensor per parameter, of its shape and dtype; `who` names the caller.
void check_like(const std::vector<Tensor>& v, const std::vector<Tensor>& params, const std::string& who,
                const char* what) {
  if (v.size() != params.size())
    throw Error(who + ": expected " + std::to_string(params.size()) + " tensors in " + what + " (one per input), got " +
                std::to_string(v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].defined() || v[i].shape() != params[i].shape() || v[i].dtype() != params[i].dtype())
      throw Error(who + ": " + what + "[" + std::to_string(i) + "] must have the shape " +
                  shape_str(params[i].shape()) + " and dtype " + dtype_name(params[i].dtype()) + " of input " +
                  std::to_string(i) + ", got " +
                  (v[i].defined() ? shape_str(v[i].shape()) + " " + dtype_name(v[i].dtype()) : "an undefined tensor"));
  }
}

void check_params(const std::vector<Tensor>& params, const std::string& who) {
  if (params.empty()) throw Error(who + ": expected at least one input tensor");
  for (size_t i = 0; i < params.size(); ++i)
    if (!params[i].defined() || !params[i].requires_grad())
      throw Error(who + ": input " + std::to_string(i) + " must be a tensor that requires grad");
}

// The tensors of g, each undefined one (a parameter the loss does not use) replaced by zeros.
std::vector<Tensor> or_zeros(std::vector<Tensor> g, const std::vector<Tensor>& like) {
  for (size_t i = 0; i < g.size(); ++i)
    if (!g[i].defined()) g[i] = zeros(like[i].shape(), like[i].dtype());
  return g;
}

// sum_i <a_i, b_i>, in double.
double dot(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const std::vector<double> x = a[i].to_vector(), y = b[i].to_vector();
    for (size_t k = 0; k < x.size(); ++k) s += x[k] * y[k];
  }
  return s;
}

// v scaled to norm 1 over all its tensors (v unchanged if it is zero).
std::vector<Tensor> normalized(const std::vector<Tensor>& v) {
  const double norm = std::sqrt(dot(v, v));
  std::vector<Tensor> out;
  for (const Tensor& t : v) out.push_back(norm > 0 ? mul(t, 1.0 / norm) : t);
  return out;
}

}  // namespace

std::vector<Tensor> hvp(const ScalarFn& f, const std::vector<Tensor>& params, const std::vector<Tensor>& v) {
  check_params(params, "hvp");
  check_like(v, params, "hvp", "v");
  return HessianOperator(f(params), params).apply(v);
}

JvpResult jvp(const TensorFn& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& u) {
  check_params(inputs, "jvp");
  check_like(u, inputs, "jvp", "u");
  const Tensor y = f(inputs);
  if (!y.defined() || !y.requires_grad())
    throw Error("jvp: the function's output does not depend on its inputs (it does not require grad)");
  Tensor w = zeros(y.shape(), y.dtype());  // any value: J^T w is linear in w
  w.requires_grad_();
  GradOptions first;
  first.create_graph = true;
  first.allow_unused = true;
  std::vector<Tensor> jtw = grad({y}, inputs, {w}, first);
  std::vector<Tensor> outs, us;
  for (size_t i = 0; i < jtw.size(); ++i)
    if (jtw[i].defined() && jtw[i].requires_grad()) outs.push_back(jtw[i]), us.push_back(u[i]);
  JvpResult r;
  r.value = y.detach();
  if (outs.empty()) {  // J^T w does not depend on w: J = 0
    r.jvp = zeros(y.shape(), y.dtype());
    return r;
  }
  GradOptions second;
  second.allow_unused = true;
  const std::vector<Tensor> ju = grad(outs, {w}, us, second);
  r.jvp = ju[0].defined() ? ju[0] : zeros(y.shape(), y.dtype());
  return r;
}

HessianOperator::HessianOperator(const Tensor& loss, std::vector<Tensor> params) : params_(std::move(params)) {
  check_params(params_, "HessianOperator");
  if (!loss.defined() || loss.numel() != 1)
    throw Error("HessianOperator: the loss must be a one-element tensor, got " +
                (loss.defined() ? "shape " + shape_str(loss.shape()) : std::string("an undefined tensor")));
  if (!loss.requires_grad()) throw Error("HessianOperator: the loss does not depend on the parameters");
  GradOptions opts;
  opts.create_graph = true;
  opts.allow_unused = true;
  grads_ = grad({loss}, params_, {}, opts);
}

std::vector<Tensor> HessianOperator::apply(const std::vector<Tensor>& v) const {
  check_like(v, params_, "HessianOperator::apply", "v");
  // Only the first derivatives that depend on the parameters have a second derivative.
  std::vector<Tensor> outs, vs;
  for (size_t i = 0; i < grads_.size(); ++i)
    if (grads_[i].defined() && grads_[i].requires_grad()) outs.push_back(grads_[i]), vs.push_back(v[i]);
  if (outs.empty()) return or_zeros(std::vector<Tensor>(params_.size()), params_);
  GradOptions opts;
  opts.retain_graph = true;  // the next product goes through the same graph
  opts.allow_unused = true;
  std::vector<Tensor> hv = grad(outs, params_, vs, opts);
  for (Tensor& t : hv)
    if (t.defined()) t = t.detach();
  return or_zeros(std::move(hv), params_);
}

EigenResult top_eigenvalue(const HessianOperator& h, const PowerIterationOptions& opts) {
  if (opts.max_iters < 1) throw Error("top_eigenvalue: max_iters must be at least 1, got " + std::to_string(opts.max_iters));
  if (!(opts.tol > 0)) throw Error("top_eigenvalue: tol must be positive");
  Generator gen(opts.seed);
  std::vector<Tensor> v;
  for (const Tensor& p : h.params()) v.push_back(randn(p.shape(), gen, 0, 1, p.dtype()));
  v = normalized(v);
  EigenResult r;
  double prev = 0;
  for (int64_t it = 1; it <= opts.max_iters; ++it) {
    const std::vector<Tensor> hv = h.apply(v);
    const double lambda = dot(v, hv);  // the Rayleigh quotient of the unit vector v
    r.iterations = it;
    r.eigenvalue = lambda;
    r.eigenvector = v;
    if (it > 1 && std::fabs(lambda - prev) / (std::fabs(prev) + 1e-6) < opts.tol) {
      r.converged = true;
      break;
    }
    prev = lambda;
    if (dot(hv, hv) == 0) {  // H v = 0: v is an eigenvector of eigenvalue 0
      r.converged = true;
      break;
    }
    v = normalized(hv);
  }
  return r;
}

TraceResult hessian_trace(const HessianOperator& h, const TraceOptions& opts) {
  if (opts.samples < 1) throw Error("hessian_trace: samples must be at least 1, got " + std::to_string(opts.samples));
  Generator gen(opts.seed);
  double mean = 0, m2 = 0;  // Welford's running mean and sum of squared deviations
  for (int64_t s = 1; s <= opts.samples; ++s) {
    std::vector<Tensor> v;
    for (const Tensor& p : h.params()) {
      Tensor r = empty(p.shape(), p.dtype());
      for (int64_t k = 0; k < r.numel(); ++k) r.set_flat(k, (gen.next_u64() >> 63) ? 1.0 : -1.0);
      v.push_back(r);
    }
    const double q = dot(v, h.apply(v));
    const double d = q - mean;
    mean += d / static_cast<double>(s);
    m2 += d * (q - mean);
  }
  TraceResult r;
  r.trace = mean;
  r.samples = opts.samples;
  r.standard_error = opts.samples > 1 ? std::sqrt(m2 / static_cast<double>(opts.samples - 1) / static_cast<double>(opts.samples)) : 0;
  return r;
}

}  // namespace normlab::autograd
