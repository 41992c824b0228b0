// Softmax row kernels, per-target Highway bodies (included once per target by softmax.cc).

#if defined(NORMLAB_AUTOGRAD_KERNELS_SOFTMAX_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_SOFTMAX_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_SOFTMAX_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_SOFTMAX_INL_H_
#endif

#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/kernels/elementwise-inl.h"  // Map1
#include "autograd/kernels/reduce-inl.h"       // MaxNaN, Combine
#include "autograd/kernels/softmax.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Lanes(dd) values of type T at x, as doubles (float is promoted: the exponentials are computed in
// double for both types, as the scalar reference does).
template <class DD, typename T>
HWY_INLINE hn::Vec<DD> LoadAsDouble(DD dd, const T* x) {
  if constexpr (sizeof(T) == sizeof(double)) {
    return hn::LoadU(dd, x);
  } else {
    return hn::PromoteTo(dd, hn::LoadU(hn::Rebind<T, DD>(), x));
  }
}

// Stores the doubles v as Lanes(dd) values of type T at p (rounded to float for float).
template <class DD, typename T>
HWY_INLINE void StoreFromDouble(DD dd, hn::Vec<DD> v, T* p) {
  if constexpr (sizeof(T) == sizeof(double)) {
    hn::StoreU(v, dd, p);
  } else {
    const hn::Rebind<T, DD> dt;
    hn::StoreU(hn::DemoteTo(dt, v), dt, p);
  }
}

// The passes over a row of c >= Lanes(d) values go in vectors of Lanes(d) doubles: whole vectors,
// then, when Lanes(d) does not divide c, one more vector ending at c that overlaps the one before
// it by `skip` lanes. So there are no partial loads (rows are not padded) and no one-lane tail (a
// 10-class row on AVX-512 is 2 vectors of 8 doubles, not 8 + 2 single lanes). The overlapped lanes
// are harmless for the max, masked out of the sum, and recomputed to the same values in the
// exponentials; the normalization reads the last vector before rescaling the ones before it.
struct RowSplit {
  int64_t body;  // whole vectors cover [0, body)
  int64_t last;  // the last vector starts at c - Lanes(d)
  int64_t skip;  // ... and repeats its first `skip` lanes (0: no last vector)
};

template <class D>
HWY_INLINE RowSplit SplitRow(D d, int64_t c) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const int64_t body = c / N * N;
  return {body, c - N, body == c ? 0 : N - (c - body)};
}

// First pass over a row: m = max_j x_j and e_j = e^(x_j - m) into p; returns s = sum_j e_j.
// A row with no finite max (a NaN, a +inf, or only -inf) gets m = NaN and p all NaN, and returns 1.
// The contrib Exp returns 0 for NaN (Highway 1.0.3), so that case is caught by the max, before any
// exponential: the NaN-propagating max is NaN if any x is NaN, +inf if any is +inf (x - m is then
// inf - inf), -inf if all are -inf.
template <class D, typename T>
HWY_INLINE double RowExp(D d, int64_t c, const T* x, T* p, double& m) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const RowSplit r = SplitRow(d, c);
  auto vmax = hn::Set(d, -std::numeric_limits<double>::infinity());
  for (int64_t j = 0; j < r.body; j += N) vmax = MaxNaN(d, vmax, LoadAsDouble(d, x + j));
  if (r.skip) vmax = MaxNaN(d, vmax, LoadAsDouble(d, x + r.last));
  // Lanes in a fixed order (not MaxOfLanes/SumOfLanes, whose order differs between targets).
  HWY_ALIGN double lanes[hn::MaxLanes(d)];
  hn::Store(vmax, d, lanes);
  m = lanes[0];
  for (int64_t l = 1; l < N; ++l) m = Combine(ReduceOp::Max, m, lanes[l]);
  if (!std::isfinite(m)) {
    std::fill(p, p + c, std::numeric_limits<T>::quiet_NaN());
    m = std::numeric_limits<double>::quiet_NaN();
    return 1;
  }
  // e_j in (0, 1] (x_j - m is exact in double). One accumulator is enough: the Exp polynomial, not
  // the add latency, bounds the loop.
  const auto vm = hn::Set(d, m);
  const auto exp_store = [&](int64_t j) {
    const auto e = hn::Exp(d, hn::Sub(LoadAsDouble(d, x + j), vm));
    StoreFromDouble(d, e, p + j);
    return e;
  };
  auto acc = hn::Zero(d);
  for (int64_t j = 0; j < r.body; j += N) acc = hn::Add(acc, exp_store(j));
  if (r.skip) acc = hn::Add(acc, hn::IfThenZeroElse(hn::FirstN(d, static_cast<size_t>(r.skip)), exp_store(r.last)));
  hn::Store(acc, d, lanes);
  double s = 0;
  for (int64_t l = 0; l < N; ++l) s += lanes[l];
  return s;  // >= 1: the max's term is e^0 = 1
}

