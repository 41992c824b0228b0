// Differentiable matrix products: forward and backward side by side, all through kernels::gemm.
#include "autograd/matmul.h"

#include <algorithm>
#include <cstring>

#include "autograd/engine.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/reduce.h"

namespace normlab::autograd {

namespace k = kernels;
using Grads = std::vector<Tensor>;

namespace {

std::string mat_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r + ")";
}

template <typename T>
void run_gemm(const k::GemmShape& s, const Tensor& a, const Tensor& b, const Tensor& c) {
  k::gemm(s, a.data<T>(), b.data<T>(), c.data<T>());
}

void gemm(const k::GemmShape& s, const Tensor& a, const Tensor& b, const Tensor& c) {
  if (c.numel() == 0) return;
  if (s.batch == 0) {  // an empty batch summed into a shared operand's gradient: zeros
    fill_(c, 0);
    return;
  }
  if (a.dtype() == DType::Float32) run_gemm<float>(s, a, b, c);
  else run_gemm<double>(s, a, b, c);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  const auto fail = [&] {
    throw Error("matmul: shapes " + mat_str(a.shape()) + " and " + mat_str(b.shape()) + " cannot be multiplied");
  };
  if (a.dtype() != b.dtype())
    throw Error("matmul: expected both tensors to have the same dtype, got " + dtype_name(a.dtype()) + " and " +
                dtype_name(b.dtype()));
  if (a.dim() < 2 || a.dim() > 3 || b.dim() < 2 || b.dim() > 3) {
    throw Error("matmul: expected 2-D or 3-D (batched) tensors, got shapes " + mat_str(a.shape()) + " and " +
                mat_str(b.shape()));
  }
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (b.size(-2) != K) fail();
  const int64_t ba = a.dim() == 3 ? a.size(0) : 1, bb = b.dim() == 3 ? b.size(0) : 1;
  if (a.dim() == 3 && b.dim() == 3 && ba != bb) fail();
  const int64_t batch = a.dim() == 3 ? ba : bb;  // (not max(ba, bb): a batch of 0 is 0)
  const bool batched = a.dim() == 3 || b.dim() == 3;
  Tensor out = empty(batched ? Shape{batch, M, N} : Shape{M, N}, a.dtype());
  k::GemmShape s;
  s.m = M, s.n = N, s.k = K, s.batch = batch;
  s.stride_a = a.dim() == 3 ? M * K : 0;
  s.stride_b = b.dim() == 3 ? K * N : 0;
  s.stride_c = M * N;
  gemm(s, a, b, out);
  // Saves A only if B needs a gradient, and B only if A does.
  return record(batched ? "BmmBackward0" : "MmBackward0", out, {a, b},
                [a = b.requires_grad() ? saved(a) : Tensor(), b = a.requires_grad() ? saved(b) : Tensor(),
                 sa = a.shape(), sb = b.shape(), dt = a.dtype(), s](const Tensor& g, const Needs& n) {
    Tensor ga, gb;
    if (n[0]) {  // dA = dC B^T: (M, N) (N, K); a 2-D A shared by the batch sums its gradients
      ga = empty(sa, dt);
      k::GemmShape t;
      t.trans_b = true, t.m = s.m, t.n = s.k, t.k = s.n, t.batch = s.batch;
      t.stride_a = s.stride_c, t.stride_b = s.stride_b, t.stride_c = s.stride_a;
      gemm(t, g, b, ga);
    }
    if (n[1]) {  // dB = A^T dC: (K, M) (M, N)
      gb = empty(sb, dt);
      k::GemmShape t;
      t.trans_a = true, t.m = s.k, t.n = s.n, t.k = s.m, t.batch = s.batch;
      t.stride_a = s.stride_a, t.stride_b = s.stride_c, t.stride_c = s.stride_b;
      gemm(t, a, g, gb);
    }
    return Grads{ga, gb};
  });
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (weight.dim() != 2) throw Error("linear: the weight must be 2-D (out, in), got shape " + shape_str(weight.shape()));
  const int64_t out_f = weight.size(0), in_f = weight.size(1);
  if (x.dim() < 1 || x.size(-1) != in_f)
    throw Error("linear: expected input with " + std::to_string(in_f) + " features in its last dim, got shape " +
                shape_str(x.shape()) + " (weight " + shape_str(weight.shape()) + ")");
  if (x.dtype() != weight.dtype() || (bias.defined() && bias.dtype() != x.dtype()))
    throw Error("linear: input, weight and bias must have the same dtype, got input " + dtype_name(x.dtype()) +
                ", weight " + dtype_name(weight.dtype()) +
                (bias.defined() ? ", bias " + dtype_name(bias.dtype()) : std::string()));
  if (bias.defined() && bias.shape() != Shape{out_f})
    throw Error("linear: expected a bias of shape " + shape_str({out_f}) + ", got " + shape_str(bias.shape()));
  int64_t rows = 1;  // the product of x's leading dims (x.numel() / in_f, unless in_f is 0)
  for (int64_t d = 0; d + 1 < x.dim(); ++d) rows *= x.size(d);
  Shape os = x.shape();
  os.back() = out_f;
  Tensor out = empty(os, x.dtype());
  // y (rows, out) = x (rows, in) W^T, then + b on every row.
  k::GemmShape s;
  s.trans_b = true, s.m = rows, s.n = out_f, s.k = in_f;
  if (bias.defined()) {
    // Start from the bias broadcast to every row, and accumulate the product onto it. The rows are
    // filled by doubling (bias into row 0, rows [0, k) into [k, 2k), ...): log2(rows) copies, not
    // one call to memcpy per row of a few bytes.
    dispatch(x.dtype(), [&](auto zero) {
      using T = decltype(zero);
      T* y = out.data<T>();
      const size_t row_bytes = static_cast<size_t>(out_f) * sizeof(T);
      if (rows > 0) std::memcpy(y, bias.data<T>(), row_bytes);
      for (int64_t done = 1; done < rows;) {
        const int64_t n = std::min(done, rows - done);
        std::memcpy(y + done * out_f, y, static_cast<size_t>(n) * row_bytes);
        done += n;
      }
    });
    s.accumulate = true;
  }
  if (rows == 0 || in_f == 0) {
    if (!bias.defined()) fill_(out, 0);  // a sum over no features
  } else {
    gemm(s, x, weight, out);
  }
  // Saves x only if the weight needs a gradient, and the weight only if x does.
  return record(bias.defined() ? "AddmmBackward0" : "MmBackward0", out, {x, weight, bias},
                [x = weight.requires_grad() ? saved(x) : Tensor(), w = x.requires_grad() ? saved(weight) : Tensor(),
                 xs = x.shape(), dt = x.dtype(), rows, in_f, out_f](const Tensor& g, const Needs& n) {
                  Tensor gx, gw, gb;
                  if (n[0]) {  // dx (rows, in) = dy (rows, out) W (out, in)
                    gx = empty(xs, dt);
                    k::GemmShape t;
                    t.m = rows, t.n = in_f, t.k = out_f;
                    gemm(t, g, w, gx);
                  }
                  if (n[1]) {  // dW (out, in) = dy^T (out, rows) x (rows, in)
                    gw = empty({out_f, in_f}, dt);
                    k::GemmShape t;
                    t.trans_a = true, t.m = out_f, t.n = in_f, t.k = rows;
                    gemm(t, g, x, gw);
                  }
                  if (n[2]) {  // db = sum of dy over rows: the kernel of sum(reshape(g, {rows, out_f}), {0})
                    gb = empty({out_f}, dt);
                    if (out_f > 0)
                      dispatch(dt, [&](auto zero) {
                        using T = decltype(zero);
                        k::reduce(k::ReduceOp::Sum, 1, rows, out_f, g.data<T>(), gb.data<T>());
                      });
                  }
                  return Grads{gx, gw, gb};
                });
}

}  // namespace normlab::autograd
