// Second-order products through create_graph backward passes: Hessian-vector products (Pearlmutter's
// trick), Jacobian-vector products (the double-vjp trick), the Hessian's top eigenvalue by power
// iteration and its trace by Hutchinson's estimator, as PyHessian computes them.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/generator.h"
#include "autograd/tensor.h"

namespace normlab::autograd {

/// A scalar function of some tensors (a loss of a model's parameters: it may use the tensors it is
/// given, or a model holding those very tensors).
using ScalarFn = std::function<Tensor(const std::vector<Tensor>&)>;
/// A tensor-valued function of some tensors.
using TensorFn = std::function<Tensor(const std::vector<Tensor>&)>;

/// H v for the Hessian H of f at params (each of which must require grad), v one tensor per
/// parameter of its shape: with g = grad(f(params), params, create_graph), H v = grad(g, params, v)
/// (Pearlmutter 1994). One forward and two backward passes; exact, no finite differences.
std::vector<Tensor> hvp(const ScalarFn& f, const std::vector<Tensor>& params, const std::vector<Tensor>& v);

/// f(inputs) and J u, its Jacobian times u (one tensor per input, of its shape), by the double-vjp
/// trick (no forward mode here): with w a dummy gradient of f's output, grad(f, inputs, w,
/// create_graph) = J^T w is linear in w, and its gradient with respect to w along u is J u.
struct JvpResult {
  Tensor value;  ///< f(inputs)
  Tensor jvp;    ///< J u, of the output's shape
};
JvpResult jvp(const TensorFn& f, const std::vector<Tensor>& inputs, const std::vector<Tensor>& u);

/// The Hessian of one scalar (a loss already computed) with respect to params, kept as its first
/// derivatives with their graph, so that many products H v cost one backward each.
class HessianOperator {
 public:
  /// loss: a one-element tensor computed from params (which must require grad).
  HessianOperator(const Tensor& loss, std::vector<Tensor> params);
  /// H v, one tensor per parameter.
  std::vector<Tensor> apply(const std::vector<Tensor>& v) const;
  /// The first derivatives d loss / d params (with their graph).
  const std::vector<Tensor>& gradient() const { return grads_; }
  const std::vector<Tensor>& params() const { return params_; }  ///< The parameters.

 private:
  std::vector<Tensor> params_, grads_;
};

/// How power iteration stops: when the estimate's relative change |l_k - l_{k-1}| / (|l_{k-1}| +
/// 1e-6) falls below tol (PyHessian's rule), or after max_iters products.
struct PowerIterationOptions {
  int64_t max_iters = 100;  ///< most Hessian-vector products
  double tol = 1e-3;        ///< relative change of the estimate that stops it
  uint64_t seed = 0;        ///< the random start vector's seed (standard normal, normalized)
};
/// The eigenvalue of the largest magnitude, its unit eigenvector, and how the iteration ended.
struct EigenResult {
  double eigenvalue = 0;           ///< the Rayleigh quotient v^T H v of the last unit vector
  std::vector<Tensor> eigenvector;  ///< one tensor per parameter; norm 1 over all of them
  int64_t iterations = 0;          ///< Hessian-vector products made
  bool converged = false;          ///< the tol rule stopped it (not max_iters)
};
/// Power iteration on H: v <- H v / |H v|, the estimate v^T H v.
EigenResult top_eigenvalue(const HessianOperator& h, const PowerIterationOptions& opts = {});

/// Hutchinson's estimate of the trace: tr H = E[v^T H v] for v of independent Rademacher (+-1)
/// entries, the mean over `samples` draws, with its standard error.
struct TraceOptions {
  int64_t samples = 100;  ///< draws of v
  uint64_t seed = 0;      ///< their seed
};
struct TraceResult {
  double trace = 0;           ///< the mean of v^T H v
  double standard_error = 0;  ///< its standard error (sample standard deviation / sqrt(samples))
  int64_t samples = 0;        ///< draws made
};
TraceResult hessian_trace(const HessianOperator& h, const TraceOptions& opts = {});

}  // namespace normlab::autograd
