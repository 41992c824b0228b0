// Matrix-multiply kernel, per-target Highway bodies (included once per target by gemm.cc): a
// packed, cache-blocked, register-tiled GEMM in the BLIS style, threaded with the kernels' thread
// pool (base/thread_pool.h).
//
// Loop nest (BLIS), for C (M, N) += op(A) (M, K) op(B) (K, N):
//   jc: N in panels of NC columns      (a packed B panel, KC x NC, stays in L3)
//     pc: K in blocks of KC             (the only loop that splits a dot product)
//       pack B(pc:pc+KC, jc:jc+NC) into micro-panels of NR columns (zero-padded)
//       ic: M in blocks of MC rows      (an A block, MC x KC, stays in L2)
//         pack A(ic:ic+MC, pc:pc+KC) into micro-panels of MR rows (zero-padded)
//         jr: NR columns at a time      (one B micro-panel, KC x NR, stays in L1)
//           ir: MR rows at a time       -> micro-kernel: an MR x NR tile of C in registers
// Packing is where op() happens: transposed operands are read in their stored layout and written
// into the same packed layout, so no transpose is ever materialized. Where packing does not pay
// (see Gemm), the micro-kernel reads A, or a non-transposed B, in place. Three shapes the tile
// fits badly have their own loops: few rows times B^T (dot products), A^T times 1..4 columns, and
// K of at most 16 with B not transposed (each row of C swept once).
//
// Threads (Gemm, GemmSharedB): batch items, row blocks (sharing the packed B panels) or column
// ranges, claimed dynamically.
//
// Determinism: each element of C is always computed as
//   C = [C +] acc(pc = 0), then C = C + acc(pc = KC), ..., where acc(pc) is an FMA chain over
//   p = pc .. pc+KC-1 in order, starting from 0.
// KC, the micro-kernel and the choice of loop (from the shape only) are fixed per target and
// dtype; which thread computes which tile, the padding, and whether an operand was packed change
// nothing in that sequence. So the result is bitwise identical for any thread count.

#if defined(NORMLAB_AUTOGRAD_KERNELS_GEMM_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NORMLAB_AUTOGRAD_KERNELS_GEMM_INL_H_
#undef NORMLAB_AUTOGRAD_KERNELS_GEMM_INL_H_
#else
#define NORMLAB_AUTOGRAD_KERNELS_GEMM_INL_H_
#endif

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/loop-inl.h"
#include "autograd/kernels/transpose-inl.h"  // TransposeSquare
#include "autograd/grain.h"
#include "hwy/aligned_allocator.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"

#include "base/thread_pool.h"

HWY_BEFORE_NAMESPACE();
namespace normlab::autograd::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Register tile: MR rows x NR = 2 vectors. On AVX2 (16 registers): 12 accumulators + 2 B vectors
// + 1 broadcast of A = 15 registers; 12 independent FMA chains cover 2 FMA ports x 4-5 cycles of
// latency. Float: 6 x 16, double: 6 x 8; SSE4: 6 x 8 / 6 x 4; HWY_SCALAR: 6 x 2.
constexpr size_t kMR = 6;

// Cache blocking. KC: a B micro-panel (KC x NR) fits in half of the 32 KiB L1d (float AVX2:
// 256 x 16 x 4 B = 16 KiB). MC: an A block (MC x KC) takes about 144 KiB of the 512 KiB L2.
// NC: a B panel (KC x NC) of 4 (float) to 8 MiB (double) in the 32 MiB L3. These are BLIS's
// Zen values. KC must not depend on the thread count (it splits the dot products).
constexpr size_t kKC = 256;

// The K block actually used: K split into ceil(K / kKC) equal blocks (784 -> 4 x 196, not
// 3 x 256 + 16, whose short last block would spend more on writing C than on FMAs). Depends on
// K only, so the sequence of operations for each element of C is fixed.
inline size_t BlockK(size_t K) {
  const size_t blocks = (K + kKC - 1) / kKC;
  return (K + blocks - 1) / blocks;
}
template <typename T>
constexpr size_t kMC = sizeof(T) == 4 ? 144 : 72;
constexpr size_t kNC = 4080;

// n columns rounded up to whole micro-panels of nr columns (the width of a packed B).
inline size_t WholePanels(size_t n, size_t nr) { return (n + nr - 1) / nr * nr; }

// Where the micro-kernel reads its operands: row r of A at a[r][p * a_step] (packed: a_step = MR,
// in place: 1 for A (M, K), M for A stored (K, M)); B's NR columns at b + p * b_step.
template <typename T>
struct TileOperands {
  const T* a[kMR];
  size_t a_step;
  const T* b;
  size_t b_step;
};

// Adds (or stores, when !add) one row of the register tile into C; when storing, adds the bias
// (the tile's columns of it) if there is one.
template <class D, class V, typename T = hn::TFromD<D>>
HWY_INLINE void PutRow(D d, V v0, V v1, T* HWY_RESTRICT c, bool add, const T* HWY_RESTRICT bias) {
  const size_t N = hn::Lanes(d);
  if (add) {
    v0 = hn::Add(hn::LoadU(d, c), v0);
    v1 = hn::Add(hn::LoadU(d, c + N), v1);
  } else if (bias) {
    v0 = hn::Add(hn::LoadU(d, bias), v0);
    v1 = hn::Add(hn::LoadU(d, bias + N), v1);
  }
  hn::StoreU(v0, d, c);
  hn::StoreU(v1, d, c + N);
}

// PutRow for the first nr (< 2 vectors) columns only; kMaskedAccessIsSafe targets only (loop-inl.h:
// the lanes past the tile may be another thread's columns, or past the end of C).
template <class D, class V, typename T = hn::TFromD<D>>
HWY_INLINE void PutRowMasked(D d, V v0, V v1, T* HWY_RESTRICT c, bool add, const T* HWY_RESTRICT bias, size_t nr) {
  const size_t N = hn::Lanes(d);
  const auto m0 = hn::FirstN(d, nr), m1 = hn::FirstN(d, nr > N ? nr - N : 0);
  if (add) {
    v0 = hn::Add(hn::MaskedLoad(m0, d, c), v0);
    v1 = hn::Add(hn::MaskedLoad(m1, d, c + N), v1);
  } else if (bias) {
    v0 = hn::Add(hn::MaskedLoad(m0, d, bias), v0);
    v1 = hn::Add(hn::MaskedLoad(m1, d, bias + N), v1);
  }
  hn::BlendedStore(v0, m0, d, c);
  hn::BlendedStore(v1, m1, d, c + N);
}

// The micro-kernel: acc (MR x NR) = sum_{p < kc} a(:, p) b(p, :) as FMA chains in registers,
// then C[r, j] = (add ? C[r, j] : bias ? bias[j] : 0) + acc[r, j] for the valid mr x nr part of
// the tile (bias: the tile's first column of it, only with C not transposed).
// kPackedA / kPackedB: the operand is packed (steps MR and NR known at compile time: one pointer,
// fixed offsets) rather than read in place with run-time steps. Only the first R rows are
// computed (R = 4 for an edge tile of at most 4 valid rows: 8 FMA chains still cover both FMA
// ports' latency, and no FMA is spent on padding rows); each computed element gets the same FMA
// chain whatever R is.
template <size_t R, bool kPackedA, bool kPackedB, class D, typename T = hn::TFromD<D>>
HWY_INLINE void MicroKernel(D d, size_t kc, const TileOperands<T>& op, T* HWY_RESTRICT c, size_t ldc, size_t c_cs,
                            size_t mr, size_t nr, bool add, const T* HWY_RESTRICT bias) {
  const size_t N = hn::Lanes(d);
  auto c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  auto c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d);
  auto c40 = hn::Zero(d), c41 = hn::Zero(d), c50 = hn::Zero(d), c51 = hn::Zero(d);
  // Start fetching the C tile now: with C larger than L2 its rows (N apart, often 4 KiB apart,
  // one L1 set) come from L3, and waiting for them at the write-back costs ~10% at 1024x1024.
  if (c_cs == 1)
    for (size_t r = 0; r < R; ++r) {
      hwy::Prefetch(c + r * ldc);
      hwy::Prefetch(c + r * ldc + 2 * N - 1);
    }
  const T* HWY_RESTRICT b = op.b;
  const size_t b_step = kPackedB ? 2 * N : op.b_step;
  // One step p: two vectors of B, each broadcast a(r, p) times both, into the 2 R accumulators.
#define NORMLAB_GEMM_ROW(r, Ar)                   \
  if constexpr (R > r) {                          \
    const auto av = hn::Set(d, Ar);               \
    c##r##0 = hn::MulAdd(av, b0, c##r##0);        \
    c##r##1 = hn::MulAdd(av, b1, c##r##1);        \
  }
