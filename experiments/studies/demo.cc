// `normlab demo`: a 2-layer network trained by hand on a synthetic XOR problem, printing its loss.
// It uses only the autograd core, as the README's API example does.
#include "experiments/studies/demo.h"

#include <cstdio>

#include "autograd/autograd.h"

namespace normlab::experiments::studies {

using namespace autograd;

int run_demo(int steps, uint64_t seed) {
  Generator gen(seed);
  // Data: 256 points in four Gaussian clusters around (+-1, +-1); the class is the XOR of the signs.
  const int64_t n = 256;
  Tensor x = empty({n, 2});
  std::vector<int64_t> y(n);
  for (int64_t i = 0; i < n; ++i) {
    const int a = static_cast<int>(gen.randint(2)), b = static_cast<int>(gen.randint(2));
    x.set_flat(2 * i, (a ? 1 : -1) + 0.3 * gen.normal());
    x.set_flat(2 * i + 1, (b ? 1 : -1) + 0.3 * gen.normal());
    y[i] = a ^ b;
  }
  // Model: 2 -> 16 -> 2 with tanh, weights ~ U(-1/sqrt(in), 1/sqrt(in)) as PyTorch's Linear.
  Tensor w1 = rand({16, 2}, gen, -0.7071, 0.7071), b1 = rand({16}, gen, -0.7071, 0.7071);
  Tensor w2 = rand({2, 16}, gen, -0.25, 0.25), b2 = rand({2}, gen, -0.25, 0.25);
  std::vector<Tensor> params{w1, b1, w2, b2};
  for (Tensor& p : params) p.requires_grad_();
  const double lr = 0.5;
  std::printf("normlab demo: an MLP 2-16-2 learns XOR (%lld points), SGD lr %.2f\n", static_cast<long long>(n), lr);
  double first = 0, last = 0;
  for (int step = 0; step <= steps; ++step) {
    Tensor loss = cross_entropy(linear(tanh(linear(x, w1, b1)), w2, b2), y);
    for (Tensor& p : params) p.set_grad(Tensor());
    loss.backward();
    {
      NoGradGuard no_grad;
      for (Tensor& p : params) add_(p, p.grad(), -lr);
    }
    if (step == 0) first = loss.item();
    last = loss.item();
    if (step % (steps / 10 == 0 ? 1 : steps / 10) == 0) std::printf("step %4d  loss %.4f\n", step, last);
  }
  std::printf("loss %.4f -> %.4f\n", first, last);
  return last < first ? 0 : 1;
}

}  // namespace normlab::experiments::studies
