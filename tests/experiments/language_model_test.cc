// Character language models from the command line (experiments/models/language_model.h, train --arch gpt
// --dataset text, generate, eval): a tiny GPT trained a few steps on the sample text, its
// checkpoint's metadata, seeded generation, eval's loss against the recorded one, and the errors of
// flags and inputs that do not fit.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/autograd.h"
#include "base/error.h"
#include "data/text.h"
#include "experiments/models/language_model.h"
#include "experiments/models/size_limits.h"
#include "experiments/support/interrupt.h"
#include "experiments/support/output.h"
#include "serialize/safetensors.h"
#include "tests/support/files.h"
#include "tests/support/process.h"

using namespace normlab;
using normlab::test::capture_output;
using normlab::test::run_normlab;
using normlab::test::run_normlab_quiet;

namespace {

const std::string kSample = std::string(NORMLAB_SOURCE_DIR) + "/tests/data/fixtures/text_sample.txt";

// One tiny GPT trained once for every case: 8 steps, width 16, 1 layer, 2 heads, block 16.
struct Trained {
  test::TempDir dir;
  std::filesystem::path out = dir.path() / "lm";
  std::string checkpoint = (out / "model.safetensors").string();
  Trained() {
    const int rc = run_normlab_quiet({"train", "--dataset", "text", "--text", kSample, "--width", "16", "--layers", "1",
                                      "--heads", "2", "--block-size", "16", "--steps", "8", "--eval-every", "4",
                                      "--out", out.string()});
    if (rc != 0) throw Error("training the test's GPT failed");
  }
};
const Trained& trained() {
  static const Trained t;
  return t;
}

// Runs normlab and expects a normlab::Error whose message holds each needle, with nothing on stdout.
void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& needles) {
  std::string message = "no error was raised";
  const std::string printed = capture_output(1, [&] {
    try {
      run_normlab(args);
    } catch (const Error& e) {
      message = e.what();
    }
  });
  BOOST_TEST(printed.empty(), "printed: " << printed);
  for (const auto& needle : needles)
    BOOST_TEST(message.find(needle) != std::string::npos, "lacks \"" << needle << "\": " << message);
}

std::string generate(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"generate", "--checkpoint", trained().checkpoint};
  args.insert(args.end(), extra.begin(), extra.end());
  int rc = -1;
  const std::string out = capture_output(1, [&] { rc = run_normlab(args); });
  BOOST_TEST(rc == 0);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(language_model)

BOOST_AUTO_TEST_CASE(the_checkpoint_describes_the_model_and_its_vocabulary) {
  const auto file = serialize::load_safetensors(trained().checkpoint);
  const auto& md = file.metadata;
  const data::TextCorpus corpus = data::load_text_corpus(kSample, 16, 0.1);  // the split train made
  BOOST_TEST(md.at("arch") == "gpt");
  BOOST_TEST(md.at("vocabulary") == corpus.vocabulary.to_string());
  BOOST_TEST(md.at("vocab_size") == std::to_string(corpus.vocabulary.size()));
  BOOST_TEST(md.at("vocab_size") == "76");  // the sample's training split (tests/data/text_test.cc)
  BOOST_TEST(md.at("block_size") == "16");
  BOOST_TEST(md.at("n_layer") == "1");
  BOOST_TEST(md.at("n_head") == "2");
  BOOST_TEST(md.at("width") == "16");
  BOOST_TEST(md.at("norm") == "layer");
  BOOST_TEST(md.at("position") == "pre");
  BOOST_TEST(md.at("corpus") == kSample);
  BOOST_TEST(md.at("steps") == "8");
  const experiments::LanguageModel lm = experiments::load_language_model(trained().checkpoint);
  BOOST_TEST(lm.model->module().state_dict().size() == file.tensors.size());
  const std::string evals = test::read_file(trained().out / "evals.csv");
  BOOST_TEST(evals.find("step,val_loss,val_bits_per_char,windows\n4,") == 0, evals);
  BOOST_TEST(evals.find("\n8,") != std::string::npos, evals);
  BOOST_TEST(evals.find(",all\n") != std::string::npos, evals);
  const std::string report = test::read_file(trained().out / "report.md");
  BOOST_TEST(report.find("2953 characters, vocabulary of 76") != std::string::npos, report);
  BOOST_TEST(report.find("bits per character") != std::string::npos, report);
  BOOST_TEST(std::filesystem::exists(trained().out / "steps.csv"));
  BOOST_TEST(std::filesystem::exists(trained().out / "manifest.json"));
}