#define NORMLAB_GEMM_STEP(A0, A1, A2, A3, A4, A5) \
  {                                               \
    const auto b0 = hn::LoadU(d, b);              \
    const auto b1 = hn::LoadU(d, b + N);          \
    b += b_step;                                  \
    NORMLAB_GEMM_ROW(0, A0)                       \
    NORMLAB_GEMM_ROW(1, A1)                       \
    NORMLAB_GEMM_ROW(2, A2)                       \
    NORMLAB_GEMM_ROW(3, A3)                       \
    NORMLAB_GEMM_ROW(4, A4)                       \
    NORMLAB_GEMM_ROW(5, A5)                       \
  }
  if constexpr (kPackedA) {
    // Not unrolled: GCC then keeps all 12 accumulators in registers (unrolled by hand, it
    // reorders the broadcasts and spills); 4 loop µops next to 20 vector µops are cheap.
    const T* HWY_RESTRICT a = op.a[0];  // a(r, p) = a[p * MR + r]
    for (size_t p = 0; p < kc; ++p, a += kMR) NORMLAB_GEMM_STEP(a[0], a[1], a[2], a[3], a[4], a[5]);
  } else {
    const T* HWY_RESTRICT a0 = op.a[0];
    const T* HWY_RESTRICT a1 = op.a[1];
    const T* HWY_RESTRICT a2 = op.a[2];
    const T* HWY_RESTRICT a3 = op.a[3];
    const T* HWY_RESTRICT a4 = op.a[4];
    const T* HWY_RESTRICT a5 = op.a[5];
    const size_t a_step = op.a_step;
    for (size_t p = 0, o = 0; p < kc; ++p, o += a_step) NORMLAB_GEMM_STEP(a0[o], a1[o], a2[o], a3[o], a4[o], a5[o]);
  }
#undef NORMLAB_GEMM_STEP
#undef NORMLAB_GEMM_ROW
  if (c_cs == 1 && nr == 2 * N) {  // whole rows: the first mr of them
    PutRow(d, c00, c01, c, add, bias);
    if (mr > 1) PutRow(d, c10, c11, c + ldc, add, bias);
    if (mr > 2) PutRow(d, c20, c21, c + 2 * ldc, add, bias);
    if (mr > 3) PutRow(d, c30, c31, c + 3 * ldc, add, bias);
    if (mr > 4) PutRow(d, c40, c41, c + 4 * ldc, add, bias);
    if (mr > 5) PutRow(d, c50, c51, c + 5 * ldc, add, bias);
    return;
  }
  if (kMaskedAccessIsSafe && c_cs == 1) {  // the first nr columns of the first mr rows
    PutRowMasked(d, c00, c01, c, add, bias, nr);
    if (mr > 1) PutRowMasked(d, c10, c11, c + ldc, add, bias, nr);
    if (mr > 2) PutRowMasked(d, c20, c21, c + 2 * ldc, add, bias, nr);
    if (mr > 3) PutRowMasked(d, c30, c31, c + 3 * ldc, add, bias, nr);
    if (mr > 4) PutRowMasked(d, c40, c41, c + 4 * ldc, add, bias, nr);
    if (mr > 5) PutRowMasked(d, c50, c51, c + 5 * ldc, add, bias, nr);
    return;
  }
  // Edge columns on other targets, or C written transposed (c_cs != 1): spill the registers and
  // write back only the valid mr x nr part, element (r, j) at c[r * ldc + j * c_cs] (same arithmetic).
  HWY_ALIGN T tile[kMR * 2 * hn::MaxLanes(d)];
  const size_t w = 2 * N;
  hn::Store(c00, d, tile + 0 * w), hn::Store(c01, d, tile + 0 * w + N);
  hn::Store(c10, d, tile + 1 * w), hn::Store(c11, d, tile + 1 * w + N);
  hn::Store(c20, d, tile + 2 * w), hn::Store(c21, d, tile + 2 * w + N);
  hn::Store(c30, d, tile + 3 * w), hn::Store(c31, d, tile + 3 * w + N);
  hn::Store(c40, d, tile + 4 * w), hn::Store(c41, d, tile + 4 * w + N);
  hn::Store(c50, d, tile + 5 * w), hn::Store(c51, d, tile + 5 * w + N);
  const auto put = [&](size_t r, size_t j) HWY_ATTR {
    T& out = c[r * ldc + j * c_cs];
    out = add ? out + tile[r * w + j] : bias ? bias[j] + tile[r * w + j] : tile[r * w + j];
  };
  if (c_cs == 1) {
    for (size_t r = 0; r < mr; ++r)
      for (size_t j = 0; j < nr; ++j) put(r, j);
  } else {
    // C^T: the tile's column j is mr consecutive values of C's row j; write them together. Row by
    // row, each of the tile's rows touched all nr rows of C again, and with C's rows 2-4 KiB apart
    // (one L1 set) every store missed (figures in bench/results/).
    for (size_t j = 0; j < nr; ++j)
      for (size_t r = 0; r < mr; ++r) put(r, j);
  }
}

// MicroKernel<R> with the packing flags made compile-time.
template <size_t R, class D, typename T = hn::TFromD<D>>
HWY_INLINE void Tile(D d, bool packed_a, bool packed_b, size_t kc, const TileOperands<T>& t, T* HWY_RESTRICT c,
                     size_t ldc, size_t c_cs, size_t mr, size_t nr, bool add, const T* bias) {
  if (packed_a) {
    if (packed_b) MicroKernel<R, true, true>(d, kc, t, c, ldc, c_cs, mr, nr, add, bias);
    else MicroKernel<R, true, false>(d, kc, t, c, ldc, c_cs, mr, nr, add, bias);
  } else {
    if (packed_b) MicroKernel<R, false, true>(d, kc, t, c, ldc, c_cs, mr, nr, add, bias);
    else MicroKernel<R, false, false>(d, kc, t, c, ldc, c_cs, mr, nr, add, bias);
  }
}

// One matrix of the batch, with op() resolved into strides: a(i, p) = A[i * a_rs + p * a_cs],
// b(p, j) = B[p * b_rs + j * b_cs].
template <typename T>
struct Operands {
  const T* A;
  int64_t a_rs, a_cs;
  const T* B;
  int64_t b_rs, b_cs;
  T* C;
  int64_t c_rs, c_cs;  // C(i, j) = C[i * c_rs + j * c_cs]
};


// Packs a(i0 .. i0+mc, p0 .. p0+kc) into micro-panels of MR rows: out[(ir / MR) * MR * kc + p * MR + r]
// = a(i0 + ir + r, p0 + p), rows past mc zero. Vector stores may write up to 2 * lanes elements
// past the last panel: the buffer has that much slack.
constexpr size_t kPackRows = 8;  // rows of A (K, M) spread over the panels together (see PackA)

template <class D, typename T = hn::TFromD<D>>
void PackA(D d, const Operands<T>& o, int64_t i0, size_t mc, int64_t p0, size_t kc, T* HWY_RESTRICT out) {
  using DR = hn::CappedTag<T, 8>;
  if constexpr (!HWY_HAVE_SCALABLE && hn::MaxLanes(DR()) >= kMR) {
    // A stored (K, M) (dW = dY^T X): kPackRows rows of the block at a time, each spread over all
    // the panels (one vector of L >= MR values per panel, MR of them kept), rather than panel by
    // panel, which read MR values from each of kc rows M apart (with M a multiple of 512 floats
    // those rows fall into the same L1 sets, and every load missed L1), and rather than one row
    // at a time over all panels (the panels, 6 KiB apart, then conflict in L1 as the rows did).
    // The L - MR values past column p's slot land in column p + 1's, which is stored later; the
    // last row stores MR values only. Whole panels whose vector stays inside A's row go this way,
    // the others (and a padded last panel) element by element below.
    const size_t full = (o.a_rs == 1 && kc > 0) ? mc / kMR : 0;
    size_t vec_panels = 0;  // panels [0, vec_panels) packed here
    if (full > 0) {
      const DR dr;
      constexpr size_t L = hn::MaxLanes(DR());
      while (vec_panels < full && i0 + static_cast<int64_t>(vec_panels * kMR + L) <= o.a_cs) ++vec_panels;
      if (vec_panels > 0) {
        const T* src = o.A + i0 + p0 * o.a_cs;
        for (size_t pb = 0; pb + 1 < kc; pb += kPackRows) {
          const size_t pe = std::min(pb + kPackRows, kc - 1);
          for (size_t g = 0; g < vec_panels; ++g)
            for (size_t p = pb; p < pe; ++p)
              hn::StoreU(hn::LoadU(dr, src + static_cast<int64_t>(p) * o.a_cs + g * kMR), dr, out + (g * kc + p) * kMR);
        }
        const T* s = src + static_cast<int64_t>(kc - 1) * o.a_cs;
        for (size_t g = 0; g < vec_panels; ++g)
          for (size_t r = 0; r < kMR; ++r) out[g * kMR * kc + (kc - 1) * kMR + r] = s[g * kMR + r];
        out += vec_panels * kMR * kc;
        i0 += static_cast<int64_t>(vec_panels * kMR);
        mc -= vec_panels * kMR;
      }
    }
  }
  for (size_t ir = 0; ir < mc; ir += kMR, out += kMR * kc) {
    const size_t mr = std::min(kMR, mc - ir);
    const T* src = o.A + (i0 + static_cast<int64_t>(ir)) * o.a_rs + p0 * o.a_cs;
    size_t p_done = 0;
#if HWY_TARGET != HWY_SCALAR
    using DT = TransposeD<D>;
    if constexpr (kCanTranspose<DT>) {
      const DT dt;
      // Whole panels with vectors: each store writes L values at column p's slot, and the part
      // past the MR values lands in column p + 1's slot, which the next store overwrites.
      constexpr size_t L = hn::MaxLanes(DT()), G = (kMR + L - 1) / L;  // G groups of L rows
      using V = decltype(hn::Zero(dt));
      if (mr == kMR && o.a_cs == 1) {  // A (M, K): transpose L x L blocks of G row groups
        for (; p_done + L <= kc; p_done += L) {
          V r[G][L];
          for (size_t g = 0; g < G; ++g) {
            for (size_t i = 0; i < L; ++i) {
              const size_t row = g * L + i;
              r[g][i] = row < kMR ? hn::LoadU(dt, src + static_cast<int64_t>(row) * o.a_rs + p_done) : hn::Zero(dt);
            }
            TransposeSquare(dt, r[g]);
          }
          for (size_t q = 0; q < L; ++q)
            for (size_t g = 0; g < G; ++g) hn::StoreU(r[g][q], dt, out + (p_done + q) * kMR + g * L);
        }
      } else if (mr == kMR && o.a_rs == 1 && i0 + static_cast<int64_t>(ir + G * L) <= o.a_cs) {
        // A stored (K, M): the MR values of column p are contiguous (G loads stay inside the row).
        for (; p_done < kc; ++p_done)
          for (size_t g = 0; g < G; ++g)
            hn::StoreU(hn::LoadU(dt, src + static_cast<int64_t>(p_done) * o.a_cs + g * L), dt,
                       out + p_done * kMR + g * L);
      }
    }
#endif
    if (o.a_rs == 1) {  // A stored (K, M)
      for (size_t p = p_done; p < kc; ++p) {
        const T* s = src + static_cast<int64_t>(p) * o.a_cs;
        for (size_t r = 0; r < mr; ++r) out[p * kMR + r] = s[r];
        for (size_t r = mr; r < kMR; ++r) out[p * kMR + r] = T(0);
      }
    } else {  // A (M, K): read each row along p
      for (size_t r = 0; r < mr; ++r) {
        const T* s = src + static_cast<int64_t>(r) * o.a_rs;
        for (size_t p = p_done; p < kc; ++p) out[p * kMR + r] = s[static_cast<int64_t>(p) * o.a_cs];
      }
      for (size_t r = mr; r < kMR; ++r)
        for (size_t p = p_done; p < kc; ++p) out[p * kMR + r] = T(0);
    }
  }
}

