// conv2d and the 2-D pooling ops: values against a direct-loop reference, float64 gradcheck over a
// grid of options, PyTorch parity (tests/fixtures/conv2d and pool2d), the same bits on any thread
// count and on every Highway target, and clear errors for shapes and options that do not fit.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/kernels/im2col.h"
#include "autograd/parallel.h"
#include "nlohmann/json.hpp"
#include "tests/support/compare.h"
#include "tests/support/fixtures.h"
#include "tests/support/targets.h"
#include "tests/support/tensors.h"
#include "tests/support/threads.h"

using namespace normlab::autograd;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using normlab::test::random_input;
using In = std::vector<Tensor>;

namespace {

// conv2d by its definition (conv.h), in float64 loops.
std::vector<double> conv_reference(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dOptions& o) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t O = w.size(0), Cg = w.size(1), kh = w.size(2), kw = w.size(3), Og = O / o.groups;
  const int64_t OH = (H + 2 * o.padding[0] - o.dilation[0] * (kh - 1) - 1) / o.stride[0] + 1;
  const int64_t OW = (W + 2 * o.padding[1] - o.dilation[1] * (kw - 1) - 1) / o.stride[1] + 1;
  const auto xv = x.to_vector(), wv = w.to_vector();
  std::vector<double> y;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double acc = b.defined() ? b.flat(oc) : 0.0;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t iy = oy * o.stride[0] - o.padding[0] + i * o.dilation[0];
                const int64_t ix = ox * o.stride[1] - o.padding[1] + j * o.dilation[1];
                if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                const int64_t ic = (oc / Og) * Cg + c;
                acc += wv[((oc * Cg + c) * kh + i) * kw + j] * xv[((n * C + ic) * H + iy) * W + ix];
              }
          y.push_back(acc);
        }
  return y;
}

struct ConvCase {
  Shape x, w;
  Conv2dOptions o;
  bool bias;
};

std::string case_str(const ConvCase& c) {
  return "x " + shape_str(c.x) + " w " + shape_str(c.w) + " stride " + std::to_string(c.o.stride[0]) + "," +
         std::to_string(c.o.stride[1]) + " padding " + std::to_string(c.o.padding[0]) + "," +
         std::to_string(c.o.padding[1]) + " dilation " + std::to_string(c.o.dilation[0]) + "," +
         std::to_string(c.o.dilation[1]) + " groups " + std::to_string(c.o.groups) + (c.bias ? " bias" : "");
}