// The recorded validation loss is the mean cross-entropy over every window of the validation split,
// recomputed here from the model and the split; eval prints the same number.
BOOST_AUTO_TEST_CASE(eval_gives_the_recorded_validation_loss) {
  const auto md = serialize::load_safetensors(trained().checkpoint).metadata;
  const experiments::LanguageModel lm = experiments::load_language_model(trained().checkpoint);
  const data::TextCorpus corpus = data::load_text_corpus(kSample, 16, 0.1);
  const double loss = experiments::window_loss(*lm.model, corpus.validation, 16, 16);
  BOOST_TEST(std::abs(loss - std::stod(md.at("val_loss"))) <= 1e-8 * loss);
  std::string printed;
  int rc = -1;
  test::TempDir t;
  const std::string out = (t.path() / "eval").string();
  printed = capture_output(1, [&] {
    rc = run_normlab({"eval", "--checkpoint", trained().checkpoint, "--quiet", "--out", out});
  });
  BOOST_TEST(rc == 0);
  const std::string bpc = experiments::fmt(loss / std::log(2.0));
  BOOST_TEST(printed == "validation loss " + md.at("val_loss") + " nats per character = " + bpc +
                            " bits per character\nnormlab: results in " + out + " (report.md)\n");
  // --out holds what a classifier's eval writes: metrics.csv, report.md, manifest.json.
  BOOST_TEST(test::read_file(t.path() / "eval" / "metrics.csv") ==
             "text,windows,characters,skipped,loss,bits_per_char\n" + kSample + ",17,282,13," + md.at("val_loss") + "," +
                 bpc + "\n");
  const std::string report = test::read_file(t.path() / "eval" / "report.md");
  BOOST_TEST(report.find("bits per character") != std::string::npos, report);
  BOOST_TEST(std::filesystem::exists(t.path() / "eval" / "manifest.json"));
  // In bits: nats / ln 2, the report's second number.
  const std::string evals = test::read_file(trained().out / "evals.csv");
  BOOST_TEST(evals.find("8," + md.at("val_loss") + "," + experiments::fmt(loss / std::log(2.0)) + ",all") !=
                 std::string::npos, evals);
}

BOOST_AUTO_TEST_CASE(the_same_seed_gives_the_same_text) {
  const std::vector<std::string> flags = {"--prompt", "The ", "--tokens", "40", "--temperature", "0.8", "--top-k", "20"};
  auto with_seed = [&](const std::string& seed) {
    auto f = flags;
    f.insert(f.end(), {"--seed", seed});
    return generate(f);
  };
  const std::string a = with_seed("7"), b = with_seed("7"), c = with_seed("8");
  BOOST_TEST(a == b);
  BOOST_TEST(a != c);
  BOOST_TEST(a.rfind("The ", 0) == 0);
  BOOST_TEST(data::decode_utf8(a, "output").size() == 4 + 40 + 1);  // prompt, characters, newline
}

// Generation streams: each character goes out the moment it is sampled, and the streamed text is
// the returned one (the same draws).
BOOST_AUTO_TEST_CASE(generation_streams_each_character_as_it_is_sampled) {
  const experiments::LanguageModel lm = experiments::load_language_model(trained().checkpoint);
  std::vector<std::string> pieces;
  experiments::stream_text(*lm.model, lm.vocabulary, "The ", 25, {}, 3,
                           [&](const std::string& c) { pieces.push_back(c); });
  BOOST_TEST(pieces.size() == 25u);
  std::string joined;
  for (const std::string& p : pieces) joined += p;
  BOOST_TEST(joined == experiments::generate_text(*lm.model, lm.vocabulary, "The ", 25, {}, 3));
}