constexpr size_t kPackBAhead = 16;  // rows of B prefetched ahead of the one PackB copies

// Packs b(p0 .. p0+kc, j0 .. j0+nc) into micro-panels of nr_full columns:
// out[(jr / NR) * NR * kc + p * NR + j] = b(p0 + p, j0 + jr + j), columns past nc zero.
template <class D, typename T = hn::TFromD<D>>
void PackB(D d, const Operands<T>& o, int64_t p0, size_t kc, int64_t j0, size_t nc, T* HWY_RESTRICT out) {
  const size_t N = hn::Lanes(d), NR = 2 * N;
  for (size_t jr = 0; jr < nc; jr += NR, out += NR * kc) {
    const size_t nr = std::min(NR, nc - jr);
    const T* src = o.B + p0 * o.b_rs + (j0 + static_cast<int64_t>(jr)) * o.b_cs;
    if (o.b_cs == 1) {  // B (K, N): a row p of the panel is contiguous
      for (size_t p = 0; p < kc; ++p) {
        const T* s = src + static_cast<int64_t>(p) * o.b_rs;
        T* dst = out + p * NR;
        if (p + kPackBAhead < kc) {  // rows b_rs apart (often 4 KiB: the prefetcher does not follow)
          hwy::Prefetch(s + kPackBAhead * o.b_rs);
          hwy::Prefetch(s + kPackBAhead * o.b_rs + nr - 1);
        }
        if (nr == NR) {
          hn::Store(hn::LoadU(d, s), d, dst);
          hn::Store(hn::LoadU(d, s + N), d, dst + N);
        } else {
          for (size_t j = 0; j < nr; ++j) dst[j] = s[j];
          for (size_t j = nr; j < NR; ++j) dst[j] = T(0);
        }
      }
    } else {  // B stored (N, K): read each stored row (a column j of b) along p
      size_t p_done = 0;
#if HWY_TARGET != HWY_SCALAR
      using DT = TransposeD<D>;
      if constexpr (kCanTranspose<DT>) {
        const DT dt;
        // Whole L x L blocks: L vector loads along p, one register transpose, L aligned stores
        // of the panel's rows (about 5x faster than moving one element at a time).
        constexpr size_t L = hn::MaxLanes(DT());
        using V = decltype(hn::Zero(dt));
        if (nr == NR && o.b_rs == 1) {
          for (; p_done + L <= kc; p_done += L)
            for (size_t h = 0; h < NR; h += L) {
              V r[L];
              for (size_t i = 0; i < L; ++i) r[i] = hn::LoadU(dt, src + static_cast<int64_t>(h + i) * o.b_cs + p_done);
              TransposeSquare(dt, r);
              for (size_t q = 0; q < L; ++q) hn::Store(r[q], dt, out + (p_done + q) * NR + h);
            }
        }
      }
#endif
      for (size_t j = 0; j < nr; ++j) {
        const T* s = src + static_cast<int64_t>(j) * o.b_cs;
        for (size_t p = p_done; p < kc; ++p) out[p * NR + j] = s[static_cast<int64_t>(p) * o.b_rs];
      }
      for (size_t j = nr; j < NR; ++j)
        for (size_t p = p_done; p < kc; ++p) out[p * NR + j] = T(0);
    }
  }
}

// Packing buffers, one pair per thread and dtype, grown on demand and kept: no allocation in
// the steady state, none inside the loops.
template <typename T>
struct PackBuffers {
  hwy::AlignedFreeUniquePtr<T[]> a, b;
  size_t a_size = 0, b_size = 0;
  T* get_a(size_t n) { return grow(a, a_size, n); }
  T* get_b(size_t n) { return grow(b, b_size, n); }

 private:
  static T* grow(hwy::AlignedFreeUniquePtr<T[]>& p, size_t& size, size_t n) {
    if (n > size) {
      p = hwy::AllocateAligned<T>(n);
      size = n;
    }
    return p.get();
  }
};

template <typename T>
PackBuffers<T>& ThreadBuffers() {
  static thread_local PackBuffers<T> buffers;
  return buffers;
}

// The loop bounds shared by the serial and the parallel drivers.
template <typename T>
struct Plan {
  size_t NR, MC, NC, KC, K;
  bool pack_a, pack_b;  // pack the operand, else the micro-kernel reads it in place (B only
                        // when its rows are contiguous)
  bool c_transposed = false;  // the problem computes C^T = op(B)^T op(A)^T into C's memory
  const T* mul = nullptr;       // the epilogue (gemm.h), applied after the last K block
  const T* residual = nullptr;
  // op(B) packed whole by gemm_pack_b (GemmShape::packed_b), else null: K block pc's panels
  // start at packed + pc * np, column jc's micro-panel (jc a multiple of NR) jc * kc after that.
  const T* packed = nullptr;
  size_t np = 0;  // N rounded up to whole NR-column micro-panels
  const T* packed_at(size_t pc, int64_t jc, size_t kc) const { return packed + pc * np + static_cast<size_t>(jc) * kc; }

  // op(A), op(B) and C of batch item q, with op() resolved into strides.
  Operands<T> operands(const GemmShape& s, const T* a, const T* b, T* c, int64_t q) const {
    Operands<T> o;
    o.A = a + q * s.stride_a;
    o.B = b + q * s.stride_b;
    o.C = c + q * s.stride_c;
    o.c_rs = c_transposed ? 1 : s.n, o.c_cs = c_transposed ? s.m : 1;
    o.a_rs = s.trans_a ? 1 : s.k, o.a_cs = s.trans_a ? s.m : 1;
    o.b_rs = s.trans_b ? 1 : s.n, o.b_cs = s.trans_b ? s.k : 1;
    return o;
  }
  // Elements of the packed-B buffer for a panel nc columns wide (only the ragged last NR
  // columns when B is read in place).
  size_t b_size(size_t nc) const { return KC * (pack_b ? (nc + NR - 1) / NR * NR : NR); }
  size_t a_size() const { return KC * MC + NR; }  // + the slack of PackA's vector stores
  // The NR-column panels of b(pc.., jc .. jc+nc) that PackPanels packs: all of them, or only
  // the ragged last one when B is read in place.
  size_t first_panel(size_t nc) const { return pack_b ? 0 : nc / NR; }
  size_t panels(size_t nc) const { return (nc + NR - 1) / NR; }
};

// The bias for the tiles of columns jc.. stored by K block pc: s.bias + jc when C is stored rather
// than added to (the first K block, C not accumulated), else null.
template <typename T>
HWY_INLINE const T* BiasAt(const GemmShape& s, bool add_batch, size_t pc, int64_t jc) {
  return s.bias && !add_batch && pc == 0 ? static_cast<const T*>(s.bias) + jc : nullptr;
}

