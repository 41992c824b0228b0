// NoisyBatchNorm: BatchNorm, then a random per-unit scale and shift drawn at every training step.
#include "nn/noisy_batchnorm.h"

#include <cmath>
#include <vector>

#include "autograd/elementwise.h"
#include "autograd/generator.h"
#include "base/error.h"
#include "autograd/shape.h"
#include "base/format.h"

namespace normlab::nn {

using autograd::shape_str;

namespace {

void check_bounds(const std::string& who, const char* what, double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi))
    throw Error(who + ": the " + what + "'s bounds must be finite with lo < hi, got [" + base::py_float(lo) + ", " +
                base::py_float(hi) + ")");
}

}  // namespace

void check_noise(const NoiseOptions& noise, const std::string& who) {
  check_bounds(who, "scale", noise.scale_lo, noise.scale_hi);
  check_bounds(who, "shift", noise.shift_lo, noise.shift_hi);
}

NoiseAffine noise_affine(const NoiseOptions& noise, int64_t c, uint64_t seed, uint64_t step, bool draw,
                         const autograd::Shape& view, DType dtype) {
  std::vector<double> s(static_cast<size_t>(c)), m(static_cast<size_t>(c));
  if (draw) {
    // Step k's noise, from a generator seeded by (seed, k) alone: s_c ~ U[scale), m_c ~ U[shift).
    autograd::Generator gen(seed ^ (0x9E3779B97F4A7C15ull * (step + 1)));
    for (double& v : s) v = gen.uniform(noise.scale_lo, noise.scale_hi);
    for (double& v : m) v = gen.uniform(noise.shift_lo, noise.shift_hi);
  } else {
    // Evaluation: the noise's expectation, the transform the next layer saw on average in training.
    for (double& v : s) v = 0.5 * (noise.scale_lo + noise.scale_hi);
    for (double& v : m) v = 0.5 * (noise.shift_lo + noise.shift_hi);
  }
  return {autograd::tensor(s, view, dtype), autograd::tensor(m, view, dtype)};
}

NoisyBatchNorm::NoisyBatchNorm(int64_t num_features, bool image, uint64_t seed, NoiseOptions noise, DType dtype)
    : BatchNorm("NoisyBatchNorm", num_features, 1e-5, 0.1, true, true, dtype),
      image_(image), seed_(seed), noise_(noise) {
  check_noise(noise, "NoisyBatchNorm");
  step_ = register_buffer("noise_step", autograd::zeros({}, dtype));
}

void NoisyBatchNorm::check_input(const Tensor& x) const {
  const std::string c = std::to_string(num_features());
  if (image_ ? x.dim() != 4 : x.dim() != 2 && x.dim() != 3)
    throw Error(std::string("NoisyBatchNorm: expected ") + (image_ ? "4D" : "2D or 3D") + " input (got " +
                std::to_string(x.dim()) + "D input of size " + shape_str(x.shape()) + ")");
  if (x.size(1) != num_features())
    throw Error("NoisyBatchNorm(" + c + "): expected input of shape " +
                (image_ ? "(N, " + c + ", H, W)" : "(N, " + c + ") or (N, " + c + ", L)") + ", but got input of size " +
                shape_str(x.shape()));
}

Tensor NoisyBatchNorm::forward(const Tensor& x) {
  const Tensor y = BatchNorm::forward(x);
  const bool draw = is_training() && noise_enabled_;
  const auto k = static_cast<uint64_t>(step_.item());
  // (C) viewed as (1, C, 1, ...): it broadcasts over the batch and the positions.
  autograd::Shape view(static_cast<size_t>(x.dim()), 1);
  view[1] = num_features();
  const NoiseAffine n = noise_affine(noise_, num_features(), seed_, k, draw, view, x.dtype());
  if (draw) step_.set_flat(0, static_cast<double>(k + 1));
  return autograd::add(autograd::mul(y, n.scale), n.shift);  // s_c BN(x)_c + m_c
}

std::string NoisyBatchNorm::repr() const {
  std::string r = BatchNorm::repr();
  r.pop_back();  // its ")"
  return r + ", scale=U[" + base::py_float(noise_.scale_lo) + ", " + base::py_float(noise_.scale_hi) + "), shift=U[" +
         base::py_float(noise_.shift_lo) + ", " + base::py_float(noise_.shift_hi) + "))";
}

}  // namespace normlab::nn
