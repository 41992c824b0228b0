// Hessian-vector and Jacobian-vector products, the top eigenvalue and the Hutchinson trace, on
// functions whose Hessian is known in closed form (quadratics, a linear model with softmax
// cross-entropy) and on a small MLP against the Hessian built column by column from central
// differences of float64 gradients; power iteration and Hutchinson against the spectrum (Jacobi
// rotations) and trace of a small MLP's Hessian assembled from its columns.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::expect_error;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// A = Q diag(lambda) Q^T (5 x 5, symmetric) with Q the Householder reflection of a fixed vector.
Tensor symmetric_matrix(const std::vector<double>& lambda) {
  const int64_t n = static_cast<int64_t>(lambda.size());
  std::vector<double> u(n);
  double norm2 = 0;
  for (int64_t i = 0; i < n; ++i) u[i] = 1.0 + 0.37 * i * i - 0.5 * i, norm2 += u[i] * u[i];
  std::vector<double> a(n * n, 0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t k = 0; k < n; ++k) {
        const double qik = (i == k) - 2 * u[i] * u[k] / norm2, qjk = (j == k) - 2 * u[j] * u[k] / norm2;
        a[i * n + j] += qik * lambda[k] * qjk;
      }
  return tensor(a, {n, n}, DType::Float64);
}

// f(x) = 1/2 x^T A x + b^T x.
Tensor quadratic(const Tensor& a, const Tensor& b, const Tensor& x) {
  const Tensor col = reshape(x, {-1, 1});
  return add(mul(sum(mul(col, matmul(a, col))), 0.5), sum(mul(b, x)));
}


// The eigenvalues of a symmetric n x n matrix (row-major) by cyclic Jacobi rotations: each
// rotation zeroes one off-diagonal pair; sweeps until the off-diagonal mass is below 1e-26.
std::vector<double> jacobi_eigenvalues(std::vector<double> a, int64_t n) {
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) off += a[p * n + q] * a[p * n + q];
    if (off < 1e-26) break;
    for (int64_t p = 0; p < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        if (a[p * n + q] == 0) continue;
        // theta = (a_qq - a_pp) / (2 a_pq); t = tan of the rotation angle, the smaller root.
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * a[p * n + q]);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int64_t k = 0; k < n; ++k) {  // columns p, q of A J
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq, a[k * n + q] = s * akp + c * akq;
        }
        for (int64_t k = 0; k < n; ++k) {  // rows p, q of J^T (A J)
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk, a[q * n + k] = s * apk + c * aqk;
        }
      }
  }
  std::vector<double> d(n);
  for (int64_t i = 0; i < n; ++i) d[i] = a[i * n + i];
  return d;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(curvature)

BOOST_AUTO_TEST_CASE(hvp_of_a_quadratic_is_a_times_v) {
  const Tensor a = symmetric_matrix({5, 2, 1, -0.5, 0.1}), b = random_input({5}, 1).detach();
  const Tensor x = random_input({5}, 2), v = random_input({5}, 3).detach();
  const Tensor hv = hvp([&](const In& p) { return quadratic(a, b, p[0]); }, {x}, {v})[0];
  for (int64_t i = 0; i < 5; ++i) {
    double want = 0;
    for (int64_t j = 0; j < 5; ++j) want += a.at({i, j}) * v.flat(j);
    BOOST_TEST(std::fabs(hv.flat(i) - want) < 1e-13);
  }
  BOOST_TEST(!x.grad().defined());
  // Two parameter tensors with a cross term: f = x^T B y + sum(x^2): H = [[2I, B], [B^T, 0]].
  const Tensor y = random_input({3}, 4), bm = random_input({5, 3}, 5).detach();
  const Tensor vx = random_input({5}, 6).detach(), vy = random_input({3}, 7).detach();
  const std::vector<Tensor> h2 = hvp([&](const In& p) {
    return add(sum(mul(reshape(p[0], {5, 1}), matmul(bm, reshape(p[1], {3, 1})))), sum(mul(p[0], p[0])));
  }, {x, y}, {vx, vy});
  for (int64_t i = 0; i < 5; ++i) {
    double want = 2 * vx.flat(i);
    for (int64_t j = 0; j < 3; ++j) want += bm.at({i, j}) * vy.flat(j);
    BOOST_TEST(std::fabs(h2[0].flat(i) - want) < 1e-13);
  }
  for (int64_t j = 0; j < 3; ++j) {
    double want = 0;
    for (int64_t i = 0; i < 5; ++i) want += bm.at({i, j}) * vx.flat(i);
    BOOST_TEST(std::fabs(h2[1].flat(j) - want) < 1e-13);
  }
}