BOOST_AUTO_TEST_CASE(generate_refuses_bad_input_before_printing) {
  const std::string ck = trained().checkpoint;
  expect_error({"generate", "--checkpoint", ck, "--prompt", "a\xE2\x98\x83"}, {"the prompt", "U+2603"});
  expect_error({"generate", "--checkpoint", ck, "--prompt", ""}, {"--prompt is empty"});
  expect_error({"generate", "--checkpoint", ck, "--prompt", "a", "--tokens", "0"}, {"--tokens", "got '0'"});
  expect_error({"generate", "--checkpoint", ck, "--prompt", "a", "--tokens", "1000000000000"},
               {"--tokens: expected a whole number from 1 to 100000000, got '1000000000000'"});
  expect_error({"generate", "--checkpoint", ck, "--prompt", "a", "--top-k", "-1"},
               {"--top-k must be 0 (all characters) or a number of characters, got -1"});
  expect_error({"generate", "--checkpoint", ck, "--prompt", "a", "--temperature", "-1"}, {"--temperature"});
  expect_error({"generate", "--checkpoint", ck, "--prompt", "a", "--top-k", "77"}, {"--top-k", "77"});
  test::TempDir d;
  const std::string mlp = (d.path() / "mlp").string();
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"train", "--quick", "--samples", "200", "--epochs", "1", "--out", mlp}), 0);
  expect_error({"generate", "--checkpoint", mlp + "/model.safetensors", "--prompt", "a"},
               {"is not a language model", "a classifier (--arch mlp) trained on moons"});
  expect_error({"eval", "--checkpoint", mlp + "/model.safetensors", "--text", kSample}, {"--text goes with"});
}

// A checkpoint whose metadata was edited is refused before a model is built (an edited size would
// build a model of any size: n_layer 10^8 took minutes, block_size 10^9 asked for terabytes), and
// one whose weights are not finite is refused by eval and generate alike, naming the tensor.
BOOST_AUTO_TEST_CASE(an_edited_checkpoint_is_refused_before_a_model_is_built) {
  const auto file = serialize::load_safetensors(trained().checkpoint);
  test::TempDir d;
  int k = 0;
  const auto edited = [&](const std::string& key, const std::string& value) {
    auto md = file.metadata;
    md[key] = value;
    const std::string path = (d.path() / ("edited" + std::to_string(k++) + ".safetensors")).string();
    serialize::save_safetensors(path, file.tensors, md);
    return path;
  };
  for (const auto& [key, value, needles] : std::vector<std::tuple<std::string, std::string, std::vector<std::string>>>{
           {"n_layer", "100000000", {"metadata \"n_layer\" is 100000000 but the checkpoint holds 1 block(s)"}},
           {"width", "1048576", {"metadata \"width\" is 1048576 but the tensor transformer.wte.weight is [76, 16]"}},
           {"block_size", "1000000000", {"\"block_size\" is 1000000000", "transformer.wpe.weight is [16, 16]"}},
           {"vocab_size", "77", {"\"vocabulary\" holds 76 characters but \"vocab_size\" is 77"}},
           {"n_head", "3", {"\"n_head\" is 3, which does not divide \"width\" 16"}},
           {"val_fraction", "abc", {"\"val_fraction\" is \"abc\", expected a fraction above 0 and below 1"}},
           {"val_fraction", "nan", {"\"val_fraction\" is \"nan\""}},
           {"val_fraction", "2", {"\"val_fraction\" is \"2\""}}}) {
    BOOST_TEST_CONTEXT(key << " = " << value) {
      const std::string path = edited(key, value);
      expect_error({"eval", "--checkpoint", path}, needles);
      if (key != "val_fraction") expect_error({"generate", "--checkpoint", path, "--prompt", "a"}, needles);
    }
  }
  for (const std::string& bad : {std::string("nan"), std::string("inf")}) {
    autograd::NamedTensors tensors;
    for (const auto& [name, t] : file.tensors) tensors.emplace_back(name, t.clone());
    for (auto& [name, t] : tensors)
      if (name == "transformer.wte.weight") t.data<float>()[3] = bad == "nan" ? NAN : INFINITY;
    const std::string path = (d.path() / (bad + ".safetensors")).string();
    serialize::save_safetensors(path, tensors, file.metadata);
    const std::string what = bad == "nan" ? "holds NaN" : "holds an infinite value";
    expect_error({"eval", "--checkpoint", path}, {"the tensor transformer.wte.weight " + what, "element 3"});
    expect_error({"generate", "--checkpoint", path, "--prompt", "a"}, {"transformer.wte.weight " + what});
  }
}

