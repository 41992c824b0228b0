// Tensor basics: factories, the seeded Generator, element access, detach/clone/to semantics,
// 64-byte alignment, ranks 0 to 6, in-place helpers.
#include <boost/test/unit_test.hpp>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::test::check_tensor;

BOOST_AUTO_TEST_SUITE(tensor_basics)

BOOST_AUTO_TEST_CASE(zeros_ones_full_scalar) {
  const Tensor z = zeros({2, 3});
  BOOST_TEST((z.shape() == Shape{2, 3}));
  BOOST_TEST(z.numel() == 6);
  BOOST_TEST(z.dim() == 2);
  BOOST_TEST((z.dtype() == DType::Float32));
  check_tensor(z, std::vector<double>(6, 0), 0, 0);
  check_tensor(ones({4}, DType::Float64), {1, 1, 1, 1}, 0, 0);
  BOOST_TEST((ones({4}, DType::Float64).dtype() == DType::Float64));
  check_tensor(full({2, 2}, -2.5), {-2.5, -2.5, -2.5, -2.5}, 0, 0);
  const Tensor s = scalar(7);
  BOOST_TEST(s.dim() == 0);
  BOOST_TEST(s.numel() == 1);
  BOOST_TEST(s.item() == 7);
  BOOST_TEST(s.at({}) == 7);
  const Tensor l = ones_like(z);
  BOOST_TEST((l.shape() == z.shape()));
  check_tensor(l, std::vector<double>(6, 1), 0, 0);
  BOOST_TEST((zeros_like(ones({3}, DType::Float64)).dtype() == DType::Float64));
  BOOST_TEST(zeros({0, 5}).numel() == 0);
  BOOST_TEST(zeros({}).numel() == 1);
}

BOOST_AUTO_TEST_CASE(arange_integer_and_fractional_steps) {
  check_tensor(arange(5), {0, 1, 2, 3, 4}, 0, 0);
  check_tensor(arange(2, 5), {2, 3, 4}, 0, 0);
  BOOST_TEST(arange(0, 0).numel() == 0);
  // PyTorch 1.13, torch.arange(..., dtype=torch.float64): sizes ceil((end - start) / step), values
  // start + i * step (so 3 * 0.1 = 0.30000000000000004).
  check_tensor(arange(0, 1, 0.1, DType::Float64),
               {0.0, 0.1, 0.2, 0.30000000000000004, 0.4, 0.5, 0.6000000000000001, 0.7000000000000001, 0.8, 0.9}, 0, 0);
  check_tensor(arange(1, 2, 0.3, DType::Float64), {1.0, 1.3, 1.6, 1.9}, 1e-15, 0);
  check_tensor(arange(5, 0, -1.5, DType::Float64), {5.0, 3.5, 2.0, 0.5}, 0, 0);
  check_tensor(arange(-1, 1, 0.25), {-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75}, 0, 0);
  // float32, torch.arange(0, 0.5, 0.1): [0, 0.1f, 0.2f, 0.3f, 0.4f]
  check_tensor(arange(0, 0.5, 0.1), {0.0, 0.10000000149011612, 0.20000000298023224, 0.30000001192092896,
                                     0.4000000059604645}, 0, 0);
}

BOOST_AUTO_TEST_CASE(arange_refuses_non_finite_bounds_and_too_many_values) {
  // Each is an error naming the problem before anything is allocated (a NaN or an infinite count
  // would otherwise become an arbitrary size).
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const auto& [start, end, step] : std::vector<std::array<double, 3>>{{0, nan, 1}, {nan, 1, 1}, {0, 1, nan},
                                                                          {0, inf, 1}, {-inf, 0, 1}})
    BOOST_CHECK_EXCEPTION(arange(start, end, step), normlab::Error,
                          [](const normlab::Error& e) { return std::string(e.what()).find("must be finite") != std::string::npos; });
  BOOST_CHECK_EXCEPTION(arange(0, 1e300, 1), normlab::Error,
                        [](const normlab::Error& e) { return std::string(e.what()).find("more than 2^60") != std::string::npos; });
  BOOST_CHECK_EXCEPTION(arange(0, 1, 1e-300), normlab::Error,
                        [](const normlab::Error& e) { return std::string(e.what()).find("more than 2^60") != std::string::npos; });
}

