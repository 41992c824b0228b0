// Checkpoints: module round trips with PyTorch's names, all-or-nothing loading that leaves the model
// unchanged on any error, training states with exact scalars, and bitwise-identical resumed training.
#include "nn/checkpoint.h"
#include "serialize/training_state.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>

#include "autograd/autograd.h"
#include "tests/support/files.h"
#include "tests/support/fixtures.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using namespace normlab::serialize;
using normlab::Error;
using normlab::test::read_file;
using normlab::test::TempDir;
using normlab::test::with_header;
using normlab::test::with_header_length;
using normlab::test::write_file;

namespace {

// A child module: one parameter.
class Head : public Module {
 public:
  explicit Head(Generator& g) { weight = register_parameter("weight", randn({1, 2}, g)); }
  Tensor forward(const Tensor& x) override { return linear(x, weight); }  // x: (N, 2) -> (N, 1)
  std::string repr() const override { return "Head()"; }
  Tensor weight;
};

// A small module with parameters, buffers and a child: its state_dict is weight, bias,
// running_mean, num_batches_tracked, head.weight (PyTorch's order and names).
class TinyNet : public Module {
 public:
  explicit TinyNet(uint64_t seed, DType dt = DType::Float32) {
    Generator g(seed);
    weight = register_parameter("weight", randn({2, 3}, g, 0, 1, dt));
    bias = register_parameter("bias", randn({2}, g, 0, 1, dt));
    running_mean = register_buffer("running_mean", randn({2}, g, 0, 1, dt));
    num_batches_tracked = register_buffer("num_batches_tracked", scalar(static_cast<double>(seed % 5), dt));
    head = register_module("head", std::make_shared<Head>(g));
  }
  // x: (N, 3) -> (N, 1)
  Tensor forward(const Tensor& x) override { return (*head)(tanh(linear(x, weight, bias) - running_mean)); }
  std::string repr() const override { return "TinyNet()"; }
  Tensor weight, bias, running_mean, num_batches_tracked;
  std::shared_ptr<Head> head;
};

// Every tensor of the module's state, as raw bytes, by name.
std::map<std::string, std::string> snapshot(const Module& m) {
  std::map<std::string, std::string> s;
  for (auto& [n, t] : m.state_dict())
    s[n] = std::string(static_cast<const char*>(t.raw_data()), t.numel() * dtype_size(t.dtype()));
  return s;
}

nlohmann::json header_of(const std::string& path) {
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  return nlohmann::json::parse(bytes.substr(8, n));
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// load_module(path, m) throws an Error naming the file and containing every part, and leaves m
// exactly as it was, bit for bit, and the file (and its folder) as they were, byte for byte.
void expect_load_refused(const std::string& path, Module& m, const std::vector<std::string>& parts) {
  const auto before = snapshot(m);
  const bool existed = std::filesystem::exists(path);
  const std::string bytes = read_file(path);
  const auto dir = std::filesystem::path(path).parent_path();
  std::vector<std::string> listing;
  for (auto& e : std::filesystem::directory_iterator(dir)) listing.push_back(e.path().filename());
  std::sort(listing.begin(), listing.end());
  try {
    load_module(path, m);
    BOOST_ERROR("load_module accepted " << path);
  } catch (const Error& e) {
    BOOST_TEST_INFO("message: " << e.what());
    BOOST_CHECK(contains(e.what(), path));
    for (auto& p : parts) BOOST_CHECK_MESSAGE(contains(e.what(), p), "expected '" << p << "' in: " << e.what());
  }
  BOOST_CHECK(snapshot(m) == before);
  BOOST_CHECK(std::filesystem::exists(path) == existed);
  BOOST_CHECK(read_file(path) == bytes);
  std::vector<std::string> after;
  for (auto& e : std::filesystem::directory_iterator(dir)) after.push_back(e.path().filename());
  std::sort(after.begin(), after.end());
  BOOST_CHECK(after == listing);
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

BOOST_AUTO_TEST_SUITE(checkpoint)

BOOST_AUTO_TEST_CASE(save_then_load_restores_every_tensor_bit_for_bit) {
  TempDir dir;
  TinyNet a(1), b(2);
  fill_(a.num_batches_tracked, 42);
  BOOST_REQUIRE(snapshot(a) != snapshot(b));
  const std::string path = dir.file("model.safetensors");
  save_module(path, a, {{"epoch", "3"}});

  const auto h = header_of(path);
  std::vector<std::string> names;
  for (auto& [k, v] : h.items()) names.push_back(k);
  BOOST_TEST(names == (std::vector<std::string>{"__metadata__", "bias", "head.weight", "num_batches_tracked",
                                                "running_mean", "weight"}));
  BOOST_TEST(h["num_batches_tracked"]["dtype"] == "I64");  // as PyTorch stores it
  BOOST_TEST(h["weight"]["dtype"] == "F32");
  BOOST_TEST(h["__metadata__"]["format"] == "pt");
  BOOST_TEST(h["__metadata__"]["epoch"] == "3");

  load_module(path, b);
  BOOST_TEST(snapshot(b) == snapshot(a));
  BOOST_TEST(b.num_batches_tracked.item() == 42.0);
  BOOST_TEST(b.weight.requires_grad());  // still a parameter
  BOOST_TEST(!b.weight.is_same(a.weight));
}

BOOST_AUTO_TEST_CASE(a_caller_format_is_kept) {
  TempDir dir;
  TinyNet a(1);
  save_module(dir.file("m.safetensors"), a, {{"format", "normlab"}});
  BOOST_TEST(header_of(dir.file("m.safetensors"))["__metadata__"]["format"] == "normlab");
}

BOOST_AUTO_TEST_CASE(missing_and_unexpected_names_are_refused_with_the_model_unchanged) {
  TempDir dir;
  TinyNet m(3);
  NamedTensors state = m.state_dict();
  NamedTensors other;
  for (auto& [n, t] : state)
    if (n != "head.weight") other.emplace_back(n, t.detach().clone());
  other.emplace_back("head.bias", zeros({1}));
  // Change every value, so a partial copy would show.
  for (auto& [n, t] : other) fill_(t, 7);
  save_safetensors(dir.file("other.safetensors"), other);
  expect_load_refused(dir.file("other.safetensors"), m, {"missing: head.weight", "unexpected: head.bias"});
}

BOOST_AUTO_TEST_CASE(a_wrong_shape_is_refused_with_the_model_unchanged) {
  TempDir dir;
  TinyNet m(3);
  NamedTensors state;
  for (auto& [n, t] : m.state_dict()) state.emplace_back(n, n == "weight" ? zeros({3, 2}) : full(t.shape(), 7));
  save_safetensors(dir.file("shape.safetensors"), state);
  expect_load_refused(dir.file("shape.safetensors"), m, {"weight (expected shape [2, 3], got [3, 2])"});
}

BOOST_AUTO_TEST_CASE(a_corrupt_or_missing_file_is_refused_with_the_model_unchanged) {
  TempDir dir;
  TinyNet m(3), other(4);
  const std::string path = dir.file("m.safetensors");
  save_module(path, other);
  const std::string bytes = read_file(path);
  write_file(dir.file("cut.safetensors"), bytes.substr(0, bytes.size() - 3));  // cut in the last tensor
  expect_load_refused(dir.file("cut.safetensors"), m, {"reach past the end of the data area"});
  expect_load_refused(dir.file("absent.safetensors"), m, {"cannot open"});
}

BOOST_AUTO_TEST_CASE(a_bad_header_dtype_offsets_or_header_length_is_refused_with_model_and_file_unchanged) {
  TempDir dir;
  TinyNet m(3), other(4);
  BOOST_REQUIRE(snapshot(m) != snapshot(other));
  save_module(dir.file("good.safetensors"), other);
  const std::string good = read_file(dir.file("good.safetensors"));
  const nlohmann::json h = header_of(dir.file("good.safetensors"));
  uint64_t header_size = 0;
  std::memcpy(&header_size, good.data(), 8);
  const uint64_t data_size = good.size() - 8 - header_size;
  BOOST_REQUIRE_EQUAL(data_size, 56u);  // num_batches_tracked as I64, then 4 * (6 + 2 + 2 + 2) bytes of F32
  // Writes `bytes` as <name>.safetensors and expects load_module to refuse it with `parts`.
  auto refused = [&](const std::string& name, const std::string& bytes, const std::vector<std::string>& parts) {
    BOOST_TEST_CONTEXT("file " << name) {
      const std::string path = dir.file(name + ".safetensors");
      write_file(path, bytes);
      expect_load_refused(path, m, parts);
    }
  };
  // The header edited: entry `name`'s `key` set to `value`.
  auto edited = [&](const std::string& name, const std::string& key, const nlohmann::json& value) {
    nlohmann::json e = h;
    e[name][key] = value;
    return with_header(good, e.dump());
  };

  // Corrupt JSON: cut in the middle, a stray byte, not an object.
  const std::string text = h.dump();
  refused("cut_json", with_header(good, text.substr(0, text.size() / 2)), {"the header is not valid JSON"});
  refused("stray_byte", with_header(good, "x" + text), {"the header is not valid JSON"});
  refused("array_header", with_header(good, "[1, 2, 3]"), {"the header must be a JSON object, got a JSON array"});
  // A dtype normlab does not read, one that does not exist, one that is not a string.
  refused("f16", edited("weight", "dtype", "F16"),
          {"tensor 'weight': dtype F16 is not supported (normlab reads F32, F64, I64 and I32)"});
  refused("bad_dtype", edited("weight", "dtype", "float32"), {"tensor 'weight': unknown dtype 'float32'"});
  refused("dtype_number", edited("weight", "dtype", 32), {"tensor 'weight': dtype must be a string, got 32"});
  // data_offsets: overlapping (running_mean moved 4 bytes into bias), out of range, reversed,
  // negative, of the wrong length for the shape.
  const uint64_t bias_begin = h["bias"]["data_offsets"][0].get<uint64_t>();
  refused("overlap", edited("running_mean", "data_offsets", {bias_begin + 4, bias_begin + 12}),
          {"the data of tensors 'bias' and 'running_mean' overlap"});
  refused("same_offsets", edited("running_mean", "data_offsets", h["bias"]["data_offsets"]), {"overlap"});
  refused("out_of_range", edited("running_mean", "data_offsets", {data_size, data_size + 8}),
          {"tensor 'running_mean': data_offsets [" + std::to_string(data_size) + "," + std::to_string(data_size + 8) +
               "] reach past the end of the data area (" + std::to_string(data_size) + " bytes)"});
  refused("far_out_of_range", edited("weight", "data_offsets", {uint64_t{1} << 40, (uint64_t{1} << 40) + 24}),
          {"tensor 'weight'", "reach past the end of the data area"});
  refused("reversed", edited("bias", "data_offsets", {bias_begin + 8, bias_begin}),
          {"tensor 'bias': data_offsets must be [begin, end] with 0 <= begin <= end"});
  refused("negative", edited("bias", "data_offsets", {-8, 0}),
          {"tensor 'bias': data_offsets must be [begin, end] with 0 <= begin <= end, got [-8,0]"});
  refused("wrong_span", edited("weight", "data_offsets", {8, 28}),
          {"tensor 'weight': data_offsets [8,28] span 20 bytes, but dtype F32 and shape [2,3] need 24"});
  // The 8-byte header length: one more than the bytes after it, the largest u64; a file too short
  // to hold it.
  const uint64_t rest = good.size() - 8;
  refused("long_header", with_header_length(good, rest + 1),
          {"the header length says " + std::to_string(rest + 1) + " bytes but only " + std::to_string(rest) +
           " bytes follow it"});
  refused("huge_header", with_header_length(good, ~uint64_t{0}), {"the header length says 18446744073709551615 bytes"});
  refused("seven_bytes", good.substr(0, 7), {"the file is 7 bytes long, shorter than the 8-byte header length"});
  refused("empty", "", {"the file is 0 bytes long"});
  // And the untouched file still loads, into the model every refusal left alone.
  load_module(dir.file("good.safetensors"), m);
  BOOST_TEST(snapshot(m) == snapshot(other));
}

BOOST_AUTO_TEST_CASE(float64_values_load_into_a_float32_model) {
  TempDir dir;
  TinyNet m64(5, DType::Float64), m32(6);
  save_module(dir.file("m.safetensors"), m64);
  load_module(dir.file("m.safetensors"), m32);
  BOOST_TEST(dtype_name(m32.weight.dtype()) == "float32");
  for (int64_t i = 0; i < 6; ++i)
    BOOST_TEST(m32.weight.flat(i) == static_cast<double>(static_cast<float>(m64.weight.flat(i))));
}

BOOST_AUTO_TEST_CASE(training_state_round_trips_tensors_scalars_and_step_exactly) {
  TempDir dir;
  Generator g(9);
  const NamedTensors tensors = {{"state.0.momentum_buffer", randn({2, 3}, g)},
                                {"state.1.momentum_buffer", randn({2}, g, 0, 1, DType::Float64)}};
  const std::map<std::string, double> scalars = {
      {"lr", 0.1},
      {"third", 1.0 / 3},
      {"tiny", std::numeric_limits<double>::denorm_min()},
      {"neg_zero", -0.0},
      {"inf", std::numeric_limits<double>::infinity()},
      {"max", std::numeric_limits<double>::max()}};
  const int64_t step = 123456789012345;
  const std::string path = dir.file("train.safetensors");
  save_training_state(path, tensors, scalars, step, {{"run", "bn_b4"}});

  TrainingState s = load_training_state(path);
  BOOST_TEST(s.step == step);
  BOOST_TEST(s.metadata == (std::map<std::string, std::string>{{"run", "bn_b4"}}));
  BOOST_REQUIRE_EQUAL(s.scalars.size(), scalars.size());
  for (auto& [k, v] : scalars) BOOST_TEST(same_bits(s.scalars.at(k), v), k << ": " << s.scalars.at(k) << " vs " << v);
  BOOST_REQUIRE_EQUAL(s.optimizer_tensors.size(), 2u);
  for (auto& [n, t] : tensors) {
    const Tensor* got = nullptr;
    for (auto& [m, u] : s.optimizer_tensors)
      if (m == n) got = &u;
    BOOST_REQUIRE(got);
    BOOST_TEST(dtype_name(got->dtype()) == dtype_name(t.dtype()));
    BOOST_TEST(std::memcmp(got->raw_data(), t.raw_data(), t.numel() * dtype_size(t.dtype())) == 0);
  }
  // A NaN scalar survives too.
  save_training_state(path, {}, {{"nan", std::nan("")}}, 0);
  BOOST_TEST(std::isnan(load_training_state(path).scalars.at("nan")));
}

BOOST_AUTO_TEST_CASE(model_and_training_files_are_not_confused) {
  TempDir dir;
  TinyNet m(1);
  save_module(dir.file("model.safetensors"), m);
  BOOST_CHECK_EXCEPTION(load_training_state(dir.file("model.safetensors")), Error,
                        [](const Error& e) { return contains(e.what(), "not a training state"); });
  save_training_state(dir.file("train.safetensors"), {{"state.0.momentum_buffer", zeros({2, 3})}}, {}, 5);
  expect_load_refused(dir.file("train.safetensors"), m, {"missing: weight", "unexpected: state.0.momentum_buffer"});
}

BOOST_AUTO_TEST_CASE(training_state_errors_name_the_problem) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  BOOST_CHECK_EXCEPTION(save_training_state(path, {}, {}, 1, {{"step", "2"}}), Error,
                        [](const Error& e) { return contains(e.what(), "'step' is reserved"); });
  BOOST_CHECK_EXCEPTION(save_training_state(path, {}, {}, 1, {{"scalar.lr", "2"}}), Error,
                        [](const Error& e) { return contains(e.what(), "'scalar.lr' is reserved"); });
  BOOST_TEST(!std::filesystem::exists(path));
  auto refused = [&](const std::map<std::string, std::string>& meta, const std::string& what) {
    save_safetensors(path, {}, meta);
    BOOST_CHECK_EXCEPTION(load_training_state(path), Error, [&](const Error& e) {
      BOOST_TEST_INFO("message: " << e.what());
      return contains(e.what(), what) && contains(e.what(), path);
    });
  };
  refused({{"normlab.kind", "training_state"}}, "no \"step\"");
  refused({{"normlab.kind", "training_state"}, {"step", "12x"}}, "the step must be an integer, got '12x'");
  refused({{"normlab.kind", "training_state"}, {"step", "99999999999999999999"}}, "the step must be an integer");
  refused({{"normlab.kind", "training_state"}, {"step", "1"}, {"scalar.lr", "0.1.2"}},
          "scalar 'lr' must be a number, got '0.1.2'");
  refused({{"normlab.kind", "training_state"}, {"step", "1"}, {"scalar.lr", ""}}, "scalar 'lr' must be a number");
}

BOOST_AUTO_TEST_CASE(training_resumed_from_a_checkpoint_matches_training_straight_through_bitwise) {
  // SGD with momentum (buf = g on the first step, then 0.9 buf + g; p -= 0.05 buf), written out
  // here so this test needs only the checkpoint code; num_batches_tracked counts the steps.
  Generator g(11);
  const Tensor x = randn({4, 3}, g), y = randn({4, 1}, g);
  const double lr = 0.05, momentum = 0.9;
  auto train = [&](TinyNet& m, NamedTensors& bufs, int64_t& step, int steps) {
    for (int s = 0; s < steps; ++s) {
      m.zero_grad();
      mse_loss(m(x), y).backward();
      NoGradGuard no_grad;
      const NamedTensors params = m.named_parameters();
      if (bufs.empty())
        for (auto& [n, p] : params) bufs.emplace_back("state." + n + ".momentum_buffer", p.grad().clone());
      else
        for (size_t i = 0; i < params.size(); ++i) {
          mul_(bufs[i].second, momentum);
          add_(bufs[i].second, params[i].second.grad());
        }
      for (size_t i = 0; i < params.size(); ++i) add_(params[i].second, bufs[i].second, -lr);
      fill_(m.num_batches_tracked, m.num_batches_tracked.item() + 1);
      ++step;
    }
  };
  TinyNet straight(21);
  NamedTensors straight_bufs;
  int64_t straight_step = 0;
  train(straight, straight_bufs, straight_step, 6);

  TempDir dir;
  TinyNet first(21);
  NamedTensors bufs;
  int64_t step = 0;
  train(first, bufs, step, 3);
  save_module(dir.file("model.safetensors"), first);
  save_training_state(dir.file("train.safetensors"), bufs, {{"lr", lr}, {"momentum", momentum}}, step);

  TinyNet resumed(99);  // different initial values, all overwritten by the checkpoint
  load_module(dir.file("model.safetensors"), resumed);
  TrainingState st = load_training_state(dir.file("train.safetensors"));
  BOOST_TEST(st.step == 3);
  BOOST_TEST(st.scalars.at("lr") == lr);
  // Buffers in the parameters' order (they are all float32, so the file keeps the given order).
  NamedTensors resumed_bufs = st.optimizer_tensors;
  BOOST_REQUIRE_EQUAL(resumed_bufs.size(), bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) BOOST_TEST(resumed_bufs[i].first == bufs[i].first);
  int64_t resumed_step = st.step;
  train(resumed, resumed_bufs, resumed_step, 3);

  BOOST_TEST(resumed_step == straight_step);
  BOOST_TEST(snapshot(resumed) == snapshot(straight));
  BOOST_TEST(resumed.num_batches_tracked.item() == straight.num_batches_tracked.item());
}

BOOST_AUTO_TEST_SUITE_END()
