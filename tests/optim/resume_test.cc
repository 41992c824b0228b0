// Checkpoint and resume: a model with BatchNorm trained with momentum SGD, saved (model and
// optimizer) after 3 steps, loaded into fresh objects and trained 3 more steps, ends bitwise equal
// to 6 steps straight through; the same under a warmup + cosine schedule, resumed the way
// optim/lr_scheduler.h documents; and every refused optimizer load leaves the optimizer, the model
// and the file exactly as they were.
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "nn/nn.h"
#include "optim/checkpoint.h"
#include "optim/lr_scheduler.h"
#include "optim/sgd.h"
#include "serialize/training_state.h"
#include "tests/optim/support.h"
#include "tests/support/files.h"
#include "tests/support/fixtures.h"

using namespace normlab;
using autograd::Tensor;
using normlab::test::bytes_of;
using normlab::test::expect_same_bits;
using normlab::test::make_model;
using normlab::test::read_file;
using normlab::test::TempDir;
using normlab::test::train_steps;
using normlab::test::with_header;
using normlab::test::with_header_length;
using normlab::test::write_file;

namespace {

optim::SGDOptions options() { return {.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-3, .nesterov = true}; }

// Every bit of a model's state_dict and an optimizer's state (tensors, scalars, shapes and dtypes).
std::map<std::string, std::string> snapshot(const nn::Module& m, const optim::Optimizer& opt) {
  std::map<std::string, std::string> s;
  for (auto& [n, t] : m.state_dict()) s["model." + n] = bytes_of(t);
  const optim::OptimizerState st = opt.state();
  for (auto& [n, t] : st.tensors) s["optim." + n] = bytes_of(t);
  for (auto& [n, v] : st.scalars) s["scalar." + n] = std::string(reinterpret_cast<const char*>(&v), sizeof v);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(resume)

BOOST_AUTO_TEST_CASE(save_load_and_train_on_equals_training_straight_through) {
  TempDir dir;
  const std::string model_path = dir.file("model.safetensors"), opt_path = dir.file("optim.safetensors");

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
  expect_same_bits(*straight, *resumed);
}

BOOST_AUTO_TEST_CASE(loading_a_mismatched_optimizer_state_is_refused_and_changes_nothing) {
  TempDir dir;
  const std::string path = dir.file("optim.safetensors");
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
}

BOOST_AUTO_TEST_CASE(resuming_under_a_warmup_and_cosine_schedule_equals_training_straight_through) {
  // 3 warmup steps from 0.1 x the lr, then cosine over 9 steps: the lr differs at every step.
  const auto schedule = [] { return optim::Chain(optim::LinearWarmup(3, 0.1), optim::CosineAnnealingLR(9), 3); };
  const int total = 12;
  auto straight = make_model(0);
  optim::SGD opt_straight(straight->parameters(), options());
  optim::LRScheduler sched_straight(opt_straight, schedule());
  train_steps(*straight, opt_straight, 0, total, &sched_straight);
  BOOST_TEST(sched_straight.last_step() == total);

  for (int saved_at : {2, 7}) {  // in the warmup, in the cosine
    BOOST_TEST_CONTEXT("saved after step " << saved_at) {
      TempDir dir;
      const std::string model_path = dir.file("model.safetensors"), opt_path = dir.file("optim.safetensors");
      auto first = make_model(0);
      optim::SGD opt_first(first->parameters(), options());
      optim::LRScheduler sched_first(opt_first, schedule());
      train_steps(*first, opt_first, 0, saved_at, &sched_first);
      nn::save_module(model_path, *first);
      optim::save_optimizer(opt_path, opt_first, sched_first.last_step());  // the schedule's position
      const double saved_lr = opt_first.lr();

      // The documented way (optim/lr_scheduler.h): the optimizer with the run's options and its
      // scheduler made as at the start (base lr 0.1), then the checkpoint, then set_step.
      auto resumed = make_model(42);
      optim::SGD opt_resumed(resumed->parameters(), options());
      optim::LRScheduler sched_resumed(opt_resumed, schedule());
      nn::load_module(model_path, *resumed);
      const int64_t step = optim::load_optimizer(opt_path, opt_resumed);
      BOOST_TEST(step == saved_at);
      sched_resumed.set_step(step);
      BOOST_TEST(sched_resumed.base_lr() == 0.1);
      BOOST_TEST(opt_resumed.lr() == saved_lr);  // bitwise: the same schedule at the same step
      train_steps(*resumed, opt_resumed, saved_at, total, &sched_resumed);

      BOOST_TEST(opt_resumed.lr() == opt_straight.lr());
      BOOST_TEST(opt_resumed.steps() == opt_straight.steps());
      for (size_t i = 0; i < opt_straight.parameters().size(); ++i)
        BOOST_TEST((bytes_of(opt_resumed.momentum_buffer(i)) == bytes_of(opt_straight.momentum_buffer(i))));
      expect_same_bits(*straight, *resumed);

      // Why the order matters: a scheduler made after the load takes the loaded, already scheduled
      // lr as its base and would scale the rest of the schedule by it.
      optim::SGD opt_late(make_model(42)->parameters(), options());
      optim::load_optimizer(opt_path, opt_late);
      optim::LRScheduler sched_late(opt_late, schedule());
      BOOST_TEST(sched_late.base_lr() == saved_lr);
      BOOST_TEST(sched_late.base_lr() != 0.1);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_refused_optimizer_load_leaves_optimizer_model_and_file_unchanged) {
  TempDir dir;
  auto m = make_model(0);
  optim::SGD opt(m->parameters(), options());
  optim::LRScheduler sched(opt, optim::CosineAnnealingLR(10));
  train_steps(*m, opt, 0, 2, &sched);  // momentum buffers, step count and a scheduled lr to keep
  // A good file from another run of the same model, to corrupt.
  auto other = make_model(1);
  optim::SGD opt_other(other->parameters(), {.lr = 0.05, .momentum = 0.5});
  train_steps(*other, opt_other, 5, 8);
  save_optimizer(dir.file("good.safetensors"), opt_other, 3);
  const std::string good = read_file(dir.file("good.safetensors"));
  uint64_t n = 0;
  std::memcpy(&n, good.data(), 8);
  const nlohmann::json h = nlohmann::json::parse(good.substr(8, n));
  const uint64_t data_size = good.size() - 8 - n;

  auto refused = [&](const std::string& name, const std::string& bytes, const std::vector<std::string>& parts) {
    BOOST_TEST_CONTEXT("file " << name) {
      const std::string path = dir.file(name + ".safetensors");
      write_file(path, bytes);
      const auto before = snapshot(*m, opt);
      const double lr = opt.lr();
      try {
        optim::load_optimizer(path, opt);
        BOOST_ERROR("load_optimizer accepted " << name);
      } catch (const normlab::Error& e) {
        const std::string msg = e.what();
        BOOST_TEST_INFO("message: " << msg);
        BOOST_CHECK(msg.find(path) != std::string::npos);
        for (auto& p : parts) BOOST_CHECK_MESSAGE(msg.find(p) != std::string::npos, "expected '" << p << "' in: " << msg);
      }
      BOOST_CHECK(snapshot(*m, opt) == before);
      BOOST_TEST(opt.lr() == lr);
      BOOST_TEST(opt.steps() == 2);
      BOOST_CHECK(read_file(path) == bytes);  // the file is only read
    }
  };
  auto edited = [&](const std::string& name, const std::string& key, const nlohmann::json& value) {
    nlohmann::json e = h;
    e[name][key] = value;
    return with_header(good, e.dump());
  };
  // A training state saved by hand, with the good file's tensors and scalars changed.
  // `step` is written as given into the metadata, where save_training_state writes the step.
  auto state_file = [&](const std::string& name, const optim::OptimizerState& st, const std::string& step = "3") {
    const std::string path = dir.file(name + ".tmp.safetensors");
    normlab::serialize::save_training_state(path, st.tensors, st.scalars, 0);
    const std::string bytes = read_file(path);
    std::filesystem::remove(path);
    uint64_t k = 0;
    std::memcpy(&k, bytes.data(), 8);
    nlohmann::json e = nlohmann::json::parse(bytes.substr(8, k));
    e["__metadata__"]["step"] = step;
    return with_header(bytes, e.dump());
  };

  // The file itself: corrupt JSON, a bad dtype, bad data_offsets, a bad header length.
  const std::string text = h.dump();
  refused("cut_json", with_header(good, text.substr(0, text.size() / 2)), {"the header is not valid JSON"});
  refused("bad_dtype", edited("momentum_buffer.0", "dtype", "BF16"), {"dtype BF16 is not supported"});
  const uint64_t b0 = h["momentum_buffer.1"]["data_offsets"][0].get<uint64_t>();
  const uint64_t b0_end = h["momentum_buffer.1"]["data_offsets"][1].get<uint64_t>();
  refused("overlap", edited("momentum_buffer.2", "data_offsets", {b0 + 4, b0 + 4 + (b0_end - b0)}), {"overlap"});
  refused("out_of_range", edited("momentum_buffer.1", "data_offsets", {data_size, data_size + (b0_end - b0)}),
          {"reach past the end of the data area"});
  refused("long_header", with_header_length(good, good.size() - 7), {"the header length says"});
  // A file that is fine but is not this optimizer's state.
  nn::save_module(dir.file("model.safetensors"), *m);
  refused("model", read_file(dir.file("model.safetensors")), {"not a training state"});
  optim::OptimizerState st = opt_other.state();
  refused("bad_step", state_file("bad_step", st, "3.5"), {"the step must be an integer, got '3.5'"});
  optim::OptimizerState no_momentum = st;
  no_momentum.scalars.erase("momentum");
  refused("missing_scalar", state_file("missing_scalar", no_momentum),
          {"load_optimizer", "SGD.load_state: expected the scalars", "missing \"momentum\""});
  optim::OptimizerState bad_momentum = st;
  bad_momentum.scalars["momentum"] = 1.5;
  refused("bad_momentum", state_file("bad_momentum", bad_momentum), {"SGD.load_state", "momentum", "1.5"});
  optim::OptimizerState bad_flag = st;
  bad_flag.scalars["nesterov"] = 0.5;
  refused("bad_flag", state_file("bad_flag", bad_flag), {"scalar \"nesterov\" must be 0 or 1, got 0.5"});
  optim::OptimizerState bad_shape = st;
  bad_shape.tensors.back().second = autograd::zeros({2, 2});
  refused("bad_shape", state_file("bad_shape", bad_shape), {"must be", "like parameter", "got [2, 2] float32"});
  optim::OptimizerState extra = st;
  extra.tensors.emplace_back("momentum_buffer.99", autograd::zeros({3}));
  refused("extra_buffer", state_file("extra_buffer", extra), {"\"momentum_buffer.99\" names parameter 99"});

  // The good file still loads, and then the optimizer holds the other run's state.
  BOOST_TEST(optim::load_optimizer(dir.file("good.safetensors"), opt) == 3);
  BOOST_TEST(opt.lr() == 0.05);
  BOOST_TEST(opt.steps() == 3);
}

BOOST_AUTO_TEST_SUITE_END()
