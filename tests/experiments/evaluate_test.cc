// Evaluation (experiments/models/evaluate.h): it leaves the allocator's cache empty, so the buffers of
// training steps and of evaluation batches are never cached at once (peak memory).
#include <boost/test/unit_test.hpp>

#include "autograd/autograd.h"
#include "data/dataset.h"
#include "experiments/models/evaluate.h"
#include "nn/nn.h"

using namespace normlab;

BOOST_AUTO_TEST_SUITE(evaluation)

BOOST_AUTO_TEST_CASE(evaluation_leaves_no_cached_buffers) {
  // The cache starts off under AddressSanitizer (and with NORMLAB_NO_CACHING_ALLOCATOR=1): turn it
  // on for this test, and restore the setting after.
  const bool was_on = autograd::caching_allocator_enabled();
  autograd::set_caching_allocator_enabled(true);
  struct Restore {
    bool on;
    ~Restore() { autograd::set_caching_allocator_enabled(on); }
  } restore{was_on};
  autograd::Generator gen(3);
  nn::Sequential model;
  model.add(std::make_shared<nn::Linear>(20, 16, gen));
  model.add(std::make_shared<nn::ReLU>());
  model.add(std::make_shared<nn::Linear>(16, 4, gen));
  data::Dataset d;
  d.x = autograd::randn({300, 20}, gen);
  for (int64_t i = 0; i < 300; ++i) d.labels.push_back(i % 4);
  d.num_classes = 4;
  d.class_names = {"a", "b", "c", "d"};
  {  // a training-like step fills the cache
    autograd::Tensor y = model(autograd::randn({64, 20}, gen));
    autograd::cross_entropy(y, std::vector<int64_t>(64, 1)).backward();
  }
  BOOST_TEST(autograd::memory_stats().cached_bytes > 0u);
  const auto r = experiments::evaluate(model, d, 100);
  BOOST_TEST(r.score >= 0.0);
  BOOST_TEST(autograd::memory_stats().cached_bytes == 0u, "evaluate left " << autograd::memory_stats().cached_bytes
                                                                           << " bytes in the allocator's cache");
}

BOOST_AUTO_TEST_SUITE_END()
