// The Winograd F(2x2, 3x3) kernels (autograd/kernels/winograd.h): the Highway block transforms
// give the scalar references' bits on every compiled target, in float and double, for row widths
// around the vector lengths, every padding, blocks that start and end inside images and tiles cut
// off by odd output sizes; the output transform writes nothing outside the output; the whole
// convolution and weight gradient agree with direct sums; and the filter transforms agree with the
// matrix products.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <utility>
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

// The filter transforms on more filters than one staging run (16) in both directions, with
// partial runs (O = 21, C = 35) and with planes a multiple of 4 KiB apart (O = 64, C = 32): every
// value equals G g G^T (or G^T q G) written out with the matrices, and the flipped transform is
// the transform of the filter turned by 180 degrees, with O and C swapped.
BOOST_AUTO_TEST_CASE(filter_transforms_match_the_matrix_products) {
  const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  for (auto [O, C] : {std::pair<int64_t, int64_t>{21, 35}, {64, 32}})
    BOOST_TEST_CONTEXT("O " << O << " C " << C) {
      const auto wt = values<double>(static_cast<size_t>(O * C * 9), 8);
      const auto du = values<double>(static_cast<size_t>(16 * O * C), 9);
      std::vector<double> u(static_cast<size_t>(16 * O * C)), uf(u.size()), dw(wt.size());
      w::transform_filter(O, C, wt.data(), u.data());
      w::transform_filter_flipped(O, C, wt.data(), uf.data());
      w::filter_grad(O, C, du.data(), dw.data());
      double eu = 0, ef = 0, eg = 0;
      for (int64_t a = 0; a < O; ++a)
        for (int64_t b = 0; b < C; ++b) {
          const double* g = wt.data() + (a * C + b) * 9;
          for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) {
              double v = 0, vf = 0;  // (G g G^T)[i][j], and the same for g turned by 180 degrees
              for (int r = 0; r < 3; ++r)
                for (int t = 0; t < 3; ++t) {
                  v += G[i][r] * g[3 * r + t] * G[j][t];
                  vf += G[i][r] * g[8 - 3 * r - t] * G[j][t];
                }
              const int64_t xi = 4 * i + j;
              eu = std::max(eu, std::abs(u[static_cast<size_t>((xi * O + a) * C + b)] - v));
              ef = std::max(ef, std::abs(uf[static_cast<size_t>((xi * C + b) * O + a)] - vf));
            }
          for (int r = 0; r < 3; ++r)
            for (int t = 0; t < 3; ++t) {
              double v = 0;  // (G^T q G)[r][t]
              for (int i = 0; i < 4; ++i)
                for (int j = 0; j < 4; ++j) v += G[i][r] * du[static_cast<size_t>(((4 * i + j) * O + a) * C + b)] * G[j][t];
              eg = std::max(eg, std::abs(dw[static_cast<size_t>((a * C + b) * 9 + 3 * r + t)] - v));
            }
        }
      BOOST_TEST(eu < 1e-14, "transform_filter differs by " << eu);
      BOOST_TEST(ef < 1e-14, "transform_filter_flipped differs by " << ef);
      BOOST_TEST(eg < 1e-14, "filter_grad differs by " << eg);
    }
}

BOOST_AUTO_TEST_SUITE_END()