// Sizes that cannot fit are refused before anything is allocated, naming the flags and what they
// would take (they ended in std::bad_alloc, or in an out-of-memory error after minutes).
BOOST_AUTO_TEST_CASE(sizes_that_cannot_fit_are_refused_before_allocating) {
  const std::vector<std::string> text = {"--dataset", "text", "--text", kSample, "--steps", "2", "--quiet"};
  const auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), text.begin(), text.end());
    return args;
  };
  expect_error(with({"train", "--batch-size", "100000000"}),
               {"--batch-size 100000000 with --block-size 64, --layers 4: one batch's activations would be",
                "GiB of float32), more than the 2.15e+09 a batch may hold here"});
  expect_error(with({"train", "--width", "1048576"}), {"--width 1048576: a block's weights would be 12 x 1048576^2"});
  experiments::CharModelSpec wide;  // a window longer than the sample text: the check itself
  wide.vocab_size = 76, wide.block_size = 65536, wide.gpt.n_layer = 1, wide.gpt.n_head = 4, wide.gpt.width = 512;
  try {
    experiments::check_char_model_size(wide, 1);
    BOOST_ERROR("a 65536-token window of width 512 was accepted");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("--block-size 65536 with --width 512 and --heads 4: one window's activations "
                                          "in a block would be 16 x 65536 x 512 + 4 x 65536^2") == 0, e.what());
  }
  expect_error(with({"train", "--arch", "lstm", "--hidden", "100000"}),
               {"--hidden 100000: an LSTM layer's weights would be 4 x 100000 x (64 + 100000)"});
  expect_error({"sweep", "--dataset", "text", "--text", kSample, "--batch-sizes", "100000000", "--norms", "layer",
                "--train-tokens", "100000000000", "--quiet"},
               {"--batch-sizes 100000000 with --block-size 64", "give a smaller --batch-sizes or --block-size"});
  expect_error({"train", "--arch", "lstm", "--hidden", "100000", "--quick", "--image-shape", "1,1,2", "--quiet"},
               {"--hidden 100000: an LSTM layer's weights would be 4 x 100000 x (2 + 100000)"});
}

