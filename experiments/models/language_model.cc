// Character language models: norms, window loss, checkpoint metadata and generation (language_model.h).
#include "experiments/models/language_model.h"
#include "experiments/support/output.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/loss.h"
#include "autograd/shape_ops.h"
#include "base/error.h"
#include "experiments/models/archs.h"
#include "experiments/models/model.h"
#include "experiments/registry/layers.h"
#include "nn/checkpoint.h"
#include "serialize/safetensors.h"

namespace normlab::experiments {

using autograd::Tensor;

namespace {

// What a checkpoint that is no language model holds, in words: "a mlp classifier trained on moons".
std::string what_checkpoint_is(const std::map<std::string, std::string>& md) {
  const auto get = [&](const std::string& k) {
    const auto it = md.find(k);
    return it == md.end() ? std::string() : it->second;
  };
  if (get("arch").empty()) return "a file without normlab's model metadata (no \"arch\")";
  const std::string task = get("task") == "regression" ? "regression model" : "classifier";
  return "a " + task + " (--arch " + get("arch") + ")" + (get("dataset").empty() ? "" : " trained on " + get("dataset"));
}

}  // namespace

nn::BlockNorm gpt_norm(const std::string& norm) {
  const std::vector<std::string>& takes = arch("gpt").norms;  // models/archs.h
  const NormEntry& entry = experiments::norm(norm);           // throws for an unknown name
  if (std::find(takes.begin(), takes.end(), norm) != takes.end()) return *entry.block_norm;
  std::string names;
  for (size_t i = 0; i < takes.size(); ++i) names += (i == 0 ? "" : i + 1 == takes.size() ? " or " : ", ") + takes[i];
  throw Error("--norm " + norm + " (" + entry.display + ") does not fit a GPT: --arch gpt takes --norm " + names);
}

double bits(double nats) { return nats / std::log(2.0); }

double window_loss(CharModel& m, const std::vector<int64_t>& ids, int64_t block_size, int64_t batch,
                   int64_t max_windows, bool train_mode) {
  int64_t n = static_cast<int64_t>(ids.size());
  if (max_windows > 0) n = std::min<int64_t>(n, max_windows * block_size + 1);
  const std::vector<int64_t> used(ids.begin(), ids.begin() + n);
  const int64_t batches = data::sequential_batches(n, batch, block_size);
  if (batches == 0) throw Error("window_loss: " + std::to_string(n) + " ids hold no window of " +
                                std::to_string(block_size + 1));
  const bool was_training = m.module().is_training();
  autograd::NoGradGuard no_grad;
  autograd::NamedTensors saved;  // train mode updates BatchNorm's running statistics: put back after
  if (train_mode) {
    saved = m.module().state_dict();
    for (auto& entry : saved) entry.second = entry.second.clone();
  }
  m.module().train(train_mode);
  double sum = 0;  // summed over targets, in batch order
  int64_t count = 0;
  for (int64_t b = 0; b < batches; ++b) {
    const data::TextBatch tb = data::sequential_batch(used, batch, block_size, b);
    const int64_t bt = tb.batch_size * tb.block_size;
    const Tensor logits = m.forward(tb.x, {tb.batch_size, tb.block_size});
    const Tensor loss = autograd::cross_entropy(autograd::reshape(logits, {bt, logits.size(-1)}), tb.y);
    sum += loss.item() * static_cast<double>(bt);
    count += bt;
  }
  if (train_mode) m.module().load_state_dict(saved);
  m.module().train(was_training);
  return sum / static_cast<double>(count);
}

std::map<std::string, std::string> lm_metadata(const CharModelSpec& s, const data::Vocabulary& v,
                                               const std::string& corpus, double validation_fraction) {
  std::ostringstream f;
  f.precision(17);
  f << validation_fraction;
  auto md = char_model_metadata(s);
  md["vocabulary"] = v.to_string();
  md["corpus"] = corpus;
  md["val_fraction"] = f.str();
  return md;
}

namespace {

// A language model's checkpoint: task=language-model, or arch=gpt.
bool says_language_model(const std::map<std::string, std::string>& md) {
  const auto task = md.find("task"), arch = md.find("arch");
  return (task != md.end() && task->second == "language-model") || (arch != md.end() && arch->second == "gpt");
}

}  // namespace

bool is_language_model(const std::string& path) {
  const serialize::SafetensorsFile file = serialize::load_safetensors(path);
  return says_language_model(file.metadata);
}

LanguageModel load_language_model(const std::string& path) {
  const serialize::SafetensorsFile file = serialize::load_safetensors(path);
  const auto& md = file.metadata;
  if (!says_language_model(md))
    throw Error(path + " is not a language model: it is " + what_checkpoint_is(md) +
                " (generate, and eval with --text, read checkpoints of normlab train --dataset text)");
  LanguageModel lm;
  lm.metadata = md;
  CharModelSpec spec;
  try {
    lm.vocabulary = data::Vocabulary::from_string(lm_metadata_text(md, path, "vocabulary"));
    spec = read_char_model_metadata(md, path);
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(what.rfind(path, 0) == 0 ? what : path + ": " + what);
  }
  if (lm.vocabulary.size() != spec.vocab_size)
    throw Error(path + ": metadata \"vocabulary\" holds " + std::to_string(lm.vocabulary.size()) +
                " characters but \"vocab_size\" is " + std::to_string(spec.vocab_size));
  check_char_model_sizes(spec, file.tensors, path);  // before building: an edited size builds any model
  check_finite_tensors(file.tensors, path);
  autograd::Generator gen(0);
  lm.model = std::make_shared<CharModel>(spec, gen);
  nn::load_module(file, path, lm.model->module());
  lm.model->module().eval();
  return lm;
}

std::vector<int64_t> validation_ids(const std::u32string& text, const std::string& name, const data::Vocabulary& v,
                                    double validation_fraction, int64_t block_size, int64_t* skipped) {
  const int64_t n = static_cast<int64_t>(text.size());
  const int64_t n_val = std::llround(validation_fraction * static_cast<double>(n));  // as make_text_corpus
  std::vector<int64_t> ids;
  int64_t missing = 0;
  for (int64_t i = n - n_val; i < n; ++i) {
    const int64_t id = v.find(text[static_cast<size_t>(i)]);
    if (id < 0) ++missing;
    else ids.push_back(id);
  }
  if (skipped) *skipped = missing;
  if (static_cast<int64_t>(ids.size()) < block_size + 1)
    throw Error(name + ": the validation split (the last " + std::to_string(n_val) + " of " + std::to_string(n) +
                " characters, val_fraction " + fmt(validation_fraction, 4) + ", " + std::to_string(missing) +
                " outside the vocabulary left out) is shorter than one window of " + std::to_string(block_size + 1) +
                " characters");
  return ids;
}

LmEvaluation evaluate_language_model(const LanguageModel& lm, const std::string& path, const std::string& text_file,
                                     int64_t batch) {
  LmEvaluation ev;
  const auto& md = lm.metadata;
  ev.source = text_file.empty() ? lm_metadata_text(md, path, "corpus") : text_file;
  std::u32string text;
  if (ev.source == "fortunes" && text_file.empty()) {
    text = data::read_default_corpus();
  } else {
    if (text_file.empty() && !std::filesystem::exists(ev.source))
      throw Error(path + " was trained on " + ev.source + ", which is not there any more: give --text FILE");
    text = data::read_text_file(ev.source);
  }
  const double f = lm_metadata_fraction(md, path, "val_fraction");
  if (batch == 0) batch = md.count("eval_batch") ? lm_metadata_size(md, path, "eval_batch") : 16;
  const int64_t block = lm.model->spec().block_size;
  const std::vector<int64_t> ids = validation_ids(text, ev.source, lm.vocabulary, f, block, &ev.skipped);
  ev.characters = static_cast<int64_t>(ids.size());
  ev.windows = data::sequential_windows(ev.characters, block);
  ev.loss = window_loss(*lm.model, ids, block, batch);
  return ev;
}

void stream_text(CharModel& m, const data::Vocabulary& v, const std::string& prompt, int64_t tokens,
                 const SamplingOptions& o, uint64_t seed, const std::function<void(const std::string&)>& emit) {
  check_generate_tokens(tokens);
  if (prompt.empty()) throw Error("--prompt is empty: give at least one character of the vocabulary");
  check_sampling(o, v.size());
  const std::vector<int64_t> ids = v.encode_utf8(prompt, "the prompt");
  CharDecoder decoder(m);
  autograd::Generator gen(seed);
  std::vector<float> logits = decoder.feed(ids);
  for (int64_t i = 0; i < tokens; ++i) {
    const int64_t next = sample_token(logits.data(), v.size(), o, gen);
    emit(data::encode_utf8(v.decode({next})));
    if (i + 1 < tokens) logits = decoder.feed({next});
  }
}

std::string generate_text(CharModel& m, const data::Vocabulary& v, const std::string& prompt, int64_t tokens,
                          const SamplingOptions& o, uint64_t seed) {
  std::string text;
  stream_text(m, v, prompt, tokens, o, seed, [&text](const std::string& c) { text += c; });
  return text;
}

void check_generate_tokens(int64_t tokens) {
  if (tokens < 1 || tokens > kMaxGenerateTokens)
    throw Error("--tokens must be from 1 to " + std::to_string(kMaxGenerateTokens) + ", got " + std::to_string(tokens));
}

}  // namespace normlab::experiments