// Second pass: p_j = e_j / s (float: e_j was rounded to float, then times 1/s in double, rounded
// once more).
template <class D, typename T>
HWY_INLINE void RowScale(D d, int64_t c, double inv_s, T* p) {
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  const RowSplit r = SplitRow(d, c);
  const auto v = hn::Set(d, inv_s);
  auto p_last = hn::Zero(d);
  if (r.skip) p_last = hn::Mul(LoadAsDouble(d, p + r.last), v);
  for (int64_t j = 0; j < r.body; j += N) StoreFromDouble(d, hn::Mul(LoadAsDouble(d, p + j), v), p + j);
  if (r.skip) StoreFromDouble(d, p_last, p + r.last);
}

// Rows go by blocks of kBlock: the exponentials of each row, then one vector Log of the block's
// sums (std::log per row took a third of the time of 10-class rows), then each row's scaling and
// loss. The blocks' arrays are on the stack, and the loss is summed in row order whatever the
// thread count.
constexpr int64_t kBlock = 16;

template <class D, typename T>
HWY_INLINE double CrossEntropyRows(D d, int64_t rows, int64_t c, const T* x, const int64_t* target, T* p) {
  const hn::ScalableTag<double> dl;
  const int64_t NL = static_cast<int64_t>(hn::Lanes(dl));
  static_assert(kBlock % hn::MaxLanes(dl) == 0, "the Log takes whole vectors of a block");
  HWY_ALIGN double m[kBlock], s[kBlock], log_s[kBlock];
  double acc = 0;
  for (int64_t i0 = 0; i0 < rows; i0 += kBlock) {
    const int64_t nb = std::min(kBlock, rows - i0);
    for (int64_t b = 0; b < nb; ++b) s[b] = RowExp(d, c, x + (i0 + b) * c, p + (i0 + b) * c, m[b]);
    std::fill(s + nb, s + kBlock, 1.0);
    // s >= 1: log s is well conditioned.
    for (int64_t b = 0; b < kBlock; b += NL) hn::Store(hn::Log(dl, hn::Load(dl, s + b)), dl, log_s + b);
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t i = i0 + b;
      if (!std::isnan(m[b])) RowScale(d, c, 1 / s[b], p + i * c);
      // -log p_it = -(x_it - m - log s): NaN for a row with no finite max
      if (target) acc -= static_cast<double>(x[i * c + target[i]]) - m[b] - log_s[b];
    }
  }
  return acc;
}

// Rows shorter than a vector of doubles (e.g. 2 classes, or fewer than 8 on AVX-512) go one lane
// at a time.
template <typename T>
double CrossEntropyForward(int64_t rows, int64_t c, const T* x, const int64_t* target, T* p) {
  const hn::ScalableTag<double> dd;
  if (c == 0) return 0;
  if (c >= static_cast<int64_t>(hn::Lanes(dd))) return CrossEntropyRows(dd, rows, c, x, target, p);
  return CrossEntropyRows(hn::CappedTag<double, 1>(), rows, c, x, target, p);
}

// dx = p * scale over the whole (rows, c) block in full vectors, then the target of each row.
template <typename T>
void CrossEntropyBackward(int64_t rows, int64_t c, const T* p, const int64_t* target, double scale, T* dx) {
  const T s = static_cast<T>(scale);
  Map1<false>(rows * c, p, dx, [s](auto d, auto v) { return hn::Mul(v, hn::Set(d, s)); });
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t k = i * c + target[i];
    dx[k] = (p[k] - 1) * s;
  }
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