BOOST_AUTO_TEST_CASE(train_refuses_what_a_language_model_cannot_take) {
  test::TempDir d;
  const std::string out = (d.path() / "x").string();
  const std::vector<std::string> base = {"train", "--dataset", "text", "--text", kSample, "--out", out};
  auto with = [&](std::vector<std::string> extra) {
    auto a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  expect_error(with({"--norm", "group"}), {"--norm group", "GroupNorm", "--arch gpt takes --norm layer, rms, batch, none or noisybatch"});
  expect_error(with({"--epochs", "2"}), {"--epochs does not apply to --dataset text", "--steps"});
  expect_error(with({"--hidden", "8"}), {"--hidden goes with --arch", "gpt"});
  expect_error(with({"--arch", "lstm", "--heads", "2"}), {"--heads goes with --arch gpt, not --arch lstm"});
  expect_error(with({"--arch", "lstm", "--norm", "layer"}), {"--norm layer", "no norm"});
  expect_error(with({"--arch", "lstm", "--hidden", "8,8"}), {"--hidden takes one width", "got 2 widths"});
  expect_error(with({"--arch", "mlp"}), {"--arch mlp does not train on --dataset text"});
  expect_error(with({"--width", "10", "--heads", "4"}), {"--heads 4 must divide --width 10"});
  expect_error(with({"--block-size", "4000"}), {"--block-size"});
  expect_error({"train", "--quick", "--block-size", "8", "--out", out}, {"--block-size goes with --dataset text"});
  expect_error({"train", "--quick", "--arch", "gpt", "--out", out}, {"--arch gpt is a character language model"});
  expect_error({"eval", "--checkpoint", trained().checkpoint, "--csv", kSample}, {"--csv", "language model"});
  BOOST_TEST(!std::filesystem::exists(out));
}

// Ctrl-C after 3 of 8 steps: the steps done, the model at that point (marked interrupted) and exit
// status 130; predict refuses a language model.
BOOST_AUTO_TEST_CASE(ctrl_c_keeps_the_steps_done) {
  test::TempDir d;
  const std::string out = (d.path() / "stopped").string();
  experiments::interrupt_after_steps(3);
  int rc = -1;
  capture_output(2, [&] {
    rc = run_normlab_quiet({"train", "--dataset", "text", "--text", kSample, "--width", "16", "--layers", "1",
                            "--heads", "2", "--block-size", "16", "--steps", "8", "--out", out});
  });
  experiments::clear_interrupt();
  BOOST_TEST(rc == 130);
  const auto md = serialize::load_safetensors(out + "/model.safetensors").metadata;
  BOOST_TEST(md.at("steps") == "3");
  BOOST_TEST(md.at("interrupted") == "true");
  BOOST_TEST(md.at("planned_steps") == "8");
  const std::string steps = test::read_file(std::filesystem::path(out) / "steps.csv");
  BOOST_TEST(std::count(steps.begin(), steps.end(), '\n') == 4, steps);  // header and 3 steps
  expect_error({"predict", "--checkpoint", out + "/model.safetensors", "--csv", kSample},
               {"is a character language model", "normlab generate"});
}

// The CharLSTM: its checkpoint, seeded generation carrying (h, c), and eval's loss.
BOOST_AUTO_TEST_CASE(a_char_lstm_trains_generates_and_evaluates) {
  test::TempDir d;
  const std::string out = (d.path() / "lstm").string(), ck = out + "/model.safetensors";
  BOOST_REQUIRE_EQUAL(run_normlab_quiet({"train", "--dataset", "text", "--text", kSample, "--arch", "lstm", "--hidden",
                                         "16", "--width", "8", "--block-size", "16", "--steps", "6", "--out", out}),
                      0);
  const auto md = serialize::load_safetensors(ck).metadata;
  BOOST_TEST(md.at("arch") == "lstm");
  BOOST_TEST(md.at("task") == "language-model");
  BOOST_TEST(md.at("hidden_size") == "16");
  BOOST_TEST(md.at("embed_dim") == "8");
  BOOST_TEST(md.at("num_layers") == "1");
  BOOST_TEST(md.at("vocabulary") == data::load_text_corpus(kSample, 16, 0.1).vocabulary.to_string());
  auto gen = [&](const std::string& seed) {
    const std::string printed = capture_output(1, [&] {
      run_normlab({"generate", "--checkpoint", ck, "--prompt", "It ", "--tokens", "30", "--seed", seed});
    });
    return printed;
  };
  const std::string a = gen("1"), b = gen("1"), c = gen("2");
  BOOST_TEST(a == b);
  BOOST_TEST(a != c);
  BOOST_TEST(data::decode_utf8(a, "output").size() == 3 + 30 + 1);
  // Feeding the prompt whole then one character at a time (the decoder) gives the logits of the
  // whole sequence at once: checked on the loaded model.
  experiments::LanguageModel lm = experiments::load_language_model(ck);
  const std::vector<int64_t> ids = {3, 7, 1, 9, 4};
  experiments::CharDecoder dec(*lm.model);
  dec.feed({3, 7, 1});
  dec.feed({9});
  const std::vector<float> last = dec.feed({4});
  const autograd::Tensor whole = lm.model->forward(ids, {1, 5});
  for (int64_t v = 0; v < lm.vocabulary.size(); ++v)
    BOOST_TEST(std::abs(last[static_cast<size_t>(v)] - whole.at({0, 4, v})) <= 1e-5, v);
  const std::string printed = capture_output(1, [&] {
    run_normlab({"eval", "--checkpoint", ck, "--quiet", "--out", (std::filesystem::path(ck).parent_path() / "eval").string()});
  });
  BOOST_TEST(printed.find("validation loss " + md.at("val_loss") + " nats") == 0, printed);
}

BOOST_AUTO_TEST_SUITE_END()