BOOST_AUTO_TEST_CASE(hvp_of_softmax_cross_entropy_of_a_linear_model) {
  // loss(W) = mean_n CE(W x_n, t_n), W (C, D): for V (C, D),
  //   (H V)_cd = 1/N sum_n [(diag(p_n) - p_n p_n^T) V x_n]_c x_nd.
  const int64_t N = 6, C = 4, D = 3;
  const Tensor x = random_input({N, D}, 10, -2, 2).detach(), w = random_input({C, D}, 11);
  const std::vector<int64_t> t{0, 3, 1, 2, 2, 0};
  const Tensor v = random_input({C, D}, 12).detach();
  for (bool fused : {true, false}) {
    BOOST_TEST_CONTEXT((fused ? "cross_entropy" : "nll_loss of log_softmax")) {
      const Tensor hv = hvp([&](const In& p) {
        const Tensor logits = linear(x, p[0]);
        return fused ? cross_entropy(logits, t) : nll_loss(log_softmax(logits, 1), t);
      }, {w}, {v})[0];
      std::vector<double> want(C * D, 0);
      for (int64_t n = 0; n < N; ++n) {
        std::vector<double> z(C), p(C), vx(C, 0);
        double m = -1e300, s = 0;
        for (int64_t c = 0; c < C; ++c) {
          for (int64_t d = 0; d < D; ++d) z[c] += w.at({c, d}) * x.at({n, d}), vx[c] += v.at({c, d}) * x.at({n, d});
          m = std::max(m, z[c]);
        }
        for (int64_t c = 0; c < C; ++c) s += std::exp(z[c] - m);
        double pvx = 0;
        for (int64_t c = 0; c < C; ++c) p[c] = std::exp(z[c] - m) / s, pvx += p[c] * vx[c];
        for (int64_t c = 0; c < C; ++c)
          for (int64_t d = 0; d < D; ++d) want[c * D + d] += (p[c] * vx[c] - p[c] * pvx) * x.at({n, d}) / N;
      }
      for (int64_t k = 0; k < C * D; ++k) BOOST_TEST(std::fabs(hv.flat(k) - want[k]) < 1e-14);
    }
  }
}

BOOST_AUTO_TEST_CASE(hvp_of_an_mlp_matches_the_hessian_from_differences_of_gradients) {
  // A tanh MLP with a softmax cross-entropy: each column H e_k from hvp against
  // (grad(theta + h e_k) - grad(theta - h e_k)) / 2h, float64 gradients, h = 1e-5.
  const Tensor x = random_input({5, 3}, 20).detach();
  const Tensor w1 = random_input({4, 3}, 21), b1 = random_input({4}, 22), w2 = random_input({3, 4}, 23);
  const std::vector<Tensor> params{w1, b1, w2};
  const auto loss = [&](const In& p) {
    return cross_entropy(linear(tanh(linear(x, p[0], p[1])), p[2]), {0, 2, 1, 1, 0});
  };
  const HessianOperator h(loss(params), params);
  const double step = 1e-5;
  for (size_t i = 0; i < params.size(); ++i) {
    for (int64_t k = 0; k < params[i].numel(); ++k) {
      std::vector<Tensor> e;
      for (const Tensor& p : params) e.push_back(zeros(p.shape(), DType::Float64));
      e[i].set_flat(k, 1.0);
      const std::vector<Tensor> col = h.apply(e);
      const double orig = params[i].flat(k);
      params[i].set_flat(k, orig + step);
      const std::vector<Tensor> gp = grad({loss(params)}, params);
      params[i].set_flat(k, orig - step);
      const std::vector<Tensor> gm = grad({loss(params)}, params);
      params[i].set_flat(k, orig);
      for (size_t j = 0; j < params.size(); ++j)
        for (int64_t q = 0; q < params[j].numel(); ++q) {
          const double fd = (gp[j].flat(q) - gm[j].flat(q)) / (2 * step);
          BOOST_TEST(std::fabs(col[j].flat(q) - fd) < 1e-8, "H[" << i << ":" << k << ", " << j << ":" << q << "] "
                                                                  << col[j].flat(q) << " vs " << fd);
        }
    }
  }
}

