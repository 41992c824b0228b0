// `normlab train --dataset text`: the flags of a character language model (--text, --block-size,
// --layers, --heads, --width, --position, --steps, --clip-grad-norm; --hidden for the LSTM), the
// flags that do not apply refused, and the run; their presets (AdamW with nanoGPT's settings, batch
// 16) are presets.h's text family. --arch gpt (the default) is nn::GPT; --arch lstm is nn::CharLSTM (embedding --width, default
// 64; --layers of --hidden units, default 1 of 256; no norm).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "experiments/commands/presets.h"
#include "experiments/commands/training.h"
#include "experiments/studies/lm_train.h"

namespace normlab::experiments::commands {

// The default number of training steps of --dataset text: the default GPT (4 layers, width 128,
// block 64, batch 16) on the fortunes trains them in about 80 seconds on one core (0.08 s a step),
// plus about 7 s for the final validation loss over the 4025 windows of the validation split; its
// validation loss is then 2.21 nats (3.19 bits) per character (seed 0).
inline constexpr int64_t kDefaultTextSteps = 1000;

struct TextFlags {
  std::string text;  // --text FILE ("": the fortunes)
  int64_t block_size = 64, layers = 4, heads = 4, width = 128;
  std::string position = "pre";
  int64_t steps = kDefaultTextSteps;
  double clip_grad_norm = kTextClip;
};

class TextTraining : public TextFlow {
 public:
  // What train's flow reads of its own flags: --norm and --seed (unset inside a study, which
  // passes its own norm and trains its own seeds).
  struct Bound {
    const std::string* norm = nullptr;
    const uint64_t* seed = nullptr;
  };
  TextTraining() = default;
  explicit TextTraining(Bound bound) : bound_(bound) {}

  // Adds the flags above to train's.
  // clip_flag false: the command has its own --clip-grad-norm (compare, sweep), whose value the
  // caller passes on.
  void add_flags(CLI::App& a, bool clip_flag = true);
  // After the text family's presets (presets.h: preset_text): --arch gpt or lstm (others refused),
  // and the flags that do not apply refused (--resume too unless `resumable`: compare and sweep
  // continue their runs).
  void refuse(const TrainingOptions& o, const Given& given, bool resumable) const;
  // train's: preset_text, then refuse.
  void presets(TrainingOptions& o, const Given& given) override;
  // After the optimizer's values: the text family's (preset_text_optimizer), and the flags that do
  // not apply to the model refused.
  void check(TrainingOptions& o, const std::string& norm, const Given& given);
  // train's: its --seed trains the run, its --norm is the GPT's.
  void check(TrainingOptions& o, const Given& given) override;
  // Reads the corpus and checks the run against it (normlab::Error names the flags).
  void plan(const TrainingOptions& o) override;
  // Writes the run into --out as one set (Ctrl-C: what was done); returns the exit status.
  // --text FILE, or the fortunes.
  std::vector<DataSource> data_sources() const override { return {text_source("--text", f_.text)}; }
  int run(const TrainingOptions& o, const nlohmann::json& settings, const Invocation& inv) override;
  // The flags as parsed, and (after check) the model they describe (vocab_size not yet set).
  const TextFlags& flags() const { return f_; }
  const CharModelSpec& model() const { return model_; }

 private:
  void check_gpt(const TrainingOptions& o, const std::string& norm, const Given& given);
  void check_lstm(const TrainingOptions& o, const std::string& norm, const Given& given);

  Bound bound_;
  TextFlags f_;
  CharModelSpec model_;
  std::optional<studies::LmPlan> plan_;
};

}  // namespace normlab::experiments::commands