BOOST_AUTO_TEST_CASE(tensor_from_values) {
  const Tensor t = tensor({1, 2, 3, 4, 5, 6}, {3, 2});
  BOOST_TEST((t.shape() == Shape{3, 2}));
  BOOST_TEST(t.at({2, 1}) == 6);
  BOOST_TEST(t.at({-1, -2}) == 5);
  BOOST_TEST(t.at({1, 0}) == 3);
  const Tensor v = tensor({0.1, 0.2}, DType::Float64);
  BOOST_TEST(v.flat(0) == 0.1);  // float64 keeps the double exactly
  BOOST_TEST(tensor({0.1}).flat(0) == static_cast<double>(0.1f));
  BOOST_TEST((tensor({}).shape() == Shape{0}));
  const std::vector<double> want = {1, 2, 3, 4, 5, 6};
  BOOST_TEST(t.to_vector() == want);
  t.set_flat(3, -9);
  BOOST_TEST(t.at({1, 1}) == -9);
}

BOOST_AUTO_TEST_CASE(generator_matches_mt19937_64) {
  // The standard fixes the 10000th output of a default-seeded (5489) mt19937_64 ([rand.predef]).
  Generator std_seed(5489);
  for (int i = 0; i < 9999; ++i) std_seed.next_u64();
  BOOST_TEST(std_seed.next_u64() == 9981545732273789042ULL);
  // Seed 0: the raw stream is std::mt19937_64(0)'s, and uniform() takes its top 53 bits.
  std::mt19937_64 ref(0);
  Generator g(0);
  for (int i = 0; i < 5; ++i) BOOST_TEST(g.next_u64() == ref());
  const uint64_t bits = ref();
  BOOST_TEST(g.uniform() == static_cast<double>(bits >> 11) / 9007199254740992.0);  // 2^53
  // normal(): Box-Muller from two uniforms u1' = 1 - u1, u2: r cos(2 pi u2), then r sin(2 pi u2).
  const double u1 = static_cast<double>(ref() >> 11) / 9007199254740992.0;
  const double u2 = static_cast<double>(ref() >> 11) / 9007199254740992.0;
  const double r = std::sqrt(-2 * std::log(1 - u1));
  BOOST_TEST(g.normal() == r * std::cos(2 * M_PI * u2), boost::test_tools::tolerance(1e-15));
  BOOST_TEST(g.normal() == r * std::sin(2 * M_PI * u2), boost::test_tools::tolerance(1e-15));
  // seed() restarts the stream and drops a cached normal.
  Generator h(3);
  h.normal();
  h.seed(0);
  BOOST_TEST(h.next_u64() == std::mt19937_64(0)());
  for (int i = 0; i < 1000; ++i) BOOST_TEST_REQUIRE(h.randint(7) < 7u);
}

BOOST_AUTO_TEST_CASE(rand_and_randn_are_reproducible) {
  Generator a(42), b(42), c(43);
  const Tensor ra = rand({100}, a), rb = rand({100}, b), rc = rand({100}, c);
  BOOST_TEST(ra.to_vector() == rb.to_vector());
  BOOST_TEST(ra.to_vector() != rc.to_vector());
  const Tensor na = randn({3, 5}, a, 0, 1, DType::Float64), nb = randn({3, 5}, b, 0, 1, DType::Float64);
  BOOST_TEST(na.to_vector() == nb.to_vector());
  const Tensor u = rand({10000}, c, -2, 3);
  for (double v : u.to_vector()) BOOST_TEST_REQUIRE((v >= -2 && v < 3));
}

BOOST_AUTO_TEST_CASE(rand_float32_stays_below_hi) {
  // A double just below hi can round up to hi in float32; rand must still give [lo, hi). Between
  // 1 and 1 + 2^-20 there are 8 float steps, so about 1 draw in 16 would round to hi.
  Generator g(7);
  const double hi = 1 + std::ldexp(1.0, -20);
  const Tensor u = rand({1000}, g, 1, hi);
  for (double v : u.to_vector()) BOOST_TEST_REQUIRE((v >= 1 && v < hi));
}