// Packs B panels first .. last-1 of b(pc .. pc+kc, jc .. jc+nc) (see Plan::first_panel).
template <class D, typename T = hn::TFromD<D>>
void PackPanels(D d, const Plan<T>& pl, const Operands<T>& o, size_t pc, size_t kc, int64_t jc, size_t nc,
                size_t first, size_t last, T* bp) {
  for (size_t i = first; i < last; ++i) {
    const size_t j = i * pl.NR;
    T* out = pl.pack_b ? bp + j * kc : bp;
    PackB(d, o, static_cast<int64_t>(pc), kc, jc + static_cast<int64_t>(j), std::min(pl.NR, nc - j), out);
  }
}

// The epilogue (gemm.h: C *= mul, or C += residual, whichever is not null) on rows
// [i0, i0 + rows) x columns [j0, j0 + cols) of C (not transposed, rows c_rs apart, as the
// epilogue's operand): one vector operation per element, the same bits as a pass over all of C
// after the product.
template <typename T>
HWY_INLINE void EpilogueBlock(const T* mul, const T* residual, T* C, size_t c_rs, int64_t i0, size_t rows,
                              int64_t j0, size_t cols) {
  const T* e0 = mul ? mul : residual;
  for (size_t r = 0; r < rows; ++r) {
    const size_t at = (static_cast<size_t>(i0) + r) * c_rs + static_cast<size_t>(j0);
    T* HWY_RESTRICT c = C + at;
    const T* HWY_RESTRICT e = e0 + at;
    ForRow<T>(static_cast<int64_t>(cols), [&](auto dd, int64_t j) HWY_ATTR {
      const auto v = hn::LoadU(dd, c + j), w = hn::LoadU(dd, e + j);
      hn::StoreU(mul ? hn::Mul(v, w) : hn::Add(v, w), dd, c + j);
    });
  }
}

// C[ic .. ic+mc, jc .. jc+nc] (+)= a(ic.., pc .. pc+kc) b(pc.., jc..): packs the A block (into
// ap, when packing A) and runs the micro-kernel over its tiles, B panel by B panel. bias: C's
// bias at column jc, added when storing (!add), or null. After the last K block, the block of C
// just written (in L2) gets pl's epilogue, row by row (its operand read in order).
template <class D, typename T = hn::TFromD<D>>
void MacroKernel(D d, const Plan<T>& pl, const Operands<T>& o, int64_t ic, size_t mc, int64_t jc, size_t nc,
                 size_t pc, size_t kc, bool add, T* ap, const T* bp, const T* bias) {
  const size_t NR = pl.NR;
  if (pl.pack_a) PackA(d, o, ic, mc, static_cast<int64_t>(pc), kc, ap);
  const size_t c_rs = static_cast<size_t>(o.c_rs), c_cs = static_cast<size_t>(o.c_cs);
  for (size_t jr = 0; jr < nc; jr += NR) {
    const size_t nr = std::min(NR, nc - jr);
    TileOperands<T> t;
    if (pl.pack_b) {
      t.b = bp + jr * kc, t.b_step = NR;
    } else if (nr == NR) {
      t.b = o.B + static_cast<int64_t>(pc) * o.b_rs + jc + static_cast<int64_t>(jr), t.b_step = o.b_rs;
    } else {
      t.b = bp, t.b_step = NR;
    }
    const bool packed_b = t.b_step == NR;  // a packed panel (or the packed ragged edge)
    for (size_t ir = 0; ir < mc; ir += kMR) {
      const size_t mr = std::min(kMR, mc - ir);
      if (pl.pack_a) {
        for (size_t r = 0; r < kMR; ++r) t.a[r] = ap + ir * kc + r;
        t.a_step = kMR;
      } else {
        // Rows past mr repeat the last valid row; their results are not written back.
        for (size_t r = 0; r < kMR; ++r)
          t.a[r] = o.A + (ic + static_cast<int64_t>(ir + std::min(r, mr - 1))) * o.a_rs +
                   static_cast<int64_t>(pc) * o.a_cs;
        t.a_step = static_cast<size_t>(o.a_cs);
      }
      T* ct = o.C + (ic + static_cast<int64_t>(ir)) * o.c_rs + (jc + static_cast<int64_t>(jr)) * o.c_cs;
      // Edge tiles of at most 4 rows compute 4 rows, not 6.
      const T* bt = bias ? bias + jr : nullptr;
      if (mr > 4) Tile<kMR>(d, pl.pack_a, packed_b, kc, t, ct, c_rs, c_cs, mr, nr, add, bt);
      else Tile<4>(d, pl.pack_a, packed_b, kc, t, ct, c_rs, c_cs, mr, nr, add, bt);
    }
  }
  if ((pl.mul || pl.residual) && pc + kc == pl.K) EpilogueBlock(pl.mul, pl.residual, o.C, c_rs, ic, mc, jc, nc);
}

// One thread computes C[i0:i1, j0:j1] of batch items q0 .. q1-1 (in batch order) through the
// BLIS loop nest at the top of this file.
template <class D, typename T = hn::TFromD<D>>
HWY_NOINLINE void GemmRegion(const GemmShape& s, const Plan<T>& pl, const T* a, const T* b, T* c, int64_t q0,
                             int64_t q1, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  const D d;
  PackBuffers<T>& buf = ThreadBuffers<T>();
  T* bp = buf.get_b(pl.b_size(std::min(pl.NC, static_cast<size_t>(j1 - j0))));
  T* ap = pl.pack_a ? buf.get_a(pl.a_size()) : nullptr;
  for (int64_t q = q0; q < q1; ++q) {
    const Operands<T> o = pl.operands(s, a, b, c, q);
    const bool add_batch = s.accumulate || (s.stride_c == 0 && q > 0);
    for (int64_t jc = j0; jc < j1; jc += static_cast<int64_t>(pl.NC)) {
      const size_t nc = std::min<size_t>(pl.NC, static_cast<size_t>(j1 - jc));
      for (size_t pc = 0; pc < pl.K; pc += pl.KC) {
        const size_t kc = std::min(pl.KC, pl.K - pc);
        const T* panel = bp;
        if (pl.packed) panel = pl.packed_at(pc, jc, kc);
        else PackPanels(d, pl, o, pc, kc, jc, nc, pl.first_panel(nc), pl.panels(nc), bp);
        for (int64_t ic = i0; ic < i1; ic += static_cast<int64_t>(pl.MC)) {
          const size_t mc = std::min<size_t>(pl.MC, static_cast<size_t>(i1 - ic));
          MacroKernel(d, pl, o, ic, mc, jc, nc, pc, kc, add_batch || pc > 0, ap, panel, BiasAt<T>(s, add_batch, pc, jc));
        }
      }
    }
  }
}

// Waits until v reaches target, spinning briefly, then yielding the core (a thread that waits on a
// busy machine must not burn the time slice of the thread it waits for: with OpenMP's spinning
// barriers, GEMMs took 20-200 times longer on 2 threads when another process held one core).
inline void WaitAtLeast(const std::atomic<int64_t>& v, int64_t target) {
  while (v.load(std::memory_order_acquire) < target) {
    for (int spin = 0; spin < 64 && v.load(std::memory_order_acquire) < target; ++spin) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (v.load(std::memory_order_acquire) < target) std::this_thread::yield();
  }
}