BOOST_AUTO_TEST_CASE(top_eigenvalue_and_trace_of_a_known_spectrum) {
  const std::vector<double> lambda{5, 2, 1, -0.5, 0.1};
  const Tensor a = symmetric_matrix(lambda), b = zeros({5}, DType::Float64), x = random_input({5}, 30);
  const HessianOperator h(quadratic(a, b, x), {x});
  PowerIterationOptions po;
  po.tol = 1e-10;
  po.max_iters = 500;
  const EigenResult e = top_eigenvalue(h, po);
  BOOST_TEST(e.converged);
  BOOST_TEST(std::fabs(e.eigenvalue - 5.0) < 1e-8);
  // The eigenvector: A v = 5 v.
  const std::vector<Tensor> av = h.apply(e.eigenvector);
  for (int64_t i = 0; i < 5; ++i) BOOST_TEST(std::fabs(av[0].flat(i) - 5 * e.eigenvector[0].flat(i)) < 1e-4);
  // max_iters stops it, reported as not converged.
  po.max_iters = 2;
  const EigenResult short_run = top_eigenvalue(h, po);
  BOOST_TEST(short_run.iterations == 2);
  BOOST_TEST(!short_run.converged);
  // Hutchinson: tr A = 7.6; the estimate within 4 standard errors, and exact for a diagonal A
  // (v^T D v = tr D for every Rademacher v).
  TraceOptions to;
  to.samples = 200;
  const TraceResult tr = hessian_trace(h, to);
  BOOST_TEST(tr.samples == 200);
  BOOST_TEST(tr.standard_error > 0);
  BOOST_TEST(std::fabs(tr.trace - 7.6) < 4 * tr.standard_error);
  const Tensor diag = tensor({5, 0, 0, 0, 2, 0, 0, 0, -1}, {3, 3}, DType::Float64);
  const Tensor x3 = random_input({3}, 31);
  const TraceResult exact = hessian_trace(HessianOperator(quadratic(diag, zeros({3}, DType::Float64), x3), {x3}), to);
  BOOST_TEST(std::fabs(exact.trace - 6.0) < 1e-12);
  BOOST_TEST(exact.standard_error < 1e-12);
}

BOOST_AUTO_TEST_CASE(power_iteration_and_hutchinson_on_a_small_models_hessian) {
  // The tanh MLP's Hessian (28 x 28) assembled column by column (H e_k) in float64, its spectrum by
  // Jacobi rotations: power iteration finds the eigenvalue of largest magnitude with its sign, and
  // Hutchinson's estimate approaches the exact trace as the draws grow.
  const Tensor x = random_input({6, 3}, 40).detach();
  const Tensor w1 = random_input({4, 3}, 41), b1 = random_input({4}, 42), w2 = random_input({3, 4}, 43);
  const std::vector<Tensor> params{w1, b1, w2};
  const Tensor loss = cross_entropy(linear(tanh(linear(x, params[0], params[1])), params[2]), {0, 2, 1, 1, 0, 2});
  const HessianOperator h(loss, params);
  int64_t n = 0;
  for (const Tensor& p : params) n += p.numel();
  BOOST_REQUIRE(n == 28);
  std::vector<double> dense(n * n);
  int64_t col = 0;
  for (size_t i = 0; i < params.size(); ++i)
    for (int64_t k = 0; k < params[i].numel(); ++k, ++col) {
      std::vector<Tensor> e;
      for (const Tensor& p : params) e.push_back(zeros(p.shape(), DType::Float64));
      e[i].set_flat(k, 1.0);
      const std::vector<Tensor> hc = h.apply(e);
      int64_t row = 0;
      for (const Tensor& c : hc)
        for (int64_t q = 0; q < c.numel(); ++q, ++row) dense[row * n + col] = c.flat(q);
    }
  double exact_trace = 0, asym = 0;
  for (int64_t i = 0; i < n; ++i) {
    exact_trace += dense[i * n + i];
    for (int64_t j = 0; j < n; ++j) asym = std::max(asym, std::fabs(dense[i * n + j] - dense[j * n + i]));
  }
  BOOST_TEST(asym < 1e-12);  // a Hessian is symmetric
  const std::vector<double> spectrum = jacobi_eigenvalues(dense, n);
  double top = 0, second = 0, sum = 0;
  for (const double l : spectrum) {
    sum += l;
    if (std::fabs(l) > std::fabs(top)) second = top, top = l;
    else if (std::fabs(l) > std::fabs(second)) second = l;
  }
  BOOST_TEST(std::fabs(sum - exact_trace) < 1e-10);  // Jacobi keeps the trace
  BOOST_REQUIRE(std::fabs(second) < 0.9 * std::fabs(top));  // a gap power iteration can use
  PowerIterationOptions po;
  po.tol = 1e-12;
  po.max_iters = 2000;
  const EigenResult e = top_eigenvalue(h, po);
  BOOST_TEST(e.converged);
  BOOST_TEST(std::fabs(e.eigenvalue - top) < 1e-6 * std::fabs(top), e.eigenvalue << " vs " << top);
  // Hutchinson: the error shrinks with the draws and stays within 4 standard errors.
  double previous_se = 1e300;
  for (const int64_t samples : {100, 1600}) {
    TraceOptions to;
    to.samples = samples;
    to.seed = 7;
    const TraceResult tr = hessian_trace(h, to);
    BOOST_TEST(std::fabs(tr.trace - exact_trace) < 4 * tr.standard_error,
               samples << " draws: " << tr.trace << " vs " << exact_trace << " (se " << tr.standard_error << ")");
    BOOST_TEST(tr.standard_error < previous_se);
    previous_se = tr.standard_error;
  }
}