BOOST_AUTO_TEST_CASE(randn_mean_and_std) {
  Generator g(0);
  const Tensor x = randn({100000}, g, 2, 3, DType::Float64);
  // For 1e5 samples the standard errors are 3/sqrt(1e5) ~ 0.0095 (mean) and ~0.0067 (std).
  BOOST_TEST(mean(x).item() == 2, boost::test_tools::tolerance(0.03));
  BOOST_TEST(std::sqrt(var(x).item()) == 3, boost::test_tools::tolerance(0.01));
  const Tensor u = rand({100000}, g, 0, 1, DType::Float64);
  BOOST_TEST(mean(u).item() == 0.5, boost::test_tools::tolerance(0.01));
  BOOST_TEST(var(u).item() == 1.0 / 12, boost::test_tools::tolerance(0.02));
}

BOOST_AUTO_TEST_CASE(clone_copies_detach_shares) {
  Tensor x = tensor({1, 2, 3});
  x.requires_grad_();
  const Tensor c = x.clone(), d = x.detach();
  BOOST_TEST(c.impl().storage != x.impl().storage);
  BOOST_TEST(d.impl().storage == x.impl().storage);
  {
    NoGradGuard g;
    x.set_flat(0, 10);
  }
  BOOST_TEST(c.flat(0) == 1);   // a deep copy
  BOOST_TEST(d.flat(0) == 10);  // the same data
  BOOST_TEST(!d.requires_grad());
  BOOST_TEST(d.is_leaf());
  BOOST_TEST(c.requires_grad());
  BOOST_TEST(!c.is_leaf());
  // Handles share: a copy of a Tensor is the same tensor.
  const Tensor h = x;
  BOOST_TEST(h.is_same(x));
  // clone's gradient flows back; detach's does not.
  sum(mul(c, tensor({1, 2, 3}))).backward();
  check_tensor(x.grad(), {1, 2, 3}, 0, 0);
  BOOST_TEST(!sum(d).requires_grad());
}

BOOST_AUTO_TEST_CASE(to_converts_dtype) {
  const Tensor f = tensor({0.1, 1e10, -3});
  const Tensor d = f.to(DType::Float64);
  BOOST_TEST((d.dtype() == DType::Float64));
  BOOST_TEST(d.flat(0) == static_cast<double>(0.1f));
  BOOST_TEST(d.to(DType::Float32).to_vector() == f.to_vector());
  BOOST_TEST(f.to(DType::Float32).is_same(f));  // already float32: itself, as PyTorch
  BOOST_TEST(tensor({0.1}, DType::Float64).to(DType::Float32).flat(0) == static_cast<double>(0.1f));
}

BOOST_AUTO_TEST_CASE(storage_is_64_byte_aligned) {
  for (int64_t n : {0, 1, 3, 16, 17, 1000, 4099})
    for (DType t : {DType::Float32, DType::Float64}) {
      const Tensor x = zeros({n}, t);
      BOOST_TEST(reinterpret_cast<uintptr_t>(x.raw_data()) % 64 == 0u);
      BOOST_TEST(reinterpret_cast<uintptr_t>(x.clone().raw_data()) % 64 == 0u);
      BOOST_TEST(reinterpret_cast<uintptr_t>(exp(x).raw_data()) % 64 == 0u);
    }
}

