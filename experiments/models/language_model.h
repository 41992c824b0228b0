// Character language models (char_model.h: a GPT or a CharLSTM over a data::TextCorpus's ids): the
// norms a GPT takes, the loss over non-overlapping windows, the checkpoint's self-describing
// metadata, and sampling text (`normlab train --dataset text`, `normlab generate`, `normlab eval`).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/text.h"
#include "experiments/models/char_model.h"
#include "experiments/models/sampling.h"
#include "nn/gpt.h"

namespace normlab::experiments {

// The norms a GPT takes: layer, rms, batch (over the tokens) and none. Any other registered
// norm is an error naming it and these four ("--norm group: a GPT takes ...").
nn::BlockNorm gpt_norm(const std::string& norm);

// Mean cross-entropy in nats per predicted character of m (switched to eval mode, then back) over
// the non-overlapping windows of block_size + 1 ids of `ids` (data::sequential_batch, batches of up
// to `batch` windows): the first max_windows windows (0: every one). Runs without grad.
//   loss = -(1 / (W T)) sum_{windows, t} log softmax(logits_t)[y_t]
// train_mode: the same in training mode (BatchNorm with each batch's own statistics), with the
// module's parameters and buffers (running statistics) put back exactly afterwards.
double window_loss(CharModel& m, const std::vector<int64_t>& ids, int64_t block_size, int64_t batch,
                   int64_t max_windows = 0, bool train_mode = false);

// Nats to bits: x / ln 2.
double bits(double nats);

// What a language model's checkpoint records to rebuild itself and its data (all strings): the
// model's (char_model_metadata: "arch" gpt or lstm, "task": "language-model", the sizes, norm and
// position), "vocabulary" (data::Vocabulary::to_string), "corpus": "fortunes" or the text file's
// path as given, "val_fraction": the validation fraction of its split.
std::map<std::string, std::string> lm_metadata(const CharModelSpec& s, const data::Vocabulary& v,
                                               const std::string& corpus, double validation_fraction);

// A language model read back from its checkpoint.
struct LanguageModel {
  data::Vocabulary vocabulary;
  std::map<std::string, std::string> metadata;  // every entry of the file
  std::shared_ptr<CharModel> model;             // in eval mode
};

// True when the file's metadata says task=language-model (or arch=gpt) (the file is read; errors name it).
bool is_language_model(const std::string& path);
// Reads a checkpoint written by `normlab train --dataset text`. Errors name the file:
// one that is no language model says what it is ("a mlp classifier trained on moons"), a missing
// or malformed entry names the key, weights that do not fit the metadata's model name the tensor.
LanguageModel load_language_model(const std::string& path);

// The validation ids of `text` for a model of vocabulary v: the last round(f N) characters (the
// split data::make_text_corpus makes), characters outside v left out (UnknownCharacters::Skip);
// *skipped counts them. Throws (naming `name` and --val-fraction) when fewer than block_size + 1
// remain.
std::vector<int64_t> validation_ids(const std::u32string& text, const std::string& name, const data::Vocabulary& v,
                                    double validation_fraction, int64_t block_size, int64_t* skipped);

// A language model's validation loss over a text (`normlab eval --checkpoint FILE [--text FILE]`).
struct LmEvaluation {
  std::string source;       // the text: a file path, or "fortunes"
  double loss = 0;          // nats per predicted character (window_loss over every window)
  int64_t windows = 0;      // non-overlapping windows of block_size + 1 characters
  int64_t characters = 0;   // validation characters in the vocabulary
  int64_t skipped = 0;      // validation characters outside the vocabulary, left out
};
// The validation split (validation_ids, the checkpoint's "val_fraction") of text_file, or with ""
// of the text the model trained on (its "corpus": the fortunes, or that file, which must still be
// there), in batches of `batch` windows (0: the checkpoint's "eval_batch", the batch its training
// run evaluated with, so that the loss is the recorded "val_loss" to the last bit).
LmEvaluation evaluate_language_model(const LanguageModel& lm, const std::string& path, const std::string& text_file,
                                     int64_t batch);

// The most characters one generation samples (`normlab generate --tokens`): about a day at the
// default GPT's speed on one core. The output streams, so memory does not grow with it.
inline constexpr int64_t kMaxGenerateTokens = 100'000'000;

// `tokens` characters (1 to kMaxGenerateTokens) sampled after the prompt (UTF-8; its characters
// must be in the vocabulary, else an error naming the first missing one, e.g. U+00E9 'é'), by
// CharDecoder and sample_token with Generator(seed): the same seed gives the same text. Each
// character is passed to emit (as UTF-8) the moment it is sampled.
void stream_text(CharModel& m, const data::Vocabulary& v, const std::string& prompt, int64_t tokens,
                 const SamplingOptions& o, uint64_t seed, const std::function<void(const std::string&)>& emit);
// Throws normlab::Error naming --tokens unless 1 <= tokens <= kMaxGenerateTokens.
void check_generate_tokens(int64_t tokens);
// The same, the sampled characters returned (UTF-8; the prompt not included).
std::string generate_text(CharModel& m, const data::Vocabulary& v, const std::string& prompt, int64_t tokens,
                          const SamplingOptions& o, uint64_t seed);

}  // namespace normlab::experiments