// The threads share the packed B panels and take the row blocks (MC rows) of C dynamically, one at
// a time. Each step is one job of parts on the pool (base::parallel_parts): its first `npack` parts
// pack B's panels, the rest are row blocks, which wait until every panel is packed. All parts are
// claimed in order (base::parallel_parts' in_order), so a thread that claims a row block waits only
// for panels that running threads have claimed (row blocks claimed from both ends, as other jobs'
// parts are, measured no faster: bench/results/2026-12-08-zen5-parts-from-both-ends.md); a worker
// that is asleep or descheduled holds nobody up, it joins late or not at all, and the caller can
// do every part itself. The job returns when all its parts are done: the panels are then free for
// the next step. When B's panel for all of K fits in 8 MiB (the MLP's and most shapes), it is packed
// at once and a row block runs all K blocks: one step per call. Otherwise the panel is packed per K
// block: one step per K block (cheap next to its work). A B packed before the call (pl.packed)
// leaves only the row blocks, all K blocks each.
template <class D, typename T = hn::TFromD<D>>
HWY_NOINLINE void GemmSharedB(const GemmShape& s, const Plan<T>& pl, const T* a, const T* b, T* c, int threads) {
  const D d;
  const size_t width = std::min(pl.NC, static_cast<size_t>(s.n));
  const size_t ncp = pl.pack_b ? WholePanels(width, pl.NR) : pl.NR;  // packed panel width
  const size_t kblocks = (pl.K + pl.KC - 1) / pl.KC;
  const bool whole_k = pl.packed || kblocks * pl.KC * ncp * sizeof(T) <= (size_t(8) << 20);
  T* bp = pl.packed ? nullptr : ThreadBuffers<T>().get_b(whole_k ? kblocks * pl.KC * ncp : pl.b_size(width));
  const int64_t blocks = (s.m + static_cast<int64_t>(pl.MC) - 1) / static_cast<int64_t>(pl.MC);
  for (int64_t q = 0; q < s.batch; ++q) {
    const Operands<T> o = pl.operands(s, a, b, c, q);
    const bool add_batch = s.accumulate || (s.stride_c == 0 && q > 0);
    for (int64_t jc = 0; jc < s.n; jc += static_cast<int64_t>(pl.NC)) {
      const size_t nc = std::min<size_t>(pl.NC, static_cast<size_t>(s.n - jc));
      const int64_t first = static_cast<int64_t>(pl.first_panel(nc));
      const int64_t per_k = pl.packed ? 0 : static_cast<int64_t>(pl.panels(nc)) - first;  // panels to pack per K block
      const size_t nk_step = whole_k ? kblocks : 1;
      for (size_t kb0 = 0; kb0 < kblocks; kb0 += nk_step) {
        // One step: pack npack panels (of K blocks kb0 .. kb0 + nk_step - 1), then the row blocks
        // over those K blocks.
        const int64_t npack = static_cast<int64_t>(nk_step) * per_k;
        std::atomic<int64_t> packed{0};
        base::parallel_parts(threads, npack + blocks, [&](int64_t i) HWY_ATTR {
          if (i < npack) {
            const size_t t = static_cast<size_t>(i / per_k), pc = (kb0 + t) * pl.KC;
            const size_t panel = static_cast<size_t>(first + i % per_k);
            PackPanels(d, pl, o, pc, std::min(pl.KC, pl.K - pc), jc, nc, panel, panel + 1, bp + t * pl.KC * ncp);
            packed.fetch_add(1, std::memory_order_acq_rel);
            return;
          }
          WaitAtLeast(packed, npack);
          T* ap = pl.pack_a ? ThreadBuffers<T>().get_a(pl.a_size()) : nullptr;
          const int64_t ic = (i - npack) * static_cast<int64_t>(pl.MC);
          const size_t mc = std::min<size_t>(pl.MC, static_cast<size_t>(s.m - ic));
          for (size_t t = 0; t < nk_step; ++t) {
            const size_t pc = (kb0 + t) * pl.KC;
            const size_t kc = std::min(pl.KC, pl.K - pc);
            MacroKernel(d, pl, o, ic, mc, jc, nc, pc, kc, add_batch || pc > 0, ap,
                        pl.packed ? pl.packed_at(pc, jc, kc) : bp + t * pl.KC * ncp, BiasAt<T>(s, add_batch, pc, jc));
          }
        }, npack + blocks);
      }
    }
  }
}

// Few rows times a transposed B (Linear's forward x W^T at batch <= kDotRows): packing W would
// move all of it for a handful of rows, so each C[i, j] is a dot product of A's row i and B's
// stored row j, both read in place: a tile of R rows x C columns of vector accumulators along K
// (every B vector loaded once for R rows), then each reduced across lanes and finished with a
// scalar tail (a fixed order). Columns j0 .. j1-1.
// Up to 8 rows; up to 16 unless C^T (below) has the fewer rows and fills its tiles at least 3/4
// (Linear(256, 10) at batch 12..16: 1-2 us against 3-5 us for C^T's or C's half-empty tiles).
constexpr int64_t kDotRows = 8;

// Keeps v in a register. In a dot tile each B vector feeds R FMAs; GCC folds the load into every
// one of them instead (a 2 x 8 tile issued 16 loads of B per 16 FMAs, a 4 x 4 one 32, and the
// loads, not the FMAs, set the pace: Linear(784, 256) at batch 4 took 20 us instead of 16).
template <class V>
HWY_INLINE void KeepInRegister(V& v) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_SSE4 && (defined(__GNUC__) || defined(__clang__))
  asm("" : "+v"(v.raw));
#else
  (void)v;
#endif
}

// One R x C tile of dot products: out[r][t] = sum_p x[r][p] w[t][p], as FMA chains per lane over
// p in order, the lanes' sum, then the scalar tail. The same arithmetic for every element
// whatever R and C, so the tile shape is only a matter of speed.
template <int R, int C, class D, typename T = hn::TFromD<D>>
HWY_INLINE void DotTile(D d, size_t K, const T* const* x, const T* const* w, T (&out)[R][C]) {
  using V = hn::Vec<D>;
  const size_t N = hn::Lanes(d), kv = K / N * N;
  V acc[R][C];
  // Fully unrolled (GCC's -O2 does not unroll these on its own): the accumulators stay in registers.
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 16
    for (int t = 0; t < C; ++t) acc[r][t] = hn::Zero(d);
  for (size_t p = 0; p < kv; p += N) {
    V xv[R];
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) xv[r] = hn::LoadU(d, x[r] + p);
#pragma GCC unroll 16
    for (int t = 0; t < C; ++t) {
      V wv = hn::LoadU(d, w[t] + p);
      KeepInRegister(wv);
#pragma GCC unroll 16
      for (int r = 0; r < R; ++r) acc[r][t] = hn::MulAdd(xv[r], wv, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < C; ++t) {
      T v = LaneSum(d, acc[r][t]);
      for (size_t p = kv; p < K; ++p) v += x[r][p] * w[t][p];
      out[r][t] = v;
    }
}

// C[i .. i+rows, j0 .. j1) of one matrix through R x C tiles (rows <= R: the missing rows repeat
// the last one and are not written).
template <int R, int C, typename T>
HWY_INLINE void DotRowBlock(const GemmShape& s, const T* A, const T* B, T* Cm, bool add, int64_t i, int64_t rows,
                            int64_t j0, int64_t j1) {
  const hn::ScalableTag<T> d;
  const T* x[R];
  for (int r = 0; r < R; ++r) x[r] = A + (i + std::min<int64_t>(r, rows - 1)) * s.k;
  for (int64_t j = j0; j < j1; j += C) {
    const int64_t cols = std::min<int64_t>(C, j1 - j);
    const T* w[C];
    for (int t = 0; t < C; ++t) w[t] = B + std::min<int64_t>(j + t, j1 - 1) * s.k;
    T out[R][C];
    DotTile<R, C>(d, static_cast<size_t>(s.k), x, w, out);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t t = 0; t < cols; ++t) {
        T& o = Cm[(i + r) * s.n + j + t];
        o = add ? o + out[r][t] : out[r][t];
      }
  }
}

// The tiles, for 32 vector registers (AVX-512): 4 rows x 6 columns (24 accumulators, 4 A and 1 B
// vector; 10 loads per 24 FMAs), 2 x 6 for two rows left, 1 x 8 for one. On Zen 4, Linear(784,
// 256): 4 x 6 took 16.4 us at batch 4 and 33 at batch 8, against 20 and 40 for 2 x 8 (4 x 4:
// 21 us, 4 x 5: 16.6). For 16 registers (AVX2, SSE4): 2 x 4 (8 accumulators) and 1 x 8.
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
constexpr bool kDotQuads = true;
constexpr int kDotPairCols = 6;
#else
constexpr bool kDotQuads = false;
constexpr int kDotPairCols = 4;
#endif

// Columns of a 4-row tile: 5 for a multiple of 5 that is not one of 6 (the classifier's 10
// outputs: 2 full tiles, not 2 of 6 with 2 padding columns), else 6.
inline int64_t DotQuadCols(int64_t n) { return n % 6 != 0 && n % 5 == 0 ? 5 : 6; }

// Columns j0 .. j1-1 of C through 4-row tiles of QC columns, then 2- and 1-row tiles.
template <int QC, typename T>
HWY_NOINLINE void GemmDotRows(const GemmShape& s, const T* a, const T* b, T* c, int64_t j0, int64_t j1) {
  for (int64_t q = 0; q < s.batch; ++q) {
    const T* A = a + q * s.stride_a;
    const T* B = b + q * s.stride_b;
    T* C = c + q * s.stride_c;
    const bool add = s.accumulate || (s.stride_c == 0 && q > 0);
    int64_t i = 0;
    if constexpr (kDotQuads)
      for (; i + 4 <= s.m; i += 4) DotRowBlock<4, QC>(s, A, B, C, add, i, 4, j0, j1);
    for (; i + 2 <= s.m; i += 2) DotRowBlock<2, kDotPairCols>(s, A, B, C, add, i, 2, j0, j1);
    if (i < s.m) DotRowBlock<1, 8>(s, A, B, C, add, i, 1, j0, j1);
  }
}

// A transposed A times a narrow B (N <= kNarrowCols: Linear's dW = dY^T X for a layer with
// 1..4 inputs): the register tile would be mostly padding, so vectors run along M instead (A's
// stored rows are contiguous in M): acc[i.., j] += A[p, i..] * b(p, j), p in order, for 2 vectors
// of rows at a time; then the columns are written out lane by lane. Rows i0 .. i1-1.
constexpr int64_t kNarrowCols = 4;

