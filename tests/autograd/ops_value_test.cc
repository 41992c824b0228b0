// Op values against hand-computed numbers (and PyTorch 1.13's printed reprs): broadcasting,
// reductions, softmax and losses, matmul, activations, empty tensors, and Tensor::str().
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::check_tensor;

namespace {

Tensor leaf(Tensor t) {
  t.requires_grad_();
  return t;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ops_value)

BOOST_AUTO_TEST_CASE(broadcasting_column_plus_row) {
  // (3, 1) + (1, 4): out[i][j] = a[i] + b[j]
  const Tensor out = add(tensor({1, 2, 3}, {3, 1}), tensor({10, 20, 30, 40}, {1, 4}));
  BOOST_TEST((out.shape() == Shape{3, 4}));
  check_tensor(out, {11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33, 43}, 0, 0);
  check_tensor(sub(tensor({1, 2, 3}, {3, 1}), tensor({10, 20}, {1, 2})), {-9, -19, -8, -18, -7, -17}, 0, 0);
  check_tensor(div(tensor({1, 2}, {1, 2}), tensor({2, 4}, {2, 1})), {0.5, 1, 0.25, 0.5}, 0, 0);
}

BOOST_AUTO_TEST_CASE(broadcasting_3d_times_vector) {
  // (2, 3, 4) * (4,): element (i, j, k) = (12 i + 4 j + k) * w[k]
  const std::vector<double> w = {1, -2, 0.5, 3};
  const Tensor out = mul(reshape(arange(24), {2, 3, 4}), tensor(w));
  BOOST_TEST((out.shape() == Shape{2, 3, 4}));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) BOOST_TEST(out.at({i, j, k}) == (12 * i + 4 * j + k) * w[k]);
  // (2, 1, 3) * (4, 1): out (2, 4, 3)
  const Tensor o2 = mul(tensor({1, 2, 3, 4, 5, 6}, {2, 1, 3}), tensor({1, 10, 100, 1000}, {4, 1}));
  BOOST_TEST((o2.shape() == Shape{2, 4, 3}));
  BOOST_TEST(o2.at({1, 2, 0}) == 400);
  BOOST_TEST(o2.at({0, 3, 2}) == 3000);
}

BOOST_AUTO_TEST_CASE(scalars_with_tensors) {
  const Tensor x = tensor({1, 2, 4});
  check_tensor(add(scalar(0.5), x), {1.5, 2.5, 4.5}, 0, 0);
  check_tensor(sub(scalar(1), x), {0, -1, -3}, 0, 0);
  check_tensor(div(x, scalar(4)), {0.25, 0.5, 1}, 0, 0);
  check_tensor(x + 1.0, {2, 3, 5}, 0, 0);
  check_tensor(x - 1.0, {0, 1, 3}, 0, 0);
  check_tensor(x * 3.0, {3, 6, 12}, 0, 0);
  check_tensor(x / 2.0, {0.5, 1, 2}, 0, 0);
  check_tensor(8.0 / x, {8, 4, 2}, 0, 0);
  check_tensor(1.0 - x, {0, -1, -3}, 0, 0);
  check_tensor(-x, {-1, -2, -4}, 0, 0);
  const Tensor s = mul(scalar(3), scalar(4));
  BOOST_TEST(s.dim() == 0);
  BOOST_TEST(s.item() == 12);
}

