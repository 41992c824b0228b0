// The Winograd F(2x2, 3x3) kernels (autograd/kernels/winograd.h): the Highway block transforms
// give the scalar references' bits on every compiled target, in float and double, for row widths
// around the vector lengths, every padding, blocks that start and end inside images and tiles cut
// off by odd output sizes; the output transform writes nothing outside the output; and the whole
// convolution and weight gradient agree with direct sums.
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "autograd/kernels/winograd.h"
#include "tests/support/targets.h"

namespace k = normlab::autograd::kernels;
namespace w = normlab::autograd::kernels::winograd;

namespace {

// A plan for images (channels, h, w) under padding (ph, pw) with `outputs` output channels.
w::Plan make_plan(int64_t channels, int64_t outputs, int64_t h, int64_t wd, int64_t ph, int64_t pw) {
  w::Plan p;
  p.g.channels = channels, p.g.h = h, p.g.w = wd, p.g.kh = p.g.kw = 3, p.g.pad_h = ph, p.g.pad_w = pw;
  p.g.oh = h + 2 * ph - 2, p.g.ow = wd + 2 * pw - 2;
  p.outputs = outputs;
  return p;
}

// Deterministic values in [-1, 1) that are not round numbers.
template <typename T>
std::vector<T> values(size_t n, unsigned seed) {
  std::vector<T> v(n);
  uint64_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<T>(static_cast<double>(s >> 11) / 9007199254740992.0 * 2 - 1);
  }
  return v;
}

struct Geometry {
  int64_t h, w, ph, pw;
};

// Widths around 4, 8 and 16 lanes (tiles per row = (w + 2 pw - 1) / 2), all paddings.
std::vector<Geometry> geometries() {
  std::vector<Geometry> gs;
  for (int64_t wd : {1, 2, 3, 6, 7, 9, 14, 15, 17, 30, 33, 35})
    for (int64_t p : {0, 1, 2})
      if (wd + 2 * (2 - p) >= 3) gs.push_back({wd % 5 + 3, wd, p, 2 - p});
  gs.push_back({1, 9, 1, 1});
  return gs;
}

std::string geo_str(const Geometry& g) {
  return "image " + std::to_string(g.h) + "x" + std::to_string(g.w) + " padding " + std::to_string(g.ph) + "," +
         std::to_string(g.pw);
}

template <typename T>
void check_transforms(const Geometry& geo) {
  const int64_t C = 3, O = 2, images = 3;
  const w::Plan p = make_plan(C, O, geo.h, geo.w, geo.ph, geo.pw);
  const int64_t th = p.tiles_h(), tw = p.tiles_w(), rows = images * th;
  const int64_t image = C * geo.h * geo.w, out_image = O * p.g.oh * p.g.ow;
  const auto x = values<T>(static_cast<size_t>(images * image), 1);
  const auto dy = values<T>(static_cast<size_t>(images * out_image), 2);
  std::vector<T> scratch(static_cast<size_t>((2 * rows + 2) * (2 * tw + 2 * w::kSlack + 2)));
  // Blocks: all rows at once, one row, and a block from inside the first image to inside the last.
  const std::pair<int64_t, int64_t> blocks[] = {{0, rows}, {th - 1, th}, {1, rows - 1}};
  for (const auto& [r0, r1] : blocks) {
    if (r1 <= r0) continue;
    const int64_t nb = (r1 - r0) * tw;
    BOOST_TEST_CONTEXT("tile rows " << r0 << ".." << r1) {
      for (int64_t rows_of : {C, O}) {
        const int64_t xs = rows_of * nb + w::kSlack;
        std::vector<T> got(static_cast<size_t>(16 * xs), T(7)), want(got.size(), T(7));
        if (rows_of == C) {
          w::input_transform_block(p, x.data(), image, r0, r1, got.data(), xs, scratch.data());
          w::ref::input_transform_block(p, x.data(), image, r0, r1, want.data(), xs);
        } else {
          w::grad_transform_block(p, dy.data(), out_image, r0, r1, got.data(), xs, scratch.data());
          w::ref::grad_transform_block(p, dy.data(), out_image, r0, r1, want.data(), xs);
        }
        bool same = true;
        for (int64_t xi = 0; xi < 16; ++xi)
          for (int64_t i = 0; i < rows_of * nb; ++i) same = same && got[xi * xs + i] == want[xi * xs + i];
        BOOST_TEST(same, (rows_of == C ? "input" : "gradient") << " transform differs from the reference");
      }
      // Output transform: the same bits, and nothing written outside the block's outputs.
      const int64_t xs = O * nb + w::kSlack;
      const auto m = values<T>(static_cast<size_t>(16 * xs), 3);
      const auto bias = values<T>(static_cast<size_t>(O), 4);
      std::vector<T> got(static_cast<size_t>(images * out_image), T(7)), want(got.size(), T(7));
      w::output_transform_block(p, m.data(), xs, bias.data(), got.data(), out_image, r0, r1);
      w::ref::output_transform_block(p, m.data(), xs, bias.data(), want.data(), out_image, r0, r1);
      BOOST_TEST((got == want), "output transform differs from the reference (or writes outside its tiles)");
    }
  }
}

