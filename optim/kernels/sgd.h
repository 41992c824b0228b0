// SGD update kernel (public header, no SIMD types): one fused pass over a parameter, its gradient
// and its momentum buffer. Highway body in sgd-inl.h, dispatch in sgd.cc; the scalar reference in
// namespace ref below defines what every SIMD target must compute.
#pragma once
#include <cstdint>

namespace normlab::optim::kernels {

// The hyper-parameters of one SGD step on one parameter (see optim/sgd.h for their meaning).
struct SGDStep {
  double lr = 0;
  double momentum = 0;      // 0: no momentum buffer (buf is neither read nor written, may be null)
  double dampening = 0;
  double weight_decay = 0;  // 0: no decay term (theta is not added to the gradient)
  bool nesterov = false;
  bool maximize = false;
  bool first = false;       // the buffer is new: buf = g, not momentum * buf + (1 - dampening) * g
};

// One SGD step in place over n elements: theta (n) and buf (n, or null when momentum is 0) are
// updated, grad (n) is read. PyTorch's rule (torch.optim.SGD's documentation), per element:
//   g = maximize ? -grad : grad;  if weight_decay: g = g + weight_decay * theta
//   if momentum: buf = first ? g : momentum * buf + (1 - dampening) * g
//                g = nesterov ? g + momentum * buf : buf
//   theta = theta - lr * g
void sgd_step(const SGDStep& s, int64_t n, float* theta, const float* grad, float* buf);
void sgd_step(const SGDStep& s, int64_t n, double* theta, const double* grad, double* buf);
// The name of the Highway target the SGD dispatcher picks now (e.g. "AVX2"), for tests.
const char* active_target();

// ---- Scalar reference: what the Highway kernel must compute --------------------------------------
namespace ref {

// The hyper-parameters are rounded to T first, as PyTorch passes them to its float kernels.
template <typename T>
void sgd_step(const SGDStep& s, int64_t n, T* theta, const T* grad, T* buf) {
  const T lr = static_cast<T>(s.lr), m = static_cast<T>(s.momentum);
  const T keep = static_cast<T>(1 - s.dampening), wd = static_cast<T>(s.weight_decay);
  for (int64_t i = 0; i < n; ++i) {
    T g = s.maximize ? -grad[i] : grad[i];
    if (s.weight_decay != 0) g = g + wd * theta[i];
    if (s.momentum != 0) {
      buf[i] = s.first ? g : buf[i] * m + keep * g;
      g = s.nesterov ? g + m * buf[i] : buf[i];
    }
    theta[i] = theta[i] - lr * g;
  }
}

}  // namespace ref
}  // namespace normlab::optim::kernels
