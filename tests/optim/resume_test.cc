// Checkpoint and resume: a model with BatchNorm trained with momentum SGD, saved (model and
// optimizer) after 3 steps, loaded into fresh objects and trained 3 more steps, ends bitwise equal
// to 6 steps straight through.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>

#include "nn/nn.h"
#include "optim/checkpoint.h"
#include "optim/sgd.h"

using namespace normlab;
using autograd::Tensor;

namespace {

std::shared_ptr<nn::Sequential> make_model(uint64_t seed) {
  autograd::Generator gen(seed);
  auto m = std::make_shared<nn::Sequential>();
  m->add(std::make_shared<nn::Linear>(5, 8, gen));
  m->add(std::make_shared<nn::BatchNorm1d>(8));
  m->add(std::make_shared<nn::ReLU>());
  m->add(std::make_shared<nn::Linear>(8, 3, gen));
  return m;
}

void train_steps(nn::Sequential& m, optim::SGD& opt, int from, int to) {
  for (int s = from; s < to; ++s) {
    autograd::Generator gen(1000 + s);  // the batch of step s, the same in both runs
    const Tensor x = autograd::randn({6, 5}, gen);
    const std::vector<int64_t> y{0, 1, 2, 0, 1, 2};
    Tensor loss = autograd::cross_entropy(m(x), y);
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
}

optim::SGDOptions options() { return {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true}; }

}  // namespace

BOOST_AUTO_TEST_SUITE(resume)

BOOST_AUTO_TEST_CASE(save_load_and_train_on_equals_training_straight_through) {
  const auto dir = std::filesystem::temp_directory_path() / ("normlab_resume_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model_path = (dir / "model.safetensors").string(), opt_path = (dir / "optim.safetensors").string();

  auto straight = make_model(0);
  optim::SGD opt_straight(straight->parameters(), options());
  train_steps(*straight, opt_straight, 0, 6);

  auto first = make_model(0);
  optim::SGD opt_first(first->parameters(), options());
  train_steps(*first, opt_first, 0, 3);
  nn::save_module(model_path, *first);
  optim::save_optimizer(opt_path, opt_first, 3);

  auto resumed = make_model(42);  // other initial weights, overwritten by the load
  optim::SGD opt_resumed(resumed->parameters(), {.lr = 0.5, .momentum = 0.5});  // hyper-parameters come from the file
  nn::load_module(model_path, *resumed);
  BOOST_TEST(optim::load_optimizer(opt_path, opt_resumed) == 3);
  train_steps(*resumed, opt_resumed, 3, 6);

  const auto a = straight->state_dict(), b = resumed->state_dict();
  BOOST_REQUIRE_EQUAL(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    BOOST_TEST_CONTEXT(a[i].first) {
      BOOST_TEST(a[i].first == b[i].first);
      BOOST_TEST(a[i].second.to_vector() == b[i].second.to_vector(), boost::test_tools::per_element());
    }
  }
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(loading_a_mismatched_optimizer_state_is_refused_and_changes_nothing) {
  const auto dir = std::filesystem::temp_directory_path() / ("normlab_resume_bad_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "optim.safetensors").string();
  auto m = make_model(0);
  optim::SGD opt(m->parameters(), options());
  train_steps(*m, opt, 0, 1);
  optim::save_optimizer(path, opt, 1);
  // An optimizer over a smaller model: momentum buffer shapes do not match.
  autograd::Generator gen(0);
  nn::Linear other(5, 2, gen);
  optim::SGD opt_other(other.parameters(), {.lr = 0.01});
  BOOST_CHECK_THROW(optim::load_optimizer(path, opt_other), normlab::Error);
  BOOST_TEST(opt_other.lr() == 0.01);
  // A truncated file.
  std::filesystem::resize_file(path, 20);
  BOOST_CHECK_EXCEPTION(optim::load_optimizer(path, opt), normlab::Error, [&](const normlab::Error& e) {
    return std::string(e.what()).find(path) != std::string::npos;
  });
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_SUITE_END()