BOOST_AUTO_TEST_CASE(unary_values) {
  const double e = std::exp(1.0);
  check_tensor(exp(tensor({0, 1, -1}, DType::Float64)), {1, e, 1 / e}, 1e-15, 0);
  check_tensor(log(tensor({1, e, 0.5}, DType::Float64)), {0, 1, -std::log(2.0)}, 1e-15, 1e-16);
  check_tensor(sqrt(tensor({4, 2.25, 0})), {2, 1.5, 0}, 0, 0);
  check_tensor(relu(tensor({-1, 0, 2.5})), {0, 0, 2.5}, 0, 0);
  check_tensor(sigmoid(tensor({0, 2}, DType::Float64)), {0.5, 1 / (1 + std::exp(-2.0))}, 1e-15, 0);
  check_tensor(tanh(tensor({0.5, -3}, DType::Float64)), {0.46211715726000974, -0.99505475368673045}, 1e-14, 0);
  check_tensor(square(tensor({-3, 0.5})), {9, 0.25}, 0, 0);
  check_tensor(pow(tensor({4, 9}), 0.5), {2, 3}, 1e-7, 0);
  check_tensor(pow(tensor({2, -4}), -1), {0.5, -0.25}, 0, 0);
  check_tensor(pow(tensor({-2, 3}), 3), {-8, 27}, 0, 0);
  check_tensor(pow(tensor({0, -5, 2}), 0), {1, 1, 1}, 0, 0);  // 0^0 = 1, as torch.pow
  check_tensor(pow(tensor({2, 0}, DType::Float64), 1.7), {std::pow(2.0, 1.7), 0}, 1e-14, 0);
}

BOOST_AUTO_TEST_CASE(gelu_tanh_form_at_points) {
  const std::vector<double> xs = {-3, -1, -0.5, 0, 0.5, 1, 2, 3};
  std::vector<double> want, dwant;
  const double c = std::sqrt(2 / M_PI);
  for (double x : xs) {
    const double t = std::tanh(c * (x + 0.044715 * x * x * x));
    want.push_back(0.5 * x * (1 + t));
    dwant.push_back(0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x));
  }
  Tensor x64 = leaf(tensor(xs, DType::Float64));
  const Tensor y = gelu(x64);
  check_tensor(y, want, 1e-13, 1e-15);
  sum(y).backward();
  check_tensor(x64.grad(), dwant, 1e-13, 1e-15);
  check_tensor(gelu(tensor(xs)), want, 1e-6, 1e-7);
  // PyTorch 1.13, F.gelu(torch.tensor([1., -1.]), approximate='tanh') -> [0.8412, -0.1588]
  check_tensor(gelu(tensor({1, -1})), {0.841192, -0.158808}, 1e-5, 0);
}

BOOST_AUTO_TEST_CASE(activation_gradients_at_special_points) {
  // relu'(0) = 0 as in PyTorch; pow(x, 0)' = 0 even at 0; sqrt'(0) = inf.
  Tensor x = leaf(tensor({-1, 0, 2}));
  sum(relu(x)).backward();
  check_tensor(x.grad(), {0, 0, 1}, 0, 0);
  Tensor z = leaf(tensor({0, 3}));
  sum(pow(z, 0)).backward();
  check_tensor(z.grad(), {0, 0}, 0, 0);
  Tensor q = leaf(tensor({0, 4}));
  sum(sqrt(q)).backward();
  BOOST_TEST(std::isinf(q.grad().flat(0)));
  BOOST_TEST(q.grad().flat(1) == 0.25);
}

BOOST_AUTO_TEST_CASE(sum_mean_max_values) {
  const Tensor x = tensor({1, 5, 3, 4, 2, 6}, {2, 3});
  check_tensor(sum(x), {21}, 0, 0);
  check_tensor(sum(x, {0}), {5, 7, 9}, 0, 0);
  check_tensor(sum(x, {1}), {9, 12}, 0, 0);
  check_tensor(sum(x, {-1}, true), {9, 12}, 0, 0);
  BOOST_TEST((sum(x, {-1}, true).shape() == Shape{2, 1}));
  BOOST_TEST((sum(x, {0, 1}, true).shape() == Shape{1, 1}));
  BOOST_TEST((sum(x, {}, true).shape() == Shape{1, 1}));
  BOOST_TEST(sum(x).dim() == 0);
  check_tensor(mean(x), {3.5}, 1e-7, 0);
  check_tensor(mean(x, {0}), {2.5, 3.5, 4.5}, 1e-7, 0);
  check_tensor(max(x), {6}, 0, 0);
  check_tensor(max(x, {0}), {4, 5, 6}, 0, 0);
  check_tensor(max(x, {1}, true), {5, 6}, 0, 0);
  const Tensor y = reshape(arange(24), {2, 3, 4});
  // sum over {0, 2}: for each j, sum over i, k of 12 i + 4 j + k = 2*(0+1+2+3) + 4*(12) + 8*4j... by hand:
  // sum_{i,k} (12 i + 4 j + k) = 4*12 + 8*4j + 2*6 = 60 + 32 j
  check_tensor(sum(y, {0, 2}), {60, 92, 124}, 0, 0);
  check_tensor(max(y, {0, 2}), {15, 19, 23}, 0, 0);
  check_tensor(sum(y, {-1, 0}, true), {60, 92, 124}, 0, 0);
  BOOST_TEST((sum(y, {-1, 0}, true).shape() == Shape{1, 3, 1}));
}

