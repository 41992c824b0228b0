// LSTM cell kernels, per-target Highway bodies (included once per target by lstm.cc). Each row of H
// units goes in full vectors, then a one-lane tail with the same lambda (ForRow), so H needs no
// masked loads and HWY_SCALAR (1 lane) just works.

#if defined(NORMLAB_AUTOGRAD_KERNELS_LSTM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_LSTM_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_LSTM_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_LSTM_INL_H_
#endif

#include <cstdint>

#include "autograd/kernels/elementwise-inl.h"  // Sigmoid, SafeTanh (NaN-propagating)
#include "autograd/kernels/loop-inl.h"         // ForRow, WithFlag
#include "autograd/kernels/lstm.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Gates and cell update (kOutput: also h = o tanh(c)) of rows 0..B-1; see lstm.h for the formulas.
template <typename T, bool kOutput>
void CellForward(int64_t B, int64_t H, const T* HWY_RESTRICT G, const T* HWY_RESTRICT c_prev, T* HWY_RESTRICT acts,
                 T* HWY_RESTRICT c, T* HWY_RESTRICT h) {
  for (int64_t b = 0; b < B; ++b) {
    const T* gr = G + b * 4 * H;
    const T* cp = c_prev + b * H;
    T* ar = acts + b * 4 * H;
    T* cr = c + b * H;
    T* hr = kOutput ? h + b * H : nullptr;
    ForRow<T>(H, [&](auto d, int64_t j) {
      const auto i = Sigmoid(d, hn::LoadU(d, gr + j));
      const auto f = Sigmoid(d, hn::LoadU(d, gr + H + j));
      const auto g = SafeTanh(d, hn::LoadU(d, gr + 2 * H + j));
      const auto o = Sigmoid(d, hn::LoadU(d, gr + 3 * H + j));
      hn::StoreU(i, d, ar + j);
      hn::StoreU(f, d, ar + H + j);
      hn::StoreU(g, d, ar + 2 * H + j);
      hn::StoreU(o, d, ar + 3 * H + j);
      const auto cv = hn::MulAdd(f, hn::LoadU(d, cp + j), hn::Mul(i, g));  // f c_prev + i g
      hn::StoreU(cv, d, cr + j);
      if constexpr (kOutput) hn::StoreU(hn::Mul(o, SafeTanh(d, cv)), d, hr + j);
    });
  }
}

// h = o tanh(y) over n elements.
template <typename T>
void OutputForward(int64_t n, const T* HWY_RESTRICT o, const T* HWY_RESTRICT y, T* HWY_RESTRICT h) {
  ForRow<T>(n, [&](auto d, int64_t j) {
    hn::StoreU(hn::Mul(hn::LoadU(d, o + j), SafeTanh(d, hn::LoadU(d, y + j))), d, h + j);
  });
}

// Backward of the update and of the o gate: with kOutput, of h = o tanh(c) too (dh is the gradient of
// h, which joins dc); without, dh is the gradient of the activation o (the gates half). A null dh or
// dc is zero (kDh, kDc false); a null dc_prev is not written.
template <typename T, bool kOutput, bool kDh, bool kDc, bool kDcPrev>
void CellBackwardT(int64_t B, int64_t H, const T* HWY_RESTRICT dh, const T* HWY_RESTRICT dc,
                   const T* HWY_RESTRICT acts, const T* HWY_RESTRICT c_prev, const T* HWY_RESTRICT c,
                   T* HWY_RESTRICT dG, T* HWY_RESTRICT dc_prev) {
  for (int64_t b = 0; b < B; ++b) {
    const T* ar = acts + b * 4 * H;
    T* dr = dG + b * 4 * H;
    const int64_t r = b * H;
    ForRow<T>(H, [&](auto d, int64_t j) {
      const auto one = hn::Set(d, T(1));
      const auto i = hn::LoadU(d, ar + j), f = hn::LoadU(d, ar + H + j), g = hn::LoadU(d, ar + 2 * H + j);
      auto dct = kDc ? hn::LoadU(d, dc + r + j) : hn::Zero(d);
      if constexpr (kOutput) {
        const auto o = hn::LoadU(d, ar + 3 * H + j);
        const auto t = SafeTanh(d, hn::LoadU(d, c + r + j));
        const auto gh = kDh ? hn::LoadU(d, dh + r + j) : hn::Zero(d);
        const auto gho = hn::Mul(gh, o);
        dct = hn::MulAdd(gho, hn::NegMulAdd(t, t, one), dct);  // dc + dh o (1 - t^2)
        hn::StoreU(hn::Mul(hn::Mul(gho, t), hn::Sub(one, o)), d, dr + 3 * H + j);  // dh t o (1 - o)
      } else {
        const auto o = hn::LoadU(d, ar + 3 * H + j);
        const auto d_o = kDh ? hn::LoadU(d, dh + r + j) : hn::Zero(d);
        hn::StoreU(hn::Mul(d_o, hn::Mul(o, hn::Sub(one, o))), d, dr + 3 * H + j);  // do o (1 - o)
      }
      hn::StoreU(hn::Mul(hn::Mul(dct, g), hn::Mul(i, hn::Sub(one, i))), d, dr + j);
      hn::StoreU(hn::Mul(hn::Mul(dct, hn::LoadU(d, c_prev + r + j)), hn::Mul(f, hn::Sub(one, f))), d, dr + H + j);
      hn::StoreU(hn::Mul(hn::Mul(dct, i), hn::NegMulAdd(g, g, one)), d, dr + 2 * H + j);
      if constexpr (kDcPrev) hn::StoreU(hn::Mul(dct, f), d, dc_prev + r + j);
    });
  }
}

template <typename T, bool kOutput>
void CellBackward(int64_t B, int64_t H, const T* dh, const T* dc, const T* acts, const T* c_prev, const T* c, T* dG,
                  T* dc_prev) {
  WithFlag(dh != nullptr, [&](auto kdh) {
    WithFlag(dc != nullptr, [&](auto kdc) {
      WithFlag(dc_prev != nullptr, [&](auto kdp) {
        CellBackwardT<T, kOutput, decltype(kdh)::value, decltype(kdc)::value, decltype(kdp)::value>(
            B, H, dh, dc, acts, c_prev, c, dG, dc_prev);
      });
    });
  });
}

// do = dh t, dy = dh o (1 - t^2), t = tanh(y), over n elements.
template <typename T>
void OutputBackward(int64_t n, const T* HWY_RESTRICT dh, const T* HWY_RESTRICT o, const T* HWY_RESTRICT y,
                    T* HWY_RESTRICT d_o, T* HWY_RESTRICT dy) {
  ForRow<T>(n, [&](auto d, int64_t j) {
    const auto g = hn::LoadU(d, dh + j), t = SafeTanh(d, hn::LoadU(d, y + j));
    hn::StoreU(hn::Mul(g, t), d, d_o + j);
    hn::StoreU(hn::Mul(hn::Mul(g, hn::LoadU(d, o + j)), hn::NegMulAdd(t, t, hn::Set(d, T(1)))), d, dy + j);
  });
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