template <typename T>
HWY_NOINLINE void GemmNarrowTransA(const GemmShape& s, const T* a, const T* b, T* c, int64_t i0, int64_t i1) {
  const hn::ScalableTag<T> d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d)), n = s.n;
  for (int64_t q = 0; q < s.batch; ++q) {
    const T* A = a + q * s.stride_a;
    const T* B = b + q * s.stride_b;
    T* C = c + q * s.stride_c;
    const bool add = s.accumulate || (s.stride_c == 0 && q > 0);
    const auto put = [&](int64_t row, int64_t col, T v) HWY_ATTR {
      T& out = C[row * n + col];
      out = add ? out + v : v;
    };
    int64_t i = i0;
    for (; i + 2 * N <= i1; i += 2 * N) {  // 2 vectors of rows x up to 4 columns: 8 FMA chains
      auto x0 = hn::Zero(d), x1 = hn::Zero(d), x2 = hn::Zero(d), x3 = hn::Zero(d);
      auto y0 = hn::Zero(d), y1 = hn::Zero(d), y2 = hn::Zero(d), y3 = hn::Zero(d);
      for (int64_t p = 0; p < s.k; ++p) {
        const T* ap = A + p * s.m + i;
        const T* bp = B + p * n;
        const auto u = hn::LoadU(d, ap), v = hn::LoadU(d, ap + N);
        auto w = hn::Set(d, bp[0]);
        x0 = hn::MulAdd(u, w, x0), y0 = hn::MulAdd(v, w, y0);
        if (n > 1) w = hn::Set(d, bp[1]), x1 = hn::MulAdd(u, w, x1), y1 = hn::MulAdd(v, w, y1);
        if (n > 2) w = hn::Set(d, bp[2]), x2 = hn::MulAdd(u, w, x2), y2 = hn::MulAdd(v, w, y2);
        if (n > 3) w = hn::Set(d, bp[3]), x3 = hn::MulAdd(u, w, x3), y3 = hn::MulAdd(v, w, y3);
      }
      HWY_ALIGN T tile[kNarrowCols][2 * hn::MaxLanes(d)];
      hn::Store(x0, d, tile[0]), hn::Store(y0, d, tile[0] + N), hn::Store(x1, d, tile[1]), hn::Store(y1, d, tile[1] + N);
      hn::Store(x2, d, tile[2]), hn::Store(y2, d, tile[2] + N), hn::Store(x3, d, tile[3]), hn::Store(y3, d, tile[3] + N);
      for (int64_t l = 0; l < 2 * N; ++l)
        for (int64_t j = 0; j < n; ++j) put(i + l, j, tile[j][l]);
    }
    for (; i < i1; ++i)  // remaining rows, one at a time (same order over p)
      for (int64_t j = 0; j < n; ++j) {
        T v = 0;
        for (int64_t p = 0; p < s.k; ++p) v += A[p * s.m + i] * B[p * n + j];
        put(i, j, v);
      }
  }
}

// Tiny K with B not transposed (dW = dY^T X at batch <= 16, dX = dY W of a layer with <= 16
// outputs): C is mostly written, not computed, and the register tile's fixed costs per tile
// (packing, the C prefetch, the write-back after a few FMA steps) dominated: on Zen 4 Linear(784,
// 256)'s dW took 19 / 23 / 29 / 44 us at batch 1 / 2 / 4 / 8 (21-73 GFLOP/s), Linear(256, 10)'s
// dX 8.9 us. Here each row of C is swept once, its K values of A broadcast in registers: C[i, j..]
// = sum_p a(i, p) B[p, j..] as the FMA chain from 0 over p in order and the final add of the
// blocked GEMM, so each element gets the bits the blocked GEMM would give it: 9 / 10 / 19 / 34 us
// and 7 us. Up to 8 rows of B always; up to 16 while B stays in L1 (16 KiB: at K = 16, N = 784
// the sweep re-read B from L2 and took 118 us against 78). Rows i0 .. i1-1.
constexpr int64_t kSmallK = 8, kSmallKMax = 16;
constexpr size_t kSmallKBytes = size_t(16) << 10;

template <typename T>
bool UseSmallK(const GemmShape& s) {
  if (s.trans_b || s.n <= kNarrowCols || s.k > kSmallKMax) return false;
  return s.k <= kSmallK || static_cast<size_t>(s.k * s.n) * sizeof(T) <= kSmallKBytes;
}

template <int K, typename T>
HWY_NOINLINE void GemmSmallK(const GemmShape& s, const T* a, const T* b, T* c, int64_t i0, int64_t i1) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d)), n = s.n;
  const int64_t a_rs = s.trans_a ? 1 : s.k, a_cs = s.trans_a ? s.m : 1;  // a(i, p) = A[i a_rs + p a_cs]
  for (int64_t q = 0; q < s.batch; ++q) {
    const T* A = a + q * s.stride_a;
    const T* HWY_RESTRICT B = b + q * s.stride_b;
    T* C = c + q * s.stride_c;
    const bool add = s.accumulate || (s.stride_c == 0 && q > 0);
    for (int64_t i = i0; i < i1; ++i) {
      hn::Vec<decltype(d)> av[K];  // (the loops over p are unrolled: av stays in registers)
#pragma GCC unroll 16
      for (int p = 0; p < K; ++p) av[p] = hn::Set(d, A[i * a_rs + p * a_cs]);
      T* HWY_RESTRICT ci = C + i * n;
      int64_t j = 0;
      for (; j + 2 * N <= n; j += 2 * N) {
        auto c0 = hn::Zero(d), c1 = hn::Zero(d);
#pragma GCC unroll 16
        for (int p = 0; p < K; ++p) {
          c0 = hn::MulAdd(av[p], hn::LoadU(d, B + p * n + j), c0);
          c1 = hn::MulAdd(av[p], hn::LoadU(d, B + p * n + j + N), c1);
        }
        PutRow(d, c0, c1, ci + j, add, static_cast<const T*>(nullptr));
      }
      for (; j + N <= n; j += N) {
        auto c0 = hn::Zero(d);
#pragma GCC unroll 16
        for (int p = 0; p < K; ++p) c0 = hn::MulAdd(av[p], hn::LoadU(d, B + p * n + j), c0);
        if (add) c0 = hn::Add(hn::LoadU(d, ci + j), c0);
        hn::StoreU(c0, d, ci + j);
      }
      for (; j < n; ++j) {
        auto c0 = hn::Zero(d1);
        for (int p = 0; p < K; ++p)
          c0 = hn::MulAdd(hn::Set(d1, A[i * a_rs + p * a_cs]), hn::LoadU(d1, B + p * n + j), c0);
        if (add) c0 = hn::Add(hn::LoadU(d1, ci + j), c0);
        hn::StoreU(c0, d1, ci + j);
      }
    }
  }
}

// GemmSmallK for s.k = 1 .. kSmallKMax, rows split into about 4 ranges per thread.
template <typename T, int... Ks>
void SmallKRows(const GemmShape& s, const T* a, const T* b, T* c, int64_t i0, int64_t i1,
                std::integer_sequence<int, Ks...>) {
  ((s.k == Ks + 1 ? GemmSmallK<Ks + 1>(s, a, b, c, i0, i1) : void()), ...);
}

template <typename T>
void SmallK(const GemmShape& s, const T* a, const T* b, T* c, int threads) {
  const auto run = [&](int64_t i0, int64_t i1) HWY_ATTR {
    SmallKRows(s, a, b, c, i0, i1, std::make_integer_sequence<int, kSmallKMax>());
  };
  if (threads <= 1) return run(0, s.m);
  const int64_t parts = std::min<int64_t>(s.m, 4 * threads);  // each row's items still in batch order
  base::parallel_parts(threads, parts, [&](int64_t i) HWY_ATTR { run(s.m * i / parts, s.m * (i + 1) / parts); });
}

// C = 0 (or untouched when accumulating) for K = 0: every sum is empty.
template <typename T>
void GemmEmptyK(const GemmShape& s, T* c) {
  if (s.accumulate) return;
  const int64_t items = s.stride_c == 0 ? 1 : s.batch;
  for (int64_t q = 0; q < items; ++q) std::fill(c + q * s.stride_c, c + q * s.stride_c + s.m * s.n, T(0));
}

// Up to this many bytes of an A read in place (not packed), C is split into column ranges on 2 or
// more threads even when A has more than MC rows: every range reads all of A, which then comes
// from the L2 or L3, and nobody waits for a shared B. Row blocks sharing B's panels are short at
// such sizes (66 rows at M = 256 on 2 threads), and each streams all of B's panels. On Zen 4 at 2
// threads, column ranges against row blocks of 66 rows: Linear(784, 256) forward at batch 256 (A
// 784 KiB) 491-492 against 527-534 us, 256 x 256 x 256 151-155 against 170, 512 x 512 x 512
// 1216-1224 against 1264-1270 (and against the 36-row blocks of 4 per thread used before:
// 490-511 against 566-577 us, 152-161 against 183-184). A packed A would be packed again by every
// range: 256 x 256 x 256 with A transposed took 208 us against 191, and 512 x 1024 x 1024 (2 MiB
// packed) was 8% slower; at 3-6 MiB read in place (1024-2048 x 256 x 784) column ranges were even
// to 5% slower.
constexpr int64_t kColumnsMaxA = int64_t(1) << 20;