BOOST_AUTO_TEST_CASE(reductions_of_rank0) {
  const Tensor s = scalar(2.5);
  for (bool keep : {false, true}) {
    BOOST_TEST(sum(s, {0}, keep).dim() == 0);
    BOOST_TEST(sum(s, {-1}, keep).item() == 2.5);
    BOOST_TEST(mean(s, {0}, keep).item() == 2.5);
    BOOST_TEST(max(s, {0}, keep).item() == 2.5);
  }
  BOOST_TEST(sum(s).item() == 2.5);
  Tensor l = leaf(scalar(2.0));
  sum(l, {0}, true).backward();
  BOOST_TEST(l.grad().item() == 1.0);
}

BOOST_AUTO_TEST_CASE(var_biased_and_unbiased) {
  // [1, 2, 3, 4]: mean 2.5, squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5.
  const Tensor v = tensor({1, 2, 3, 4});
  check_tensor(var(v, {}, false), {1.25}, 1e-7, 0);
  check_tensor(var(v), {5.0 / 3}, 1e-7, 0);
  check_tensor(var(v, {0}), {5.0 / 3}, 1e-7, 0);
  // [[1, 2, 3], [4, 6, 8]]: over dim 1, row means 2 and 6, sums of squares 2 and 8;
  // over dim 0, pairs (1, 4), (2, 6), (3, 8): sums of squares 4.5, 8, 12.5.
  const Tensor x = tensor({1, 2, 3, 4, 6, 8}, {2, 3});
  check_tensor(var(x, {1}, false), {2.0 / 3, 8.0 / 3}, 1e-6, 0);
  check_tensor(var(x, {1}, true), {1, 4}, 1e-6, 0);
  check_tensor(var(x, {0}, false), {2.25, 4, 6.25}, 1e-6, 0);
  check_tensor(var(x, {0}, true, true), {4.5, 8, 12.5}, 1e-6, 0);
  BOOST_TEST((var(x, {0}, true, true).shape() == Shape{1, 3}));
  // One value: the unbiased variance divides by 0 (nan, as PyTorch), the biased one is 0.
  BOOST_TEST(std::isnan(var(tensor({3}), {0}, true).item()));
  BOOST_TEST(var(tensor({3}), {0}, false).item() == 0);
}

BOOST_AUTO_TEST_CASE(var_with_a_large_mean_in_float32) {
  // Seed 003's pitfall: E[x^2] - E[x]^2 in float32 is badly wrong for values near 1e4. Here
  // x = 1e4 +- 1 exactly, so the biased variance is exactly 1.
  std::vector<double> v(1024);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1e4 + (i % 2 ? 1 : -1);
  check_tensor(var(reshape(tensor(v), {2, 512}), {1}, false), {1, 1}, 1e-4, 0);
}

