// Memory over a long training run: 10,000 steps of an MLP 2-32-32-2 with BatchNorm and momentum
// SGD keep the same live storage bytes after the first steps (every step's graph and buffers are
// freed), and the counter does catch a step that keeps its graph alive.
#include <boost/test/unit_test.hpp>
#include <sys/resource.h>

#include <vector>

#include "nn/nn.h"
#include "optim/sgd.h"

using namespace normlab;
using autograd::Tensor;

namespace {

std::shared_ptr<nn::Sequential> make_model() {
  autograd::Generator gen(7);
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Linear>(2, 32, gen));
  m->add(std::make_shared<nn::BatchNorm1d>(32));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Linear>(32, 32, gen));
  m->add(std::make_shared<nn::BatchNorm1d>(32));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Linear>(32, 2, gen));
  return m;
}

// One step on a fixed batch; returns the loss (which holds the graph until dropped).
Tensor step(nn::Sequential& m, optim::SGD& opt, const Tensor& x, const std::vector<int64_t>& y) {
  Tensor loss = autograd::cross_entropy(m(x), y);
  opt.zero_grad();
  loss.backward();
  opt.step();
  return loss;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(memory)

BOOST_AUTO_TEST_CASE(live_storage_is_flat_over_10000_training_steps) {
  auto m = make_model();
  optim::SGD opt(m->parameters(), {.lr = 0.01, .momentum = 0.9});
  autograd::Generator gen(1);
  const Tensor x = autograd::randn({32, 2}, gen);
  std::vector<int64_t> y(32);
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int64_t>(i % 2);
  // After the first steps the momentum buffers and gradients exist; from then on every step
  // must end with exactly the same live buffers.
  for (int s = 0; s < 3; ++s) step(*m, opt, x, y);
  const autograd::MemoryStats base = autograd::memory_stats();
  size_t max_live = 0, max_blocks = 0;
  double last = 0;
  for (int s = 0; s < 10000; ++s) {
    last = step(*m, opt, x, y).item();
    const autograd::MemoryStats now = autograd::memory_stats();
    max_live = std::max(max_live, now.live_bytes);
    max_blocks = std::max(max_blocks, now.live_blocks);
  }
  BOOST_TEST(std::isfinite(last));
  BOOST_TEST(max_live == base.live_bytes);
  BOOST_TEST(max_blocks == base.live_blocks);
  // With the cache on, the steady state takes every buffer from the cache.
  const autograd::MemoryStats end = autograd::memory_stats();
  if (autograd::caching_allocator_enabled())
    BOOST_TEST(end.allocations - end.cache_hits == base.allocations - base.cache_hits);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  BOOST_TEST_MESSAGE("10,000 steps: live storage " << base.live_bytes << " bytes in " << base.live_blocks
                                                   << " buffers, peak RSS " << ru.ru_maxrss << " KiB");
}

BOOST_AUTO_TEST_CASE(a_step_that_keeps_its_graph_shows_up_as_growth) {
  // The check above can fail: keeping each step's loss keeps its graph and saved tensors.
  auto m = make_model();
  optim::SGD opt(m->parameters(), {.lr = 0.01, .momentum = 0.9});
  autograd::Generator gen(1);
  const Tensor x = autograd::randn({32, 2}, gen);
  const std::vector<int64_t> y(32, 1);
  for (int s = 0; s < 3; ++s) step(*m, opt, x, y);
  const size_t base = autograd::memory_stats().live_bytes;
  std::vector<Tensor> kept;
  for (int s = 0; s < 10; ++s) {
    Tensor loss = autograd::cross_entropy((*m)(x), y);
    opt.zero_grad();
    loss.backward(Tensor(), /*retain_graph=*/true);  // the saved tensors stay with the graph
    opt.step();
    kept.push_back(loss);
  }
  BOOST_TEST(autograd::memory_stats().live_bytes > base + 10 * 32 * 32 * 4);
  kept.clear();
  BOOST_TEST(autograd::memory_stats().live_bytes == base);
}

BOOST_AUTO_TEST_SUITE_END()
