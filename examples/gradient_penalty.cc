// docs/library.md's second-order example: an MLP with BatchNorm trained on two spirals with an
// input-gradient penalty, loss + lambda ||d loss / d x||^2 (the gradient comes from a create_graph
// backward through BatchNorm in training mode, so the penalty's own gradient is exact), then the
// Hessian of the loss at the trained weights probed with Hessian-vector products: its top
// eigenvalue by power iteration and its trace by Hutchinson's estimator.
//
// Usage: gradient_penalty [LAMBDA]   (default 0.1; 0 trains without the penalty)
// It prints the loss and the penalty every 10 epochs, then the accuracy and the curvature.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "data/loader.h"
#include "data/synthetic.h"
#include "nn/nn.h"
#include "optim/optim.h"

using namespace normlab;
using autograd::Tensor;

int main(int argc, char** argv) {
  const double lambda = argc > 1 ? std::atof(argv[1]) : 0.1;
  data::Dataset spirals = data::make_spirals(/*n=*/1000, /*noise=*/0.05, /*seed=*/0);
  autograd::Generator gen(0);
  auto model = std::make_shared<nn::Sequential>();
  model->add(std::make_shared<nn::Linear>(2, 64, gen));
  model->add(std::make_shared<nn::BatchNorm1d>(64));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::Linear>(64, 64, gen));
  model->add(std::make_shared<nn::BatchNorm1d>(64));
  model->add(std::make_shared<nn::ReLU>());
  model->add(std::make_shared<nn::Linear>(64, 2, gen));

  optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  data::DataLoader loader(spirals, /*batch_size=*/32, /*shuffle=*/true, /*seed=*/0, /*drop_last=*/true);
  for (int epoch = 0; epoch < 40; ++epoch) {
    double total_loss = 0, total_penalty = 0;
    for (const data::Batch& b : loader.epoch(epoch)) {
      Tensor x = b.x.detach().clone().requires_grad_();  // the input is differentiated too
      Tensor loss = autograd::cross_entropy((*model)(x), b.labels);
      // d loss / d x with its own graph (create_graph), so the penalty can be backpropagated.
      Tensor gx = autograd::grad({loss}, {x}, {}, {.create_graph = true})[0];
      Tensor penalty = autograd::sum(autograd::mul(gx, gx));
      opt.zero_grad();
      autograd::add(loss, autograd::mul(penalty, lambda)).backward();
      opt.step();
      total_loss += loss.item();
      total_penalty += penalty.item();
    }
    if (epoch % 10 == 9)
      std::printf("epoch %2d  loss %.4f  penalty %.5f\n", epoch + 1, total_loss / loader.num_batches(),
                  total_penalty / loader.num_batches());
  }

  // Accuracy over the whole set, in eval mode (running statistics).
  model->eval();
  int64_t correct = 0;
  {
    autograd::NoGradGuard no_grad;
    const Tensor logits = (*model)(spirals.x);
    for (int64_t i = 0; i < logits.size(0); ++i)
      correct += (logits.at({i, 1}) > logits.at({i, 0}) ? 1 : 0) == spirals.labels[i];
  }
  std::printf("accuracy %.3f\n", static_cast<double>(correct) / static_cast<double>(spirals.labels.size()));

  // The Hessian of the full-set loss (eval mode) with respect to every parameter, by products H v.
  const Tensor loss = autograd::cross_entropy((*model)(spirals.x), spirals.labels);
  const autograd::HessianOperator hessian(loss, model->parameters());
  const autograd::EigenResult top = autograd::top_eigenvalue(hessian, {.max_iters = 100, .tol = 1e-4});
  const autograd::TraceResult trace = autograd::hessian_trace(hessian, {.samples = 50});
  std::printf("top Hessian eigenvalue %.4f (%lld products, %s)\n", top.eigenvalue,
              static_cast<long long>(top.iterations), top.converged ? "converged" : "not converged");
  std::printf("Hessian trace %.3f +- %.3f (Hutchinson, %lld samples)\n", trace.trace, trace.standard_error,
              static_cast<long long>(trace.samples));
  // What the doc-test checks: it learned the spirals, and the curvature is a finite number.
  const double acc = static_cast<double>(correct) / static_cast<double>(spirals.labels.size());
  return acc >= 0.9 && std::isfinite(top.eigenvalue) && std::isfinite(trace.trace) ? 0 : 1;
}