// The BLIS loop nest for problem s (C^T's when pl.c_transposed), on `threads` threads, with
// vectors of tag D (pl.NR = 2 of them).
template <class D, typename T = hn::TFromD<D>>
void GemmBlocked(const GemmShape& s, Plan<T>& pl, const T* a, const T* b, T* c, int threads) {
  const int64_t MR = static_cast<int64_t>(kMR), NR = static_cast<int64_t>(pl.NR);
  const int64_t tiles_m = (s.m + MR - 1) / MR, tiles_n = (s.n + NR - 1) / NR;
  if (threads <= 1) return GemmRegion<D>(s, pl, a, b, c, 0, s.batch, 0, s.m, 0, s.n);
  // Which thread computes which tile never changes a result (see the top of this file).
  const bool small_a_columns = !pl.pack_a && s.m * s.k * static_cast<int64_t>(sizeof(T)) <= kColumnsMaxA &&
                               tiles_n >= 2 * threads;
  if (s.batch >= threads && s.stride_c >= s.m * s.n) {
    // Disjoint C blocks: whole batch items.
    base::parallel_parts(threads, s.batch,
                         [&](int64_t q) HWY_ATTR { GemmRegion<D>(s, pl, a, b, c, q, q + 1, 0, s.m, 0, s.n); });
  } else if (tiles_m >= 2 * threads && s.m > static_cast<int64_t>(kMC<T>) && !small_a_columns) {
    // Rows: a multiple of `threads` blocks of about equal height, at most MC, at least 2 per
    // thread so that a thread that starts late leaves some of its share to the others (M = 2048
    // on 2 threads: 16 blocks of 132 rows, not 15 of 144; M = 256: 4 of 66). Short blocks stream
    // all of B's panels once each: on Zen 4 at 2 threads, dW = dY^T X of Linear(784, 256) at
    // batch 128 / 256 took 293 / 574 us in 4 blocks per thread (36 / 36 rows), 271 / 522 in 2 and
    // 267 / 518 in 1.
    const int64_t per_thread = std::max<int64_t>(2, (s.m + static_cast<int64_t>(pl.MC) * threads - 1) /
                                                        (static_cast<int64_t>(pl.MC) * threads));
    const int64_t rows = (s.m + per_thread * threads - 1) / (per_thread * threads);
    pl.MC = std::min(pl.MC, static_cast<size_t>((rows + MR - 1) / MR * MR));
    GemmSharedB<D>(s, pl, a, b, c, threads);
  } else {
    // Few rows (at most one MC block: the MLP's batch of 128), or an A read in place of at most
    // kColumnsMaxA, many columns: ranges of NR-column panels, about 4 per thread, each with its own
    // packing of A's few rows (or A read in place) and of its own part of B, and no waiting for a
    // shared B. On Zen 4 at 2 threads, Linear(784, 256) at batch 128: forward 305 -> 265 us, dX
    // 315 -> 260 us.
    const int64_t parts = std::min<int64_t>(tiles_n, 4 * threads);
    base::parallel_parts(threads, parts, [&](int64_t i) HWY_ATTR {
      const int64_t j0 = std::min(s.n, tiles_n * i / parts * NR), j1 = std::min(s.n, tiles_n * (i + 1) / parts * NR);
      if (j0 < j1) GemmRegion<D>(s, pl, a, b, c, 0, s.batch, 0, s.m, j0, j1);
    });
  }
}

// Whether m rows fill tiles nr wide at least 3/4 (the last tile's padding at most nr / 4).
inline bool TileFits(int64_t m, int64_t nr) { return 4 * ((nr - m % nr) % nr) <= nr; }

// Whether C^T's tiles for m rows of C are at least 3/4 full: 2 vectors wide (16 floats on AVX2),
// or on AVX-512 also 2 half vectors (32 or 16 floats). Batch 16 runs AVX-512's 32-wide tiles half
// empty (133 us for Linear(784, 256) on Zen 4, against 111 us unswapped) but fills 16-wide ones
// (70 us).
template <typename T>
bool SwapTilesFit(int64_t m) {
  const int64_t nr = static_cast<int64_t>(2 * hn::Lanes(hn::ScalableTag<T>()));
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
  if (TileFits(m, nr / 2)) return true;
#endif
  return TileFits(m, nr);
}

// Whether C = A B^T runs as dot products rather than through the blocked GEMM (which packs B):
// - up to kDotRows rows, B with up to kNarrowCols rows, or up to 2 * kDotRows rows when C^T's
//   tiles would not fill;
// - with 4-row tiles (AVX-512), also up to 64 rows when K >= 768, and few columns (C's tiles
//   would be mostly padding) when K >= 256. On Zen 4: Linear(784, 256) at batch 24 / 48 / 64 in
//   100 / 204 / 266 us against 137 / 217 / 287 (batch 32 even; 128 and K = 256 or 512 at 32-64
//   rows slower as dot products: 74 against 93-101 GFLOP/s); Linear(256, 10) at batch 128 in
//   10.4 us against 14.2 (K = 64 or 128: slower, 7.7 against 5.9 us).
template <typename T>
bool UseDotRows(const GemmShape& s) {
  if (!s.trans_b || s.trans_a) return false;
  if (s.m <= kDotRows || s.n <= kNarrowCols) return true;
  if (s.m <= 2 * kDotRows && !(s.m < s.n && SwapTilesFit<T>(s.m))) return true;
  if constexpr (kDotQuads) {
    const int64_t nr_full = static_cast<int64_t>(2 * hn::Lanes(hn::ScalableTag<T>()));
    if (s.m <= 64 && s.k >= 768) return true;
    if (2 * s.n <= nr_full && s.n < s.m && s.k >= 256) return true;
  }
  return false;
}

// C = A B^T as dot products on `threads` threads: ranges of whole tile columns, about 4 per thread.
template <typename T>
void DotRows(const GemmShape& s, const T* a, const T* b, T* c, int threads) {
  const int64_t unit = kDotQuads ? DotQuadCols(s.n) : kDotPairCols;
  const auto run = [&](int64_t j0, int64_t j1) HWY_ATTR {
    if (kDotQuads && unit == 5) GemmDotRows<5>(s, a, b, c, j0, j1);
    else GemmDotRows<6>(s, a, b, c, j0, j1);
  };
  if (threads <= 1) return run(0, s.n);
  const int64_t groups = (s.n + unit - 1) / unit, parts = std::min<int64_t>(groups, 4 * threads);
  base::parallel_parts(threads, parts, [&](int64_t i) HWY_ATTR {
    const int64_t j0 = std::min(s.n, groups * i / parts * unit), j1 = std::min(s.n, groups * (i + 1) / parts * unit);
    if (j0 < j1) run(j0, j1);
  });
}

// The blocked GEMM of s (already swapped to C^T when pl.c_transposed) with vectors of tag D.
template <class D, typename T = hn::TFromD<D>>
void GemmWith(D d, const GemmShape& s, Plan<T>& pl, const T* a, const T* b, T* c, int threads) {
  pl.NR = 2 * hn::Lanes(d);
  pl.MC = kMC<T>;
  pl.NC = std::max(pl.NR, kNC / pl.NR * pl.NR);
  pl.K = static_cast<size_t>(s.k);
  pl.KC = BlockK(pl.K);
  // Packing pays when the operand is reused from a layout the micro-kernel reads badly
  // (measured on AVX2 float, single thread, 32..2048):
  // - A (M, K) is read in place (6 row streams) unless its rows are 4 KiB or more apart, where
  //   the 6 rows of a tile fall into the same L1 sets (K >= 1024 floats: packed is 3% faster,
  //   below it reading in place is 2-20% faster: no packing pass).
  // - A stored (K, M) (dW = dY^T X) is read in place while its rows are at most 2 KiB (512 floats):
  //   a tile's MR values of column p are then adjacent in row p, and the rows come from L2 for
  //   less than a packing pass over A costs, most of all on 2 threads (the GPT's and the MLP's
  //   dW). Wider rows are packed: from M = 640 the second thread lost with A in place, and at
  //   M = 1024 (rows 4 KiB apart, one L1 set) one thread did too (figures in bench/results/).
  // - B is packed when transposed (the micro-kernel needs rows of B), and otherwise unless M is
  //   small (a few tiles per panel do not repay the packing; at large N the panel's rows, N
  //   apart, would thrash L1).
  pl.pack_a = s.trans_a ? s.m * static_cast<int64_t>(sizeof(T)) > 2048 : s.k * static_cast<int64_t>(sizeof(T)) >= 4096;
  pl.pack_b = s.packed_b || s.trans_b || s.m > 2 * static_cast<int64_t>(kMR);
  if (s.packed_b) pl.np = WholePanels(static_cast<size_t>(s.n), pl.NR);
  GemmBlocked<D>(s, pl, a, b, c, threads);
}

