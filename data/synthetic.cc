// Seeded synthetic classification sets: each class drawn in turn, noise added, rows shuffled.
#include "data/synthetic.h"

#include <cmath>
#include <functional>

namespace normlab::data {

namespace {

using autograd::Generator;

// Draws one point of class c into out (d values), without noise.
using Sampler = std::function<void(int64_t c, Generator& gen, double* out)>;

Dataset generate(const std::string& name, int64_t n, double noise, uint64_t seed, int64_t k, int64_t d,
                 const Sampler& sample) {
  check(n >= k, name + ": n must be at least the number of classes (" + std::to_string(k) + "), got " +
                    std::to_string(n));
  check(std::isfinite(noise) && noise >= 0, name + ": noise must be a finite number >= 0, got " +
                                                std::to_string(noise));
  Generator gen(seed);
  std::vector<double> x(n * d);
  std::vector<int64_t> labels(n);
  int64_t i = 0;
  for (int64_t c = 0; c < k; ++c) {
    const int64_t count = n / k + (c < n % k ? 1 : 0);
    for (int64_t j = 0; j < count; ++j, ++i) {
      sample(c, gen, &x[i * d]);
      for (int64_t f = 0; f < d; ++f) x[i * d + f] += noise * gen.normal();
      labels[i] = c;
    }
  }
  // Fisher-Yates shuffle of the rows, so that any prefix mixes the classes.
  std::vector<int64_t> order(n);
  for (int64_t r = 0; r < n; ++r) order[r] = r;
  for (int64_t r = n - 1; r > 0; --r) std::swap(order[r], order[gen.randint(r + 1)]);

  Dataset ds;
  ds.name = name;
  ds.num_classes = k;
  for (int64_t c = 0; c < k; ++c) ds.class_names.push_back(std::to_string(c));
  ds.x = autograd::empty({n, d});
  float* xs = ds.x.data<float>();
  ds.labels.resize(n);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t f = 0; f < d; ++f) xs[r * d + f] = static_cast<float>(x[order[r] * d + f]);
    ds.labels[r] = labels[order[r]];
  }
  return ds;
}

}  // namespace

Dataset make_spirals(int64_t n, double noise, uint64_t seed, double turns) {
  check(std::isfinite(turns) && turns > 0, "spirals: turns must be > 0, got " + std::to_string(turns));
  return generate("spirals", n, noise, seed, 2, 2, [turns](int64_t c, Generator& g, double* p) {
    const double t = std::sqrt(g.uniform(0.0025, 1.0));
    const double a = 2 * M_PI * turns * t + M_PI * static_cast<double>(c);
    p[0] = t * std::cos(a), p[1] = t * std::sin(a);
  });
}

Dataset make_moons(int64_t n, double noise, uint64_t seed) {
  return generate("moons", n, noise, seed, 2, 2, [](int64_t c, Generator& g, double* p) {
    const double a = g.uniform(0.0, M_PI);
    if (c == 0) p[0] = std::cos(a), p[1] = std::sin(a);
    else p[0] = 1 - std::cos(a), p[1] = 0.5 - std::sin(a);
  });
}

Dataset make_circles(int64_t n, double noise, uint64_t seed, double factor) {
  check(factor > 0 && factor < 1, "circles: factor (inner radius) must be in (0, 1), got " +
                                      std::to_string(factor));
  return generate("circles", n, noise, seed, 2, 2, [factor](int64_t c, Generator& g, double* p) {
    const double a = g.uniform(0.0, 2 * M_PI), r = c == 0 ? 1.0 : factor;
    p[0] = r * std::cos(a), p[1] = r * std::sin(a);
  });
}

Dataset make_blobs(int64_t n, double noise, uint64_t seed, int64_t k, int64_t d, double box) {
  check(k >= 1, "blobs: the number of blobs k must be at least 1, got " + std::to_string(k));
  check(d >= 1, "blobs: the dimension d must be at least 1, got " + std::to_string(d));
  check(std::isfinite(box) && box > 0, "blobs: box must be > 0, got " + std::to_string(box));
  // Centres from their own stream (seed + a constant), so they do not depend on n.
  Generator cg(seed ^ 0x9E3779B97F4A7C15ull);
  std::vector<double> centres(k * d);
  for (double& v : centres) v = cg.uniform(-box, box);
  return generate("blobs", n, noise, seed, k, d, [&centres, d](int64_t c, Generator&, double* p) {
    for (int64_t f = 0; f < d; ++f) p[f] = centres[c * d + f];
  });
}

Dataset make_xor(int64_t n, double noise, uint64_t seed) {
  return generate("xor", n, noise, seed, 2, 2, [](int64_t c, Generator& g, double* p) {
    // |x0|, |x1| uniform in (0, 1]; class 0: same signs, class 1: opposite signs.
    const double a = 1.0 - g.uniform(), b = 1.0 - g.uniform();
    const double s = g.uniform() < 0.5 ? 1.0 : -1.0;
    p[0] = s * a, p[1] = (c == 0 ? s : -s) * b;
  });
}

const std::vector<std::string>& synthetic_names() {
  static const std::vector<std::string> names = {"spirals", "moons", "circles", "blobs", "xor"};
  return names;
}

Dataset make_synthetic(const std::string& name, int64_t n, double noise, uint64_t seed) {
  if (name == "spirals") return make_spirals(n, noise, seed);
  if (name == "moons") return make_moons(n, noise, seed);
  if (name == "circles") return make_circles(n, noise, seed);
  if (name == "blobs") return make_blobs(n, noise, seed);
  if (name == "xor") return make_xor(n, noise, seed);
  std::string known;
  for (const std::string& s : synthetic_names()) known += (known.empty() ? "" : ", ") + s;
  throw Error("unknown synthetic data set \"" + name + "\" (expected one of: " + known + ")");
}

}  // namespace normlab::data
