// `normlab generate`: text sampled from a character language model's checkpoint (train --dataset
// text, --arch gpt or lstm): the prompt, then --tokens characters drawn one at a time with temperature and
// top-k from a seeded generator (the same seed, the same text).
#include <cstdio>
#include <limits>
#include <optional>

#include "autograd/parallel.h"
#include "experiments/commands/cli.h"
#include "experiments/commands/command.h"
#include "experiments/commands/flags.h"
#include "experiments/models/language_model.h"

namespace normlab::experiments::commands {

namespace {

class GenerateCommand : public Command {
 public:
  void add_flags(CLI::App& a) override {
    a.add_option("--checkpoint", checkpoint_, "model.safetensors written by normlab train --dataset text (--arch gpt or lstm)")
        ->required()
        ->check(non_empty());
    a.add_option("--prompt", prompt_, "the text to continue (UTF-8; every character in the model's vocabulary)")
        ->required();
    a.add_option("--tokens", tokens_, "characters to sample after the prompt (at most 100000000; printed as they are sampled)")
        ->check(whole(1, kMaxGenerateTokens))
        ->capture_default_str();
    a.add_option("--temperature", sampling_.temperature,
                 "logits divided by it before sampling; 0 picks the most likely character")
        ->capture_default_str();
    a.add_option("--top-k", sampling_.top_k, "sample among the k most likely characters only (0: all)")
        ->check(whole(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()))  // no silent overflow
        ->capture_default_str();
    a.add_option("--seed", seed_, "seed of the draws: the same seed gives the same text")->check(seed_value());
    a.add_option("--threads", threads_, "threads for the model's forward passes")->check(whole(1, 4096));
  }

  // The flags that need no checkpoint.
  void check(const Given&) override {
    check_generate_tokens(tokens_);
    if (prompt_.empty())
      throw Error("--prompt is empty: give at least one character for the model to continue (e.g. --prompt \"\\n\")");
    check_sampling(sampling_, std::numeric_limits<int64_t>::max());  // --top-k against the vocabulary once it is known
  }

  // The checkpoint, --top-k against its vocabulary, and the prompt's characters, before any output.
  void plan(const Invocation&) override {
    autograd::set_num_threads(threads_);
    try {
      lm_ = load_language_model(checkpoint_);
      check_sampling(sampling_, lm_->vocabulary.size());
      lm_->vocabulary.encode_utf8(prompt_, "the prompt");
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }

  // The prompt, then each character the moment it is sampled (Ctrl-C keeps what was printed).
  int run(const Invocation&) override {
    std::fwrite(prompt_.data(), 1, prompt_.size(), stdout);
    std::fflush(stdout);
    stream_text(*lm_->model, lm_->vocabulary, prompt_, tokens_, sampling_, seed_, [](const std::string& c) {
      std::fwrite(c.data(), 1, c.size(), stdout);
      std::fflush(stdout);
    });
    std::fputc('\n', stdout);
    std::fflush(stdout);
    return kExitOk;
  }

 private:
  std::string checkpoint_, prompt_;
  int64_t tokens_ = 200;
  SamplingOptions sampling_;
  uint64_t seed_ = 0;
  int threads_ = 1;
  std::optional<LanguageModel> lm_;
};

}  // namespace

std::unique_ptr<Command> make_generate_command() { return std::make_unique<GenerateCommand>(); }

}  // namespace normlab::experiments::commands