// Up to kSwapRows rows times a transposed B (Linear's forward at batch 9..32): packing B = W
// (N x K) costs about as much as the product; C^T = W X^T instead has the same shape class with
// the roles swapped, so only X (M x K, the smaller) is packed and W is read in place. C^T's
// tiles are written into C transposed (element by element, ~5% of a tile's time). Measured on
// Linear(784, 256): batch 16 in 86 us instead of 131, batch 32 in 170 instead of 205; from 48
// on the two are even (and batch 24 pads C^T's 16-wide tiles to 32: 8% slower swapped).
constexpr int64_t kSwapRows = 32;

// Whether the blocked GEMM computes C^T = op(B)^T op(A)^T into C's memory instead (B transposed):
// for few rows, only where C^T's tiles are at least 3/4 full (see SwapTilesFit); and for few
// columns (the classifier Linear(256, 10) at batch 128: C's NR-wide tiles would be mostly
// padding, C^T's MR-high ones are not: 10 rows, 6 + 4).
template <typename T>
bool SwapsToTransposedC(const GemmShape& s) {
  const bool few_rows = s.m <= kSwapRows && s.m < s.n && SwapTilesFit<T>(s.m);
  const int64_t nr_full = static_cast<int64_t>(2 * hn::Lanes(hn::ScalableTag<T>()));
  const bool few_cols = 2 * s.n <= nr_full && s.n < s.m;
  return s.trans_b && !s.trans_a && !s.packed_b && (few_rows || few_cols);
}

// Whether the dot-product, small-K and narrow paths take s (else the blocked GEMM).
template <typename T>
bool UnblockedPath(const GemmShape& s) {
  if (s.blocked || s.packed_b) return false;
  return UseSmallK<T>(s) || (s.trans_a && !s.trans_b && s.n <= kNarrowCols) || UseDotRows<T>(s);
}

// Whether the blocked GEMM computes s and writes C itself, untransposed (where its stores can add
// the bias and apply the epilogue): not for K = 0, the unblocked paths, or C^T.
template <typename T>
bool BlockedStoresC(const GemmShape& s) {
  return s.k > 0 && !UnblockedPath<T>(s) && !SwapsToTransposedC<T>(s);
}

template <typename T>
void Gemm(const GemmShape& s_in, const T* a_in, const T* b_in, T* c);

// A bias the blocked GEMM's stores cannot add (another path, C transposed, a batch, or no
// product): C filled with the bias rows first (by doubling: log2(M) copies), then the product
// accumulated onto it.
template <typename T>
void GemmBiasFirst(const GemmShape& s, const T* a, const T* b, T* c) {
  const size_t row_bytes = static_cast<size_t>(s.n) * sizeof(T);
  for (int64_t q = 0; q < s.batch; ++q) {
    T* C = c + q * s.stride_c;
    std::memcpy(C, s.bias, row_bytes);
    for (int64_t done = 1; done < s.m;) {
      const int64_t rows = std::min(done, s.m - done);
      std::memcpy(C + done * s.n, C, static_cast<size_t>(rows) * row_bytes);
      done += rows;
    }
    if (s.stride_c == 0) break;  // one C, summed into
  }
  GemmShape t = s;
  t.bias = nullptr, t.accumulate = true;
  Gemm(t, a, b, c);
}

// The epilogue (gemm.h) as a pass over C, after a product computed without it.
template <typename T>
void GemmEpilogueAfter(const GemmShape& s, const T* a, const T* b, T* c) {
  GemmShape t = s;
  t.mul = t.residual = nullptr;
  Gemm(t, a, b, c);
  EpilogueBlock(static_cast<const T*>(s.mul), static_cast<const T*>(s.residual), c, static_cast<size_t>(s.n), 0,
                static_cast<size_t>(s.m), 0, static_cast<size_t>(s.n));
}

template <typename T>
void Gemm(const GemmShape& s_in, const T* a_in, const T* b_in, T* c) {
  if (s_in.m <= 0 || s_in.n <= 0 || s_in.batch <= 0) return;
  if (s_in.mul || s_in.residual) {
    if (s_in.batch != 1 || s_in.accumulate || (s_in.mul && s_in.residual))
      throw std::invalid_argument("gemm: the epilogue needs batch 1, no accumulate, and one of mul and residual");
    if (!BlockedStoresC<T>(s_in)) return GemmEpilogueAfter(s_in, a_in, b_in, c);
  }
  if (s_in.bias && (s_in.batch != 1 || !BlockedStoresC<T>(s_in))) return GemmBiasFirst(s_in, a_in, b_in, c);
  if (s_in.k <= 0) return GemmEmptyK(s_in, c);
  if (s_in.packed_b && s_in.batch != 1 && s_in.stride_b != 0)
    throw std::invalid_argument("gemm: a packed B is one matrix: batch 1 or stride_b 0");
  const hn::ScalableTag<T> d;
  const double macs = static_cast<double>(s_in.m) * static_cast<double>(s_in.n) * static_cast<double>(s_in.k);
  // Threads from the work (autograd/grain.h): one below two grains of multiply-adds, or below the
  // multiply-adds per operand byte that pay for moving the operands to a second core.
  const double operand_bytes = sizeof(T) * static_cast<double>(s_in.batch) *
                               (static_cast<double>(s_in.m) * s_in.k + static_cast<double>(s_in.k) * s_in.n +
                                static_cast<double>(s_in.m) * s_in.n);
  const int threads = macs * static_cast<double>(s_in.batch) < grains().gemm_intensity * operand_bytes
                          ? 1
                          : threads_for(macs * static_cast<double>(s_in.batch), grains().gemm);
  if (!s_in.blocked && !s_in.packed_b) {
    const GemmShape& s = s_in;
    const T *a = a_in, *b = b_in;
    if (UseSmallK<T>(s)) return SmallK(s, a, b, c, threads);
    if (s.trans_a && !s.trans_b && s.n <= kNarrowCols) {
      if (threads <= 1) return GemmNarrowTransA(s, a, b, c, 0, s.m);
      const int64_t unit = static_cast<int64_t>(2 * hn::Lanes(d)), groups = (s.m + unit - 1) / unit;
      const int64_t parts = std::min<int64_t>(groups, 4 * threads);
      base::parallel_parts(threads, parts, [&](int64_t i) HWY_ATTR {
        const int64_t i0 = std::min(s.m, groups * i / parts * unit);
        const int64_t i1 = std::min(s.m, groups * (i + 1) / parts * unit);
        if (i0 < i1) GemmNarrowTransA(s, a, b, c, i0, i1);
      });
      return;
    }
    if (UseDotRows<T>(s)) return DotRows(s, a, b, c, threads);
  }
  Plan<T> pl;
  pl.mul = static_cast<const T*>(s_in.mul), pl.residual = static_cast<const T*>(s_in.residual);
  if (s_in.packed_b) pl.packed = b_in;
  GemmShape s = s_in;
  const T *a = a_in, *b = b_in;
  const bool swap = SwapsToTransposedC<T>(s);
  if (swap) {
    // C^T (N, M) = B (N, K) A^T: A = the stored B, read as (N, K); B = A stored (M, K), transposed.
    s.m = s_in.n, s.n = s_in.m, s.stride_a = s_in.stride_b, s.stride_b = s_in.stride_a;
    a = b_in, b = a_in;
    pl.c_transposed = true;
  }
#if HWY_TARGET <= HWY_AVX3 && HWY_ARCH_X86
  // C^T's M columns fill only half-width tiles: 256-bit vectors, with AVX-512's instructions.
  const int64_t nr_full = static_cast<int64_t>(2 * hn::Lanes(d));
  const bool few_rows = s_in.m <= kSwapRows && s_in.m < s_in.n && SwapTilesFit<T>(s_in.m);
  if (swap && few_rows && !TileFits(s_in.m, nr_full))
    return GemmWith(hn::CappedTag<T, 32 / sizeof(T)>(), s, pl, a, b, c, threads);
#endif
  return GemmWith(d, s, pl, a, b, c, threads);
}

// gemm_pack_b (gemm.h): op(B) (K, N) in the layout GemmWith's plan reads with a packed_b shape:
// per K block of BlockK(K) rows (at pc), all N columns in NR-wide micro-panels (PackB), np columns
// apart per row of the block; the panels are the ones GemmRegion would pack, so the products are
// the same.
template <typename T>
int64_t PackedBSize(const GemmShape& s) {
  if (s.k <= 0 || s.n <= 0) return 0;
  const size_t nr = 2 * hn::Lanes(hn::ScalableTag<T>());
  return s.k * static_cast<int64_t>(WholePanels(static_cast<size_t>(s.n), nr));
}

template <typename T>
void PackWholeB(const GemmShape& s, const T* b, T* packed) {
  const hn::ScalableTag<T> d;
  if (s.k <= 0 || s.n <= 0) return;
  Plan<T> pl;
  pl.NR = 2 * hn::Lanes(d);
  const size_t K = static_cast<size_t>(s.k), KC = BlockK(K), np = WholePanels(static_cast<size_t>(s.n), pl.NR);
  const Operands<T> o = pl.operands(s, nullptr, b, nullptr, 0);
  for (size_t pc = 0; pc < K; pc += KC)
    PackB(d, o, static_cast<int64_t>(pc), std::min(KC, K - pc), 0, static_cast<size_t>(s.n), packed + pc * np);
}

}  // namespace normlab::autograd::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