BOOST_AUTO_TEST_CASE(max_gradient_goes_to_the_maximum_split_between_ties) {
  // torch.amax: ties share the gradient evenly.
  Tensor x = leaf(tensor({1, 3, 3, 2, 5, 0}, {2, 3}));
  sum(mul(max(x, {1}), tensor({1, 10}))).backward();
  check_tensor(x.grad(), {0, 0.5, 0.5, 0, 10, 0}, 0, 0);
  Tensor y = leaf(tensor({4, 4, 4, 4}));
  max(y).backward();
  check_tensor(y.grad(), {0.25, 0.25, 0.25, 0.25}, 0, 0);
}

BOOST_AUTO_TEST_CASE(softmax_and_log_softmax) {
  // softmax([1, 2, 3]) = e^i / (e + e^2 + e^3)
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const std::vector<double> sm = {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z};
  check_tensor(softmax(tensor({1, 2, 3}, DType::Float64), 0), sm, 1e-14, 0);
  check_tensor(log_softmax(tensor({1, 2, 3}, DType::Float64), 0),
               {std::log(sm[0]), std::log(sm[1]), std::log(sm[2])}, 1e-14, 0);
  // Hand values: [0.09003057, 0.24472847, 0.66524096]
  check_tensor(softmax(tensor({1, 2, 3}), -1), {0.09003057, 0.24472847, 0.66524096}, 1e-6, 0);
  // Over dim 0 of a (2, 2): columns [0, ln 3] -> [1/4, 3/4].
  check_tensor(softmax(tensor({0, 5, std::log(3.0), 5}, {2, 2}), 0), {0.25, 0.5, 0.75, 0.5}, 1e-6, 0);
  // Large logits do not overflow (shifted by the max).
  check_tensor(softmax(tensor({1000, 1000}), 0), {0.5, 0.5}, 0, 0);
  check_tensor(log_softmax(tensor({-1000, 0}), 0), {-1000, 0}, 1e-6, 0);
}

BOOST_AUTO_TEST_CASE(cross_entropy_hand_worked) {
  // logits [[1, 2, 3], [1, 1, 1]], targets [2, 0]:
  // row 0: -log(e^3 / (e + e^2 + e^3)) = log(1 + e^-1 + e^-2); row 1: log 3.
  const double l0 = std::log(1 + std::exp(-1.0) + std::exp(-2.0)), l1 = std::log(3.0);
  Tensor logits = leaf(tensor({1, 2, 3, 1, 1, 1}, {2, 3}, DType::Float64));
  const Tensor loss = cross_entropy(logits, {2, 0});
  BOOST_TEST(loss.dim() == 0);
  BOOST_TEST(loss.item() == (l0 + l1) / 2, boost::test_tools::tolerance(1e-14));
  BOOST_TEST(loss.item() == 0.7531091266, boost::test_tools::tolerance(1e-9));
  loss.backward();
  // d/dlogits = (softmax - onehot) / N
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  check_tensor(logits.grad(), {std::exp(1.0) / z / 2, std::exp(2.0) / z / 2, (std::exp(3.0) / z - 1) / 2,
                               (1.0 / 3 - 1) / 2, 1.0 / 6, 1.0 / 6}, 1e-13, 1e-15);
}

// A NaN or +inf logit makes the loss NaN and its row's gradient NaN (as in PyTorch), leaving the
// other rows alone; a -inf logit that is not the target drops out of the softmax.
BOOST_AUTO_TEST_CASE(cross_entropy_nan_and_inf_logits) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (DType dt : {DType::Float32, DType::Float64}) {
    BOOST_TEST_CONTEXT(dtype_name(dt)) {
      for (double bad : {nan, inf}) {
        Tensor logits = leaf(tensor({1, bad, 3, 1, 1, 1}, {2, 3}, dt));
        const Tensor loss = cross_entropy(logits, {2, 0});
        BOOST_TEST(std::isnan(loss.item()));
        loss.backward();
        const auto g = logits.grad().to_vector();
        for (int j = 0; j < 3; ++j) BOOST_TEST(std::isnan(g[j]));
        for (int j = 3; j < 6; ++j) BOOST_TEST(std::isfinite(g[j]));
      }
      // Row 0 [1, -inf, 3] is row [1, 3]: -log(e^3 / (e + e^3)) = log(1 + e^-2); row 1: log 3.
      Tensor logits = leaf(tensor({1, -inf, 3, 1, 1, 1}, {2, 3}, dt));
      const Tensor loss = cross_entropy(logits, {2, 0});
      BOOST_TEST(loss.item() == (std::log(1 + std::exp(-2.0)) + std::log(3.0)) / 2, boost::test_tools::tolerance(1e-6));
      loss.backward();
      BOOST_TEST(logits.grad().to_vector()[1] == 0.0);
    }
  }
}

