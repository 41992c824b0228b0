// The sequence shape ops cat, stack, split, select and narrow along any dim: values element by
// element against index arithmetic, float64 gradchecks along every dim, and their errors.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// Row-major flat position of the full index idx in shape s.
int64_t flat_index(const Shape& s, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t k = 0; k < idx.size(); ++k) f = f * s[k] + idx[k];
  return f;
}

// Calls f(idx) for every full index of shape s.
template <class F>
void for_each_index(const Shape& s, const F& f) {
  const int64_t n = numel(s);
  std::vector<int64_t> idx(s.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t k = s.size(); k-- > 0;) {
      if (++idx[k] < s[k]) break;
      idx[k] = 0;
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shape_cat)

// out[..., j, ...] is input i's element at j - (sizes of the inputs before i) along the dim.
BOOST_AUTO_TEST_CASE(cat_values_along_every_dim) {
  const Shape base = {2, 3, 4};
  for (int64_t d = -3; d < 3; ++d) {
    BOOST_TEST_CONTEXT("dim " << d) {
      const int64_t dd = d < 0 ? d + 3 : d;
      std::vector<Tensor> in;
      for (int64_t i = 0; i < 3; ++i) {
        Shape s = base;
        s[dd] = i + 1;  // sizes 1, 2, 3 along the dim
        in.push_back(random_input(s, 100 + static_cast<unsigned>(i)).detach());
      }
      const Tensor out = cat(in, d);
      Shape want = base;
      want[dd] = 6;
      BOOST_TEST(out.shape() == want);
      for_each_index(out.shape(), [&](const std::vector<int64_t>& idx) {
        int64_t j = idx[dd], i = 0;
        while (j >= in[i].shape()[dd]) j -= in[i++].shape()[dd];
        std::vector<int64_t> src = idx;
        src[dd] = j;
        BOOST_TEST(out.flat(flat_index(out.shape(), idx)) == in[i].flat(flat_index(in[i].shape(), src)));
      });
    }
  }
}

// stack(ts, d)[..., i, ...] == ts[i] and select(x, d, i) == x[..., i, ...]: stack and select invert
// each other, split pieces cat back to x, and narrow(x, d, s, l) matches select at each position.
BOOST_AUTO_TEST_CASE(stack_select_split_narrow_values) {
  const Tensor x = random_input({3, 4, 5}, 7).detach();
  for (int64_t d = 0; d < 3; ++d) {
    BOOST_TEST_CONTEXT("dim " << d) {
      std::vector<Tensor> rows;
      for (int64_t i = 0; i < x.shape()[d]; ++i) {
        const Tensor s = select(x, d, i);
        Shape want = x.shape();
        want.erase(want.begin() + d);
        BOOST_TEST(s.shape() == want);
        for_each_index(s.shape(), [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> full = idx;
          full.insert(full.begin() + d, i);
          BOOST_TEST(s.flat(flat_index(s.shape(), idx)) == x.flat(flat_index(x.shape(), full)));
        });
        rows.push_back(s);
      }
      BOOST_TEST(stack(rows, d).to_vector() == x.to_vector());
      // negative index and dim
      BOOST_TEST(select(x, d - 3, -1).to_vector() == rows.back().to_vector());
      const std::vector<Tensor> pieces = split(x, {1, 0, x.shape()[d] - 1}, d);
      BOOST_TEST_REQUIRE(pieces.size() == 3u);
      BOOST_TEST(pieces[1].shape()[d] == 0);
      BOOST_TEST(cat(pieces, d).to_vector() == x.to_vector());
      const Tensor nar = narrow(x, d, 1, 2);
      BOOST_TEST(nar.shape()[d] == 2);
      BOOST_TEST(select(nar, d, 0).to_vector() == rows[1].to_vector());
      BOOST_TEST(select(nar, d, 1).to_vector() == rows[2].to_vector());
    }
  }
}

BOOST_AUTO_TEST_CASE(gradchecks) {
  for (int64_t d = 0; d < 3; ++d) {
    BOOST_TEST_CONTEXT("dim " << d) {
      Shape sa = {2, 3, 2}, sb = sa;
      sb[d] = 1;
      const Tensor a = random_input(sa, 1), b = random_input(sb, 2), c = random_input(sa, 3);
      expect_gradcheck("cat", [d](const In& x) { return cat(x, d); }, {a, b, c});
      expect_gradcheck("cat, one constant", [d](const In& x) { return cat(x, d); }, {a, b.detach()});
      expect_gradcheck("stack", [d](const In& x) { return stack(x, d); }, {a, c});
      expect_gradcheck("stack at the end", [](const In& x) { return stack(x, -1); }, {a, c});
      // The pieces of a split used with different weights, so each piece's gradient is checked.
      expect_gradcheck("split", [d](const In& x) {
        const std::vector<Tensor> p = split(x[0], {1, 1}, d);
        return cat({p[0] * 2.0, p[1] * -3.0}, d);
      }, {random_input(Shape{2, 2, 2}, 4)});
      expect_gradcheck("select", [d](const In& x) { return select(x[0], d, 1); }, {a});
      expect_gradcheck("narrow", [d](const In& x) { return narrow(x[0], d, 1, 1); }, {a});
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_input) {
  const Tensor a = zeros({2, 3}), b = zeros({2, 4}), c = zeros({3, 3}), d64 = zeros({2, 3}, DType::Float64);
  expect_error([] { cat({}, 0); }, {"cat", "non-empty"});
  expect_error([&] { cat({a, c}, 1); }, {"cat", "dim 1", "[2, 3]", "[3, 3]", "tensor 1"});
  expect_error([&] { cat({a, zeros({2, 3, 1})}, 0); }, {"cat", "[2, 3]", "[2, 3, 1]"});
  expect_error([&] { cat({a, d64}, 0); }, {"cat", "float32", "float64"});
  expect_error([&] { cat({a, b}, 2); }, {"cat", "dim 2", "rank 2"});
  expect_error([&] { cat({scalar(1.0)}, 0); }, {"cat", "zero-dimensional"});
  expect_error([&] { stack({a, b}, 0); }, {"stack", "[2, 3]", "[2, 4]", "entry 1"});
  expect_error([&] { stack({a}, 3); }, {"stack", "dim 3", "[-3, 2]"});
  expect_error([&] { split(a, {1, 1}, 1); }, {"split", "[1, 1]", "sum to 3", "[2, 3]"});
  expect_error([&] { split(a, {-1, 4}, 1); }, {"split", ">= 0"});
  expect_error([&] { select(a, 1, 3); }, {"select", "index 3", "size 3", "[2, 3]"});
  expect_error([&] { select(a, 1, -4); }, {"select", "index -4"});
  expect_error([&] { select(a, 2, 0); }, {"select", "dim 2"});
  expect_error([&] { narrow(a, 1, 2, 2); }, {"narrow", "2 to 4", "dim 1", "[2, 3]"});
}

BOOST_AUTO_TEST_SUITE_END()
