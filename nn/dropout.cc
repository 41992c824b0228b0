// Dropout: the masked forward and its backward side by side, and the module that owns the generator.
#include "nn/dropout.h"

#include <charconv>
#include <cmath>

namespace normlab::nn {

using autograd::dispatch;
using autograd::Needs;

namespace {

void check_p(double p, const char* op) {
  if (!(p >= 0 && p <= 1)) {  // also rejects NaN
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, p);
    throw Error(std::string(op) + ": dropout probability has to be between 0 and 1, but got " +
                std::string(buf, r.ptr));
  }
}

// Python's repr of a float: shortest round-trip digits, with ".0" on whole numbers (0.5, 1.0, 1e-05).
std::string py_float(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

Tensor dropout(const Tensor& x, double p, Generator& gen) {
  check_p(p, "dropout");
  const double scale = p < 1 ? 1 / (1 - p) : 0;  // p = 1 drops everything: zeros, not 0 * inf
  Tensor mask = autograd::empty(x.shape(), x.dtype());
  Tensor out = autograd::empty(x.shape(), x.dtype());
  dispatch(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* xs = x.data<T>();
    T* m = mask.data<T>();
    T* y = out.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) {
      m[i] = gen.uniform() >= p ? static_cast<T>(scale) : T(0);
      y[i] = xs[i] * m[i];
    }
  });
  // dx = dy * m: the backward keeps only the mask.
  return autograd::record("DropoutBackward", out, {x}, [mask = autograd::saved(mask)](const Tensor& g, const Needs&) {
    return std::vector<Tensor>{autograd::mul(g, mask)};
  });
}

Dropout::Dropout(double p, uint64_t seed) : p_(p), gen_(seed) { check_p(p, "Dropout"); }

Tensor Dropout::forward(const Tensor& x) {
  if (!is_training() || p_ == 0) return x;
  return dropout(x, p_, gen_);
}

std::string Dropout::repr() const { return "Dropout(p=" + py_float(p_) + ", inplace=False)"; }

}  // namespace normlab::nn