BOOST_AUTO_TEST_CASE(ranks_0_to_6) {
  Shape s;
  for (int r = 0; r <= 6; ++r) {
    BOOST_TEST_CONTEXT("rank " << r) {
      const Tensor x = reshape(arange(numel(s), DType::Float64), s);
      BOOST_TEST(x.dim() == r);
      BOOST_TEST(x.numel() == numel(s));
      // The last element, by a full index, is numel - 1.
      if (r > 0) {
        std::vector<int64_t> last(r);
        for (int d = 0; d < r; ++d) last[d] = s[d] - 1;
        double v = 0;
        switch (r) {  // at() takes an initializer_list
          case 1: v = x.at({last[0]}); break;
          case 2: v = x.at({last[0], last[1]}); break;
          case 3: v = x.at({last[0], last[1], last[2]}); break;
          case 4: v = x.at({last[0], last[1], last[2], last[3]}); break;
          case 5: v = x.at({last[0], last[1], last[2], last[3], last[4]}); break;
          case 6: v = x.at({last[0], last[1], last[2], last[3], last[4], last[5]}); break;
        }
        BOOST_TEST(v == numel(s) - 1);
      }
      // Ops work at every rank: broadcasting add, a reduction per dim, the reversed permutation.
      Tensor leaf = x.detach();
      leaf.requires_grad_();
      const Tensor y = add(leaf, full({}, 1, DType::Float64));
      for (int d = 0; d < r; ++d) BOOST_TEST(sum(y, {d}).dim() == r - 1);
      std::vector<int64_t> rev(r);
      for (int d = 0; d < r; ++d) rev[d] = r - 1 - d;
      const Tensor p = permute(y, rev);
      BOOST_TEST(sum(p).item() == numel(s) * (numel(s) - 1) / 2.0 + numel(s));
      sum(mul(p, p)).backward();
      check_tensor(leaf.grad(), mul(add(x, 1.0), 2.0).to_vector(), 1e-15, 0);
      BOOST_TEST(!x.str().empty());
      normlab::test::expect_gradcheck("mul at rank " + std::to_string(r),
                                      [](const std::vector<Tensor>& v) { return mul(v[0], v[0]); }, {leaf});
    }
    s.push_back(r % 2 ? 1 : 2);  // shapes (), (2), (2, 1), (2, 1, 2), ...
  }
}

BOOST_AUTO_TEST_CASE(in_place_helpers) {
  const Tensor a = tensor({1, 2, 3});
  fill_(a, 4);
  check_tensor(a, {4, 4, 4}, 0, 0);
  copy_(a, tensor({1, 2, 3}));
  check_tensor(a, {1, 2, 3}, 0, 0);
  add_(a, tensor({10, 20, 30}), 0.5);
  check_tensor(a, {6, 12, 18}, 0, 0);
  mul_(a, -0.5);
  check_tensor(a, {-3, -6, -9}, 0, 0);
}

BOOST_AUTO_TEST_CASE(leaf_and_requires_grad_flags) {
  Tensor x = ones({2});
  BOOST_TEST(x.is_leaf());
  BOOST_TEST(!x.requires_grad());
  BOOST_TEST(!x.grad().defined());
  x.requires_grad_();
  BOOST_TEST(x.requires_grad());
  const Tensor y = mul(x, 2.0);
  BOOST_TEST(!y.is_leaf());
  BOOST_TEST(y.requires_grad());
  BOOST_TEST(!mul(ones({2}), 2.0).requires_grad());  // no input requires grad: nothing recorded
  x.requires_grad_(false);
  BOOST_TEST(!mul(x, 2.0).requires_grad());
  std::ostringstream os;
  os << tensor({1, 2});
  BOOST_TEST(os.str() == "tensor([1., 2.])");
  BOOST_TEST(Tensor().str() == "tensor(undefined)");
  BOOST_TEST(!Tensor().defined());
}

BOOST_AUTO_TEST_CASE(a_borrowed_buffer_is_read_written_and_released_once) {
  // A Storage over memory the tensor does not own (an odd offset: only float alignment), as
  // Python's from_numpy makes: ops read it, in-place updates write it, views share it, and release
  // runs once, when the last tensor (here a view) lets go.
  std::vector<float> outside(7, 0.0f);
  for (int i = 0; i < 7; ++i) outside[i] = static_cast<float>(i);
  int released = 0;
  Tensor view;
  {
    auto impl = std::make_shared<TensorImpl>();
    impl->shape = {2, 3};
    impl->storage = std::make_shared<Storage>(outside.data() + 1, 6 * sizeof(float), [&released] { ++released; });
    const Tensor t(impl);
    BOOST_TEST(sum(t).item() == 1 + 2 + 3 + 4 + 5 + 6);
    fill_(narrow(t, 1, 1), 9.0);  // rows 1..1 share the storage
    BOOST_TEST(outside[4] == 9.0f);
    BOOST_TEST(outside[6] == 9.0f);
    view = select(t, 0, 0);
  }
  BOOST_TEST(released == 0);
  BOOST_TEST(view.to_vector() == std::vector<double>({1, 2, 3}), boost::test_tools::per_element());
  view = Tensor();
  BOOST_TEST(released == 1);
  BOOST_TEST(outside[0] == 0.0f);  // nothing outside the buffer was touched
}

BOOST_AUTO_TEST_SUITE_END()