BOOST_AUTO_TEST_CASE(nll_and_mse_loss) {
  Tensor logp = leaf(tensor({-1, -2, -3, -4}, {2, 2}));
  const Tensor nll = nll_loss(logp, {1, 0});
  BOOST_TEST(nll.item() == 2.5);
  nll.backward();
  check_tensor(logp.grad(), {0, -0.5, -0.5, 0}, 0, 0);
  Tensor a = leaf(tensor({1, 2, 3}, DType::Float64));
  const Tensor mse = mse_loss(a, tensor({0, 2, 5}, DType::Float64));
  BOOST_TEST(mse.item() == 5.0 / 3, boost::test_tools::tolerance(1e-15));
  mse.backward();
  check_tensor(a.grad(), {2.0 / 3, 0, -4.0 / 3}, 1e-15, 0);  // 2 (a - t) / n
}

BOOST_AUTO_TEST_CASE(matmul_small_integer_matrices) {
  check_tensor(matmul(tensor({1, 2, 3, 4}, {2, 2}), tensor({5, 6, 7, 8}, {2, 2})), {19, 22, 43, 50}, 0, 0);
  const Tensor c = matmul(tensor({1, 2, 3, 4, 5, 6}, {2, 3}), tensor({7, 8, 9, 10, 11, 12}, {3, 2}));
  BOOST_TEST((c.shape() == Shape{2, 2}));
  check_tensor(c, {58, 64, 139, 154}, 0, 0);
  // Batched: batch 0 times the identity, batch 1 times [[0, 1], [1, 0]] (swaps columns).
  const Tensor a = tensor({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  const Tensor b = tensor({1, 0, 0, 1, 0, 1, 1, 0}, {2, 2, 2});
  check_tensor(matmul(a, b), {1, 2, 3, 4, 6, 5, 8, 7}, 0, 0);
  // (2, 2, 2) @ (2, 1): each batch times [1, -1]^T; and (1, 2) @ (2, 2, 2) row [1, 1] times each batch.
  check_tensor(matmul(a, tensor({1, -1}, {2, 1})), {-1, -1, -1, -1}, 0, 0);
  check_tensor(matmul(tensor({1, 1}, {1, 2}), a), {4, 6, 12, 14}, 0, 0);
  // Gradients: d sum(A B) / dA = 1 B^T (row sums of B), d/dB = A^T 1 (column sums of A).
  Tensor A = leaf(tensor({1, 2, 3, 4, 5, 6}, {2, 3})), B = leaf(tensor({1, 2, 3, 4, 5, 6}, {3, 2}));
  sum(matmul(A, B)).backward();
  check_tensor(A.grad(), {3, 7, 11, 3, 7, 11}, 0, 0);
  check_tensor(B.grad(), {5, 5, 7, 7, 9, 9}, 0, 0);
}

BOOST_AUTO_TEST_CASE(linear_values) {
  // x [[1, 2]], W [[1, 0], [0, 1], [1, 1]], b [0.5, -1, 2] -> [1.5, 1, 5]
  const Tensor x = tensor({1, 2}, {1, 2}), w = tensor({1, 0, 0, 1, 1, 1}, {3, 2}), b = tensor({0.5, -1, 2});
  check_tensor(linear(x, w, b), {1.5, 1, 5}, 0, 0);
  check_tensor(linear(x, w), {1, 2, 3}, 0, 0);
  const Tensor y = linear(reshape(tensor({1, 2, 3, 4}), {2, 1, 2}), w, b);
  BOOST_TEST((y.shape() == Shape{2, 1, 3}));
  check_tensor(y, {1.5, 1, 5, 3.5, 3, 9}, 0, 0);
  check_tensor(linear(tensor({1, 2}), w, b), {1.5, 1, 5}, 0, 0);  // 1-D input
}

BOOST_AUTO_TEST_CASE(shape_op_values) {
  const Tensor x = reshape(arange(6), {2, 3});
  check_tensor(transpose(x, 0, 1), {0, 3, 1, 4, 2, 5}, 0, 0);
  const Tensor p = permute(reshape(arange(24), {2, 3, 4}), {2, 0, 1});
  BOOST_TEST((p.shape() == Shape{4, 2, 3}));
  BOOST_TEST(p.at({3, 1, 2}) == 12 * 1 + 4 * 2 + 3);
  // Every element of permutations that keep the last dim (rows copied whole) and that move it
  // (a strided row), against the index formula: x[i0, i1, i2, i3] = 60 i0 + 20 i1 + 5 i2 + i3.
  const Tensor x4 = reshape(arange(120), {2, 3, 4, 5});
  for (const std::vector<int64_t>& perm : std::vector<std::vector<int64_t>>{
           {1, 0, 2, 3}, {2, 0, 1, 3}, {0, 1, 3, 2}, {3, 2, 1, 0}, {0, 2, 1, 3}}) {
    const Tensor q = permute(x4, perm);
    const std::vector<int64_t> stride = {60, 20, 5, 1};
    std::vector<double> want;
    for (int64_t a = 0; a < q.size(0); ++a)
      for (int64_t b = 0; b < q.size(1); ++b)
        for (int64_t c = 0; c < q.size(2); ++c)
          for (int64_t d = 0; d < q.size(3); ++d)
            want.push_back(static_cast<double>(a * stride[perm[0]] + b * stride[perm[1]] + c * stride[perm[2]] +
                                               d * stride[perm[3]]));
    BOOST_TEST(q.to_vector() == want, boost::test_tools::per_element());
  }
  check_tensor(expand(tensor({1, 2}, {2, 1}), {2, 3}), {1, 1, 1, 2, 2, 2}, 0, 0);
  check_tensor(expand(tensor({1, 2}), {2, -1}), {1, 2, 1, 2}, 0, 0);
  check_tensor(expand(scalar(7), {2}), {7, 7}, 0, 0);
  check_tensor(narrow(reshape(arange(8), {4, 2}), 1, 2), {2, 3, 4, 5}, 0, 0);
  BOOST_TEST((unsqueeze(x, 0).shape() == Shape{1, 2, 3}));
  BOOST_TEST((unsqueeze(x, -1).shape() == Shape{2, 3, 1}));
  BOOST_TEST((unsqueeze(scalar(1), 0).shape() == Shape{1}));
  BOOST_TEST((squeeze(zeros({1, 2, 1})).shape() == Shape{2}));
  BOOST_TEST((squeeze(zeros({1, 2, 1}), 1).shape() == Shape{1, 2, 1}));  // size 2: unchanged
  BOOST_TEST((squeeze(zeros({1, 2, 1}), -1).shape() == Shape{1, 2}));
  BOOST_TEST((flatten(zeros({2, 3, 4}), 1).shape() == Shape{2, 12}));
  BOOST_TEST((flatten(scalar(1)).shape() == Shape{1}));
  BOOST_TEST((reshape(zeros({0, 3}), {-1, 3}).shape() == Shape{0, 3}));
  BOOST_TEST((transpose(scalar(1), 0, -1).dim() == 0));
  // Narrow backward: the gradient lands in the narrowed rows only.
  Tensor y = leaf(reshape(arange(8), {4, 2}));
  sum(mul(narrow(y, 1, 2), tensor({1, 2, 3, 4}, {2, 2}))).backward();
  check_tensor(y.grad(), {0, 0, 1, 2, 3, 4, 0, 0}, 0, 0);
  // Expand with -1 and new leading dims: the gradient sums over the expanded dims.
  Tensor c = leaf(tensor({1, 2}, {2, 1}));
  sum(expand(c, {3, -1, 4})).backward();
  check_tensor(c.grad(), {12, 12}, 0, 0);
}

BOOST_AUTO_TEST_CASE(empty_tensors) {
  // 0-element tensors go through every op without crashing, with PyTorch's shapes and values.
  const Tensor e = zeros({0, 3});
  BOOST_TEST(exp(e).numel() == 0);
  BOOST_TEST((add(e, ones({3})).shape() == Shape{0, 3}));
  check_tensor(sum(e, {0}), {0, 0, 0}, 0, 0);
  BOOST_TEST((sum(e, {1}).shape() == Shape{0}));
  BOOST_TEST(sum(e).item() == 0);
  BOOST_TEST(std::isnan(mean(e).item()));
  BOOST_TEST((max(e, {1}).shape() == Shape{0}));
  BOOST_TEST((softmax(e, 1).shape() == Shape{0, 3}));
  BOOST_TEST((softmax(zeros({2, 0}), 1).shape() == Shape{2, 0}));
  BOOST_TEST((log_softmax(zeros({2, 0}), 0).shape() == Shape{2, 0}));
  BOOST_TEST((permute(e, {1, 0}).shape() == Shape{3, 0}));
  BOOST_TEST((expand(zeros({0, 1}), {0, 4}).shape() == Shape{0, 4}));
  BOOST_TEST((narrow(zeros({4, 2}), 2, 0).shape() == Shape{0, 2}));
  BOOST_TEST((matmul(e, ones({3, 2})).shape() == Shape{0, 2}));
  // (2, 0) @ (0, 3): a sum over nothing, zeros.
  check_tensor(matmul(zeros({2, 0}), zeros({0, 3})), {0, 0, 0, 0, 0, 0}, 0, 0);
  check_tensor(matmul(zeros({2, 2, 0}), zeros({0, 1})), {0, 0, 0, 0}, 0, 0);
  BOOST_TEST((matmul(zeros({0, 2, 3}), zeros({0, 3, 4})).shape() == Shape{0, 2, 4}));
  BOOST_TEST((linear(e, ones({4, 3}), ones({4})).shape() == Shape{0, 4}));
  // No input features: the output is the bias on every row (or zeros without one).
  check_tensor(linear(zeros({2, 0}), zeros({3, 0}), tensor({1, 2, 3})), {1, 2, 3, 1, 2, 3}, 0, 0);
  check_tensor(linear(zeros({2, 0}), zeros({3, 0})), {0, 0, 0, 0, 0, 0}, 0, 0);
  BOOST_TEST(mse_loss(zeros({0}), zeros({0})).dim() == 0);
  // Backward through empty ops leaves gradients of the right (empty or zero) shape.
  Tensor a = leaf(zeros({0, 3})), w = leaf(ones({2, 3})), b = leaf(ones({2}));
  sum(linear(a, w, b)).backward();
  BOOST_TEST((a.grad().shape() == Shape{0, 3}));
  check_tensor(w.grad(), {0, 0, 0, 0, 0, 0}, 0, 0);
  check_tensor(b.grad(), {0, 0}, 0, 0);
  Tensor m = leaf(ones({2, 3})), n = leaf(ones({0, 3, 4}));
  sum(matmul(m, n)).backward();
  check_tensor(m.grad(), {0, 0, 0, 0, 0, 0}, 0, 0);
  Tensor f = leaf(zeros({2, 0})), g = leaf(zeros({0, 3}));
  sum(matmul(f, g)).backward();
  BOOST_TEST((f.grad().shape() == Shape{2, 0}));
  BOOST_TEST((g.grad().shape() == Shape{0, 3}));
  Tensor s = leaf(zeros({3, 0}));
  sum(softmax(s, 1)).backward();
  BOOST_TEST((s.grad().shape() == Shape{3, 0}));
}

// ---- Printing: expected strings are what PyTorch 1.13 prints (repr) for the same tensors -------

BOOST_AUTO_TEST_CASE(str_matches_pytorch_repr) {
  // kReprs, kGradReprs: (C++ tensor, PyTorch's repr of the same tensor), from ops_value_reprs.py.
#include "ops_value_reprs.inc"
  for (const auto& [make, want] : kReprs) {
    const Tensor t = make();
    BOOST_TEST(t.str() == want, "got\n" << t.str() << "\nwant\n" << want);
  }
  for (const auto& [make, want] : kGradReprs) {
    const Tensor t = make();
    BOOST_TEST(t.str() == want, "got\n" << t.str() << "\nwant\n" << want);
  }
}

BOOST_AUTO_TEST_CASE(grad_fn_names_match_pytorch) {
  // type(t.grad_fn).__name__ in PyTorch 1.13 for the same op.
  Tensor x = leaf(tensor({0.5, 1, 1.5, 2, 2.5, 3}, {2, 3})), w = leaf(ones({4, 3})), b = leaf(ones({4}));
  const std::vector<std::pair<Tensor, std::string>> cases = {
      {add(x, x), "AddBackward0"},   {x + 2.0, "AddBackward0"},       {sub(x, x), "SubBackward0"},
      {x - 2.0, "SubBackward0"},     {2.0 - x, "RsubBackward1"},      {mul(x, x), "MulBackward0"},
      {x * 2.0, "MulBackward0"},     {div(x, x), "DivBackward0"},     {x / 2.0, "DivBackward0"},
      {neg(x), "NegBackward0"},      {exp(x), "ExpBackward0"},        {log(x), "LogBackward0"},
      {sqrt(x), "SqrtBackward0"},    {relu(x), "ReluBackward0"},      {tanh(x), "TanhBackward0"},
      {sigmoid(x), "SigmoidBackward0"}, {gelu(x), "GeluBackward0"},   {pow(x, 0.5), "PowBackward0"},
      {square(x), "PowBackward0"},   {sum(x), "SumBackward0"},        {sum(x, {0}), "SumBackward1"},
      {mean(x), "MeanBackward0"},    {mean(x, {1}), "MeanBackward1"}, {var(x), "VarBackward0"},
      {var(x, {0}, false), "VarBackward0"}, {max(x), "MaxBackward1"}, {max(x, {0}), "AmaxBackward0"},
      {reshape(x, {6}), "ReshapeAliasBackward0"}, {flatten(x), "ReshapeAliasBackward0"},
      {unsqueeze(x, 0), "UnsqueezeBackward0"}, {squeeze(unsqueeze(x, 1), 1), "SqueezeBackward1"},
      {squeeze(unsqueeze(x, 1)), "SqueezeBackward0"}, {permute(x, {1, 0}), "PermuteBackward0"},
      {transpose(x, 0, 1), "TransposeBackward0"}, {expand(x, {4, 2, 3}), "ExpandBackward0"},
      {narrow(x, 0, 1), "SliceBackward0"}, {matmul(x, transpose(w, 0, 1)), "MmBackward0"},
      {linear(x, w), "MmBackward0"}, {linear(x, w, b), "AddmmBackward0"},
      {softmax(x, 1), "SoftmaxBackward0"}, {log_softmax(x, 1), "LogSoftmaxBackward0"},
      {mse_loss(x, x.detach()), "MseLossBackward0"}, {cross_entropy(x, {0, 1}), "NllLossBackward0"},
      {nll_loss(x, {0, 1}), "NllLossBackward0"}, {x.clone(), "CloneBackward0"},
      {x.to(DType::Float64), "ToCopyBackward0"}};
  for (const auto& [t, name] : cases) {
    BOOST_REQUIRE(t.grad_fn());
    BOOST_TEST(t.grad_fn()->name() == name);
  }
}

BOOST_AUTO_TEST_SUITE_END()