// A grid of small convolutions: every stride, padding and dilation in {1, 2} x {0, 1, 2} x {1, 2}
// (where the window fits), groups 1, 2 and depthwise, with and without bias, 1x1 kernels; and
// 3x3 stride-1 convolutions with 8 or more channels per group, which run through Winograd
// (kernels/winograd.h): odd output sizes (a tile's second row or column cut off), padding 0, 1,
// 2 and mixed, groups, a one-row image.
std::vector<ConvCase> conv_grid() {
  std::vector<ConvCase> cases;
  for (int64_t s : {1, 2})
    for (int64_t p : {0, 1, 2})
      for (int64_t d : {1, 2}) {
        Conv2dOptions o;
        o.stride = {s, s}, o.padding = {p, p}, o.dilation = {d, d};
        cases.push_back({{2, 2, 5, 6}, {3, 2, 3, 2}, o, (s + p + d) % 2 == 0});
      }
  Conv2dOptions mixed;
  mixed.stride = {2, 1}, mixed.padding = {0, 1}, mixed.dilation = {1, 2};
  cases.push_back({{2, 3, 6, 5}, {2, 3, 2, 3}, mixed, true});
  Conv2dOptions g2;
  g2.groups = 2, g2.padding = {1, 1};
  cases.push_back({{2, 4, 4, 4}, {6, 2, 3, 3}, g2, true});
  Conv2dOptions depthwise;
  depthwise.groups = 3, depthwise.padding = {1, 1}, depthwise.stride = {2, 2};
  cases.push_back({{2, 3, 5, 5}, {3, 1, 3, 3}, depthwise, false});
  cases.push_back({{3, 4, 3, 3}, {2, 4, 1, 1}, Conv2dOptions{}, true});  // 1x1: x is its own column matrix
  Conv2dOptions strided1x1;
  strided1x1.stride = {2, 2};
  cases.push_back({{2, 3, 5, 4}, {2, 3, 1, 1}, strided1x1, false});
  for (int64_t p : {0, 1, 2}) {
    Conv2dOptions o;
    o.padding = {p, p};
    cases.push_back({{2, 8, 5, 6}, {8, 8, 3, 3}, o, p != 1});
    cases.push_back({{1, 8, 4, 7}, {9, 8, 3, 3}, o, p == 1});
  }
  Conv2dOptions wino_groups;
  wino_groups.groups = 2, wino_groups.padding = {1, 2};
  cases.push_back({{2, 16, 5, 5}, {16, 8, 3, 3}, wino_groups, true});
  Conv2dOptions wino_row;
  wino_row.padding = {1, 0};
  cases.push_back({{2, 8, 1, 9}, {8, 8, 3, 3}, wino_row, false});
  return cases;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(conv2d_op)

BOOST_AUTO_TEST_CASE(values_match_the_definition) {
  unsigned seed = 100;
  for (const ConvCase& c : conv_grid()) {
    BOOST_TEST_CONTEXT(case_str(c)) {
      const Tensor x = random_input(c.x, ++seed), w = random_input(c.w, ++seed);
      const Tensor b = c.bias ? random_input({c.w[0]}, ++seed) : Tensor();
      const Tensor y = conv2d(x, w, b, c.o);
      const auto want = conv_reference(x, w, b, c.o);
      BOOST_REQUIRE_EQUAL(y.numel(), static_cast<int64_t>(want.size()));
      normlab::test::expect_elements_close("conv2d", y.to_vector(), want, 1e-12, 1e-12);
    }
  }
}

BOOST_AUTO_TEST_CASE(gradcheck_over_options) {
  unsigned seed = 200;
  for (const ConvCase& c : conv_grid()) {
    const Tensor x = random_input(c.x, ++seed), w = random_input(c.w, ++seed);
    In inputs{x, w};
    if (c.bias) inputs.push_back(random_input({c.w[0]}, ++seed));
    const Conv2dOptions o = c.o;
    expect_gradcheck("conv2d " + case_str(c),
                     [o](const In& v) { return conv2d(v[0], v[1], v.size() > 2 ? v[2] : Tensor(), o); }, inputs);
  }
}

// The weight gradient sums over images in chunks: a batch larger than the number of chunks, and
// one image.
// Winograd in float32 on the study CNN's second convolution: forward and both gradients within a
// few float32 roundings of the float64 result (relative to the largest value of each), where the
// direct sum's own float32 error is about 1e-6 of it.
BOOST_AUTO_TEST_CASE(winograd_float32_accuracy) {
  Generator gen(5);
  const Tensor x = randn({4, 32, 14, 14}, gen), w = randn({64, 32, 3, 3}, gen, 0, 0.06), b = randn({64}, gen);
  const Tensor dy = randn({4, 64, 14, 14}, gen);
  Conv2dOptions o;
  o.padding = {1, 1};
  const auto run = [&](DType dt) {
    Tensor xs = x.to(dt).detach().requires_grad_(), ws = w.to(dt).detach().requires_grad_();
    Tensor y = conv2d(xs, ws, b.to(dt), o);
    y.backward(dy.to(dt));
    return std::vector<std::vector<double>>{y.to_vector(), xs.grad().to_vector(), ws.grad().to_vector()};
  };
  const auto f32 = run(DType::Float32), f64 = run(DType::Float64);
  const char* names[] = {"output", "input gradient", "weight gradient"};
  for (size_t i = 0; i < 3; ++i) {
    double scale = 0, err = 0;
    for (size_t j = 0; j < f64[i].size(); ++j) {
      scale = std::max(scale, std::abs(f64[i][j]));
      err = std::max(err, std::abs(f32[i][j] - f64[i][j]));
    }
    BOOST_TEST_MESSAGE("winograd float32 " << names[i] << ": largest error " << err / scale << " of the largest value");
    BOOST_TEST(err <= 1e-5 * scale, names[i] << ": float32 error " << err << ", largest value " << scale);
  }
}

BOOST_AUTO_TEST_CASE(gradcheck_batch_sizes) {
  Conv2dOptions o;
  o.padding = {1, 1};
  for (int64_t n : {1, 17}) {
    const Tensor x = random_input({n, 2, 3, 3}, 300 + n), w = random_input({2, 2, 3, 3}, 301);
    const Tensor b = random_input({2}, 302);
    expect_gradcheck("conv2d batch " + std::to_string(n), [o](const In& v) { return conv2d(v[0], v[1], v[2], o); },
                     {x, w, b});
  }
}

BOOST_AUTO_TEST_CASE(im2col_and_col2im_are_adjoint) {
  // <col2im(c), x> = <c, im2col(x)> for every geometry of the grid.
  for (const ConvCase& c : conv_grid()) {
    kernels::ConvGeometry g;
    g.channels = c.x[1] / c.o.groups, g.h = c.x[2], g.w = c.x[3], g.kh = c.w[2], g.kw = c.w[3];
    g.stride_h = c.o.stride[0], g.stride_w = c.o.stride[1], g.pad_h = c.o.padding[0], g.pad_w = c.o.padding[1];
    g.dil_h = c.o.dilation[0], g.dil_w = c.o.dilation[1];
    g.oh = conv_output_size("h", g.h, g.kh, g.stride_h, g.pad_h, g.dil_h);
    g.ow = conv_output_size("w", g.w, g.kw, g.stride_w, g.pad_w, g.dil_w);
    const Tensor img = random_input({g.channels * g.h * g.w}, 1), col = random_input({g.rows() * g.cols()}, 2);
    std::vector<double> cx(g.rows() * g.cols()), xc(g.channels * g.h * g.w);
    kernels::im2col(g, img.data<double>(), cx.data());
    kernels::col2im(g, col.data<double>(), xc.data());
    double lhs = 0, rhs = 0;
    for (size_t i = 0; i < xc.size(); ++i) lhs += xc[i] * img.flat(i);
    for (size_t i = 0; i < cx.size(); ++i) rhs += col.flat(i) * cx[i];
    BOOST_TEST(std::fabs(lhs - rhs) <= 1e-12 * (1 + std::fabs(lhs)), case_str(c) << ": " << lhs << " vs " << rhs);
  }
}

BOOST_AUTO_TEST_CASE(col2im_matches_its_reference_on_every_target) {
  // float32 col2im (the Highway row adds) against the scalar reference, bit for bit: widths around
  // 4, 8 and 16 lanes, strides 1 and 2, padding, dilation; -0 and NaN entries included.
  std::mt19937 gen(13);
  std::normal_distribution<float> normal;
  normlab::test::for_each_target([&] {
    for (int64_t w : {1, 3, 5, 8, 9, 15, 16, 17, 31, 33, 40})
      for (int64_t stride : {1, 2})
        for (int64_t pad : {0, 1, 2})
          for (int64_t dil : {1, 2}) {
            kernels::ConvGeometry g;
            g.channels = 2, g.h = 5, g.w = w, g.kh = 3, g.kw = 3;
            g.stride_h = g.stride_w = stride, g.pad_h = g.pad_w = pad, g.dil_h = g.dil_w = dil;
            if (g.w + 2 * pad < dil * 2 + 1 || g.h + 2 * pad < dil * 2 + 1) continue;
            g.oh = conv_output_size("h", g.h, g.kh, stride, pad, dil);
            g.ow = conv_output_size("w", g.w, g.kw, stride, pad, dil);
            std::vector<float> col(g.rows() * g.cols());
            for (size_t i = 0; i < col.size(); ++i) col[i] = i % 97 == 3 ? -0.0f : i % 211 == 5 ? NAN : normal(gen);
            std::vector<float> img(g.channels * g.h * g.w, 1.0f), img_ref(img.size(), 2.0f);
            kernels::col2im(g, col.data(), img.data());
            kernels::ref::col2im(g, col.data(), img_ref.data());
            BOOST_TEST(std::memcmp(img.data(), img_ref.data(), img.size() * sizeof(float)) == 0,
                       "w " << w << " stride " << stride << " padding " << pad << " dilation " << dil);
          }
  });
}

BOOST_AUTO_TEST_CASE(same_bits_on_any_thread_count_and_target) {
  // The study's second convolution on a small batch, float32: forward, input and weight gradients.
  Generator gen(5);
  const Tensor x0 = randn({20, 32, 14, 14}, gen), w0 = randn({64, 32, 3, 3}, gen, 0, 0.06);
  const Tensor b0 = randn({64}, gen), dy = randn({20, 64, 14, 14}, gen);
  Conv2dOptions o;
  o.padding = {1, 1};
  const auto run = [&] {
    Tensor x = x0.detach().clone(), w = w0.detach().clone(), b = b0.detach().clone();
    x.requires_grad_(), w.requires_grad_(), b.requires_grad_();
    Tensor y = conv2d(x, w, b, o);
    y.backward(dy);
    return std::vector<std::vector<double>>{y.to_vector(), x.grad().to_vector(), w.grad().to_vector(),
                                            b.grad().to_vector()};
  };
  const normlab::test::ThreadsGuard guard;  // every grain 0: split on 2 and 3 threads
  normlab::test::for_each_target([&] {
    set_num_threads(1);
    const auto one = run();
    for (int t : {2, 3}) {
      set_num_threads(t);
      BOOST_TEST((run() == one), "conv2d on " << t << " threads differs from 1 thread");
    }
  });
}

BOOST_AUTO_TEST_CASE(pytorch_parity) {
  normlab::test::Fixture fx("conv2d");
  const auto pair = [&](const std::string& key) {
    const auto v = nlohmann::json::parse(fx.meta(key)).get<std::vector<int64_t>>();
    return std::array<int64_t, 2>{v.at(0), v.at(1)};
  };
  int cases = 0;
  for (const auto& [key, value] : fx.metadata()) {
    if (key.size() < 7 || key.compare(key.size() - 7, 7, ".groups") != 0) continue;
    const std::string c = key.substr(0, key.size() - 7);
    Conv2dOptions o;
    o.stride = pair(c + ".stride"), o.padding = pair(c + ".padding"), o.dilation = pair(c + ".dilation");
    o.groups = std::stoll(value);
    const bool has_bias = fx.meta(c + ".bias") == "true";
    for (const std::string dt : {"f32", "f64"}) {
      BOOST_TEST_CONTEXT(dt << "." << c) {
        const std::string p = dt + "." + c + ".";
        // float32: sums of up to 288 products of O(1) terms in another order than PyTorch's.
        const double rtol = dt == "f32" ? 1e-5 : 1e-10, atol = dt == "f32" ? 2e-5 : 1e-12;
        Tensor x = fx.get(p + "input").detach().clone(), w = fx.get(p + "weight").detach().clone();
        Tensor b = has_bias ? fx.get(p + "bias").detach().clone() : Tensor();
        x.requires_grad_(), w.requires_grad_();
        if (b.defined()) b.requires_grad_();
        Tensor y = conv2d(x, w, b, o);
        y.backward(fx.get(p + "grad_output"));
        using normlab::test::expect_elements_close;
        BOOST_REQUIRE(y.shape() == fx.get(p + "output").shape());
        expect_elements_close(p + "output", y.to_vector(), fx.get(p + "output").to_vector(), rtol, atol);
        expect_elements_close(p + "grad_input", x.grad().to_vector(), fx.get(p + "grad_input").to_vector(), rtol, atol);
        expect_elements_close(p + "grad_weight", w.grad().to_vector(), fx.get(p + "grad_weight").to_vector(), rtol,
                              atol);
        if (b.defined())
          expect_elements_close(p + "grad_bias", b.grad().to_vector(), fx.get(p + "grad_bias").to_vector(), rtol,
                                atol);
      }
    }
    ++cases;
  }
  BOOST_TEST(cases == 8);
}

BOOST_AUTO_TEST_CASE(bad_shapes_and_options_are_clear_errors) {
  const Tensor x = zeros({2, 3, 5, 5}), w = zeros({4, 3, 3, 3});
  expect_error([&] { conv2d(zeros({3, 5, 5}), w); }, {"4-D input", "[3, 5, 5]"});
  expect_error([&] { conv2d(x, zeros({4, 3, 3})); }, {"4-D weight", "[4, 3, 3]"});
  expect_error([&] { conv2d(zeros({2, 2, 5, 5}), w); }, {"3 channels", "got 2 channels"});
  expect_error([&] { conv2d(x, w, zeros({3})); }, {"bias of shape [4]", "got [3]"});
  expect_error([&] { conv2d(zeros({2, 3, 2, 2}), w); }, {"larger than the padded input", "3 positions", "2"});
  Conv2dOptions o;
  o.stride = {0, 1};
  expect_error([&] { conv2d(x, w, Tensor(), o); }, {"stride", "at least 1", "(0, 1)"});
  o = {};
  o.dilation = {1, -1};
  expect_error([&] { conv2d(x, w, Tensor(), o); }, {"dilation", "(1, -1)"});
  o = {};
  o.padding = {-1, 0};
  expect_error([&] { conv2d(x, w, Tensor(), o); }, {"padding", "(-1, 0)"});
  o = {};
  o.groups = 2;
  expect_error([&] { conv2d(zeros({2, 4, 5, 5}), zeros({3, 2, 3, 3}), Tensor(), o); }, {"divisible by groups"});
  o.groups = 0;
  expect_error([&] { conv2d(x, w, Tensor(), o); }, {"groups must be at least 1"});
  expect_error([&] { conv2d(x, w.to(DType::Float64)); }, {"same dtype"});
}

BOOST_AUTO_TEST_SUITE_END()

// ---- Pooling ------------------------------------------------------------------------------------

BOOST_AUTO_TEST_SUITE(pool2d_ops)

BOOST_AUTO_TEST_CASE(gradcheck_each_pooling) {
  struct Case {
    Shape x;
    Pool2dOptions o;
  };
  std::vector<Case> cases;
  for (int64_t k : {2, 3})
    for (int64_t s : {0, 1, 2})
      for (int64_t p = 0; p <= k / 2; ++p) {
        Pool2dOptions o;
        o.kernel = {k, k}, o.stride = {s, s}, o.padding = {p, p};
        cases.push_back({{2, 2, 5, 6}, o});
      }
  Pool2dOptions dilated;
  dilated.kernel = {3, 2}, dilated.stride = {1, 2}, dilated.padding = {1, 1}, dilated.dilation = {2, 1};
  unsigned seed = 400;
  for (const Case& c : cases) {
    const std::string what = "kernel " + std::to_string(c.o.kernel[0]) + " stride " + std::to_string(c.o.stride[0]) +
                             " padding " + std::to_string(c.o.padding[0]);
    const Pool2dOptions o = c.o;
    // Distinct values: no tie within a finite-difference step, so the max is differentiable.
    expect_gradcheck("max_pool2d " + what, [o](const In& v) { return max_pool2d(v[0], o); },
                     {normlab::test::distinct_input(c.x, ++seed)});
    Pool2dOptions no_pad = o;
    no_pad.count_include_pad = false;
    expect_gradcheck("avg_pool2d " + what, [o](const In& v) { return avg_pool2d(v[0], o); },
                     {random_input(c.x, ++seed)});
    expect_gradcheck("avg_pool2d count_include_pad=false " + what,
                     [no_pad](const In& v) { return avg_pool2d(v[0], no_pad); }, {random_input(c.x, ++seed)});
  }
  expect_gradcheck("max_pool2d dilated", [dilated](const In& v) { return max_pool2d(v[0], dilated); },
                   {normlab::test::distinct_input({2, 2, 7, 6}, ++seed)});
  for (std::array<int64_t, 2> out : {std::array<int64_t, 2>{1, 1}, {2, 3}, {4, 4}, {7, 6}})
    expect_gradcheck("adaptive_avg_pool2d " + std::to_string(out[0]) + "x" + std::to_string(out[1]),
                     [out](const In& v) { return adaptive_avg_pool2d(v[0], out); },
                     {random_input({2, 3, 5, 6}, ++seed)});
}

BOOST_AUTO_TEST_CASE(max_pool_ties_and_nan_as_pytorch) {
  // A window of equal values sends the gradient to the first; a NaN is the maximum (the last NaN).
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Pool2dOptions o;
  o.kernel = {2, 2};
  Tensor x = tensor({1, 1, 1, 1, nan, 2, 3, nan}, {1, 2, 2, 2}, DType::Float64);
  x.requires_grad_();
  Tensor y = max_pool2d(x, o);
  BOOST_TEST(y.flat(0) == 1.0);
  BOOST_TEST(std::isnan(y.flat(1)));
  y.backward(tensor({10, 20}, {1, 2, 1, 1}, DType::Float64));
  BOOST_TEST((x.grad().to_vector() == std::vector<double>{10, 0, 0, 0, 0, 0, 0, 20}));
  // A window of -inf: the first position inside the image.
  const double inf = std::numeric_limits<double>::infinity();
  o.kernel = {3, 3}, o.stride = {1, 1}, o.padding = {1, 1};
  Tensor m = full({1, 1, 2, 2}, -inf, DType::Float64);
  m.requires_grad_();
  Tensor ym = max_pool2d(m, o);
  ym.backward(ones_like(ym));
  BOOST_TEST((m.grad().to_vector() == std::vector<double>{4, 0, 0, 0}));
}

BOOST_AUTO_TEST_CASE(pytorch_parity) {
  normlab::test::Fixture fx("pool2d");
  const auto pair = [&](const std::string& key) {
    const auto j = nlohmann::json::parse(fx.meta(key));
    if (j.is_number()) return std::array<int64_t, 2>{j.get<int64_t>(), j.get<int64_t>()};
    return std::array<int64_t, 2>{j.at(0).get<int64_t>(), j.at(1).get<int64_t>()};
  };
  const auto has = [&](const std::string& key) { return fx.metadata().count(key) > 0; };
  std::vector<std::string> names;
  for (const auto& [key, value] : fx.metadata()) {
    const auto dot = key.find('.');
    if (dot == std::string::npos) continue;
    const std::string c = key.substr(0, dot);
    if (names.empty() || names.back() != c) names.push_back(c);
  }
  int cases = 0;
  for (const std::string& c : names) {
    const bool adaptive = c.rfind("adaptive", 0) == 0, is_max = c.rfind("max", 0) == 0;
    Pool2dOptions o;
    if (!adaptive) {
      o.kernel = pair(c + ".kernel_size");
      if (has(c + ".stride")) o.stride = pair(c + ".stride");
      if (has(c + ".padding")) o.padding = pair(c + ".padding");
      if (has(c + ".dilation")) o.dilation = pair(c + ".dilation");
      if (has(c + ".count_include_pad")) o.count_include_pad = fx.meta(c + ".count_include_pad") == "true";
    }
    for (const std::string dt : {"f32", "f64"}) {
      BOOST_TEST_CONTEXT(dt << "." << c) {
        const std::string p = dt + "." + c + ".";
        Tensor x = fx.get(p + "input").detach().clone();
        x.requires_grad_();
        Tensor y = adaptive ? adaptive_avg_pool2d(x, pair(c + ".output_size"))
                   : is_max ? max_pool2d(x, o)
                            : avg_pool2d(x, o);
        y.backward(fx.get(p + "grad_output"));
        const double rtol = dt == "f32" ? 1e-6 : 1e-12, atol = dt == "f32" ? 1e-6 : 1e-14;
        BOOST_REQUIRE(y.shape() == fx.get(p + "output").shape());
        normlab::test::expect_elements_close(p + "output", y.to_vector(), fx.get(p + "output").to_vector(), rtol, atol);
        normlab::test::expect_elements_close(p + "grad_input", x.grad().to_vector(),
                                             fx.get(p + "grad_input").to_vector(), rtol, atol);
      }
    }
    ++cases;
  }
  BOOST_TEST(cases == 10);
}

BOOST_AUTO_TEST_CASE(bad_shapes_and_options_are_clear_errors) {
  Pool2dOptions o;
  o.kernel = {2, 2};
  expect_error([&] { max_pool2d(zeros({3, 4, 4}), o); }, {"max_pool2d", "4-D input", "[3, 4, 4]"});
  o.kernel = {5, 5};
  expect_error([&] { max_pool2d(zeros({1, 1, 4, 4}), o); }, {"max_pool2d", "larger than the padded input"});
  o.kernel = {2, 2}, o.padding = {2, 0};
  expect_error([&] { avg_pool2d(zeros({1, 1, 4, 4}), o); }, {"avg_pool2d", "at most half the kernel"});
  o.padding = {0, 0}, o.stride = {-1, -1};
  expect_error([&] { max_pool2d(zeros({1, 1, 4, 4}), o); }, {"stride", "(-1, -1)"});
  o.stride = {0, 0}, o.dilation = {2, 2};
  expect_error([&] { avg_pool2d(zeros({1, 1, 4, 4}), o); }, {"avg_pool2d", "no dilation"});
  expect_error([&] { adaptive_avg_pool2d(zeros({1, 1, 4, 4}), {0, 1}); }, {"output size", "(0, 1)"});
  expect_error([&] { adaptive_avg_pool2d(zeros({4, 4}), {1, 1}); }, {"4-D input"});
}

BOOST_AUTO_TEST_SUITE_END()