// Direct sums in double: y (count, O, oh, ow) and the weight gradient dw (O, C, 3, 3) for dy.
void direct(const w::Plan& p, int64_t count, const std::vector<double>& x, const std::vector<double>& wt,
            const std::vector<double>& dy, std::vector<double>& y, std::vector<double>& dw) {
  const auto& g = p.g;
  y.assign(static_cast<size_t>(count * p.outputs * g.oh * g.ow), 0);
  dw.assign(static_cast<size_t>(p.outputs * g.channels * 9), 0);
  for (int64_t n = 0; n < count; ++n)
    for (int64_t o = 0; o < p.outputs; ++o)
      for (int64_t oy = 0; oy < g.oh; ++oy)
        for (int64_t ox = 0; ox < g.ow; ++ox) {
          const size_t yi = static_cast<size_t>(((n * p.outputs + o) * g.oh + oy) * g.ow + ox);
          for (int64_t c = 0; c < g.channels; ++c)
            for (int64_t i = 0; i < 3; ++i)
              for (int64_t j = 0; j < 3; ++j) {
                const int64_t iy = oy - g.pad_h + i, ix = ox - g.pad_w + j;
                if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
                const double xv = x[static_cast<size_t>(((n * g.channels + c) * g.h + iy) * g.w + ix)];
                const size_t wi = static_cast<size_t>(((o * g.channels + c) * 3 + i) * 3 + j);
                y[yi] += wt[wi] * xv;
                dw[wi] += dy[yi] * xv;
              }
        }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(winograd_kernels)

BOOST_AUTO_TEST_CASE(block_transforms_match_the_reference_on_every_target) {
  normlab::test::for_each_target([&] {
    for (const Geometry& g : geometries())
      BOOST_TEST_CONTEXT(geo_str(g)) {
        check_transforms<float>(g);
        check_transforms<double>(g);
      }
  });
}

BOOST_AUTO_TEST_CASE(convolution_and_weight_gradient_match_direct_sums) {
  normlab::test::for_each_target([&] {
    for (const Geometry& geo : geometries())
      BOOST_TEST_CONTEXT(geo_str(geo)) {
        const int64_t C = 3, O = 5, count = 2;
        const w::Plan p = make_plan(C, O, geo.h, geo.w, geo.ph, geo.pw);
        const int64_t image = C * geo.h * geo.w, out_image = O * p.g.oh * p.g.ow;
        const auto x = values<double>(static_cast<size_t>(count * image), 5);
        const auto wt = values<double>(static_cast<size_t>(O * C * 9), 6);
        const auto dy = values<double>(static_cast<size_t>(count * out_image), 7);
        std::vector<double> want_y, want_dw;
        direct(p, count, x, wt, dy, want_y, want_dw);
        std::vector<double> u(static_cast<size_t>(16 * O * C)), work(static_cast<size_t>(w::workspace(p)));
        std::vector<double> y(want_y.size()), du(u.size()), dw(want_dw.size());
        w::transform_filter(O, C, wt.data(), u.data());
        w::conv(p, u.data(), static_cast<const double*>(nullptr), x.data(), image, y.data(), out_image, count,
                work.data());
        w::weight_grad(p, x.data(), image, dy.data(), out_image, count, du.data(), false, work.data());
        w::filter_grad(O, C, du.data(), dw.data());
        double ey = 0, ew = 0;
        for (size_t i = 0; i < y.size(); ++i) ey = std::max(ey, std::abs(y[i] - want_y[i]));
        for (size_t i = 0; i < dw.size(); ++i) ew = std::max(ew, std::abs(dw[i] - want_dw[i]));
        BOOST_TEST(ey < 1e-13, "convolution differs from the direct sum by " << ey);
        BOOST_TEST(ew < 1e-13, "weight gradient differs from the direct sum by " << ew);
      }
  });
}

BOOST_AUTO_TEST_SUITE_END()