BOOST_AUTO_TEST_CASE(jvp_by_the_double_vjp_trick) {
  // f(x, y) = (x0^2 y0, exp(x1) + y0 x0, x0 x1 y0): J u in closed form.
  const Tensor x = random_input({2}, 40), y = random_input({1}, 41);
  const Tensor ux = random_input({2}, 42).detach(), uy = random_input({1}, 43).detach();
  const JvpResult r = jvp([](const In& p) {
    const Tensor x0 = narrow(p[0], 0, 1), x1 = narrow(p[0], 1, 1), y0 = p[1];
    return cat({mul(mul(x0, x0), y0), add(exp(x1), mul(y0, x0)), mul(mul(x0, x1), y0)}, 0);
  }, {x, y}, {ux, uy});
  const double a = x.flat(0), b = x.flat(1), c = y.flat(0), da = ux.flat(0), db = ux.flat(1), dc = uy.flat(0);
  const double want[] = {2 * a * c * da + a * a * dc, std::exp(b) * db + c * da + a * dc,
                         b * c * da + a * c * db + a * b * dc};
  for (int64_t i = 0; i < 3; ++i) BOOST_TEST(std::fabs(r.jvp.flat(i) - want[i]) < 1e-14);
  BOOST_TEST(std::fabs(r.value.flat(0) - a * a * c) < 1e-15);
  // A linear function: J u = A u.
  const Tensor m = random_input({3, 2}, 44).detach();
  const JvpResult lin = jvp([&](const In& p) { return matmul(m, reshape(p[0], {2, 1})); }, {x}, {ux});
  for (int64_t i = 0; i < 3; ++i)
    BOOST_TEST(std::fabs(lin.jvp.flat(i) - (m.at({i, 0}) * da + m.at({i, 1}) * db)) < 1e-15);
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_named) {
  const Tensor x = random_input({3}, 50);
  const auto f = [](const In& p) { return sum(mul(p[0], p[0])); };
  expect_error([&] { hvp(f, {x}, {zeros({4}, DType::Float64)}); }, {"hvp", "v[0]", "[3]", "[4]"});
  expect_error([&] { hvp(f, {x}, {}); }, {"hvp", "expected 1 tensors in v"});
  expect_error([&] { hvp(f, {x.detach()}, {x.detach()}); }, {"hvp", "input 0", "requires grad"});
  expect_error([&] { HessianOperator(mul(x, 2.0), {x}); }, {"one-element", "[3]"});
  PowerIterationOptions po;
  po.max_iters = 0;
  expect_error([&] { top_eigenvalue(HessianOperator(f({x}), {x}), po); }, {"max_iters", "at least 1"});
}

BOOST_AUTO_TEST_SUITE_END()
