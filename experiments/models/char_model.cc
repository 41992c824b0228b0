// GPT and CharLSTM behind one interface: build, forward, decode, metadata (char_model.h).
#include "experiments/models/char_model.h"

#include "autograd/engine.h"
#include "base/error.h"

namespace normlab::experiments {

using autograd::Tensor;

namespace {

std::string count(int64_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

}  // namespace

CharModel::CharModel(const CharModelSpec& spec, autograd::Generator& gen) : spec_(spec) {
  if (spec_.arch == "gpt") {
    spec_.gpt.vocab_size = spec_.vocab_size;
    spec_.gpt.block_size = spec_.block_size;
    gpt_ = std::make_shared<nn::GPT>(spec_.gpt, gen);
    module_ = gpt_;
  } else if (spec_.arch == "lstm") {
    spec_.lstm.vocab_size = spec_.vocab_size;
    lstm_ = std::make_shared<nn::CharLSTM>(spec_.lstm, gen);
    module_ = lstm_;
  } else {
    throw Error("a character language model is --arch gpt or lstm, got '" + spec_.arch + "'");
  }
}

Tensor CharModel::forward(const std::vector<int64_t>& ids, const autograd::Shape& shape) {
  return gpt_ ? gpt_->forward(ids, shape) : lstm_->forward(ids, shape);
}

std::string CharModel::describe() const {
  if (gpt_) {
    const nn::GPTConfig& c = spec_.gpt;
    return "GPT, " + count(c.n_layer, "layer") + ", " + count(c.n_head, "head") + ", width " + std::to_string(c.width) +
           ", block size " + std::to_string(c.block_size) + ", norm " + nn::block_norm_name(c.norm) + " (" +
           nn::norm_position_name(c.position) + "-norm)";
  }
  const nn::CharLSTMConfig& c = spec_.lstm;
  return "CharLSTM, embedding " + std::to_string(c.embed_dim) + ", " + count(c.num_layers, "layer") + " of " +
         std::to_string(c.hidden_size) + " units, window " + std::to_string(spec_.block_size);
}

CharDecoder::CharDecoder(CharModel& m) : m_(m) {
  m_.module().eval();
  if (m_.gpt()) gpt_ = std::make_unique<nn::GPTDecoder>(*m_.gpt(), 1);
}

std::vector<float> CharDecoder::feed(const std::vector<int64_t>& ids) {
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t v = m_.spec().vocab_size;
  if (gpt_) {
    const Tensor logits = gpt_->feed(ids, n);  // (1, V)
    const float* p = logits.data<float>();
    return std::vector<float>(p, p + v);
  }
  autograd::NoGradGuard no_grad;
  const nn::CharLSTMOutput out = m_.lstm()->forward_with_state(ids, {1, n}, h_, c_);  // logits (1, n, V)
  h_ = out.h_n, c_ = out.c_n;
  const float* p = out.logits.data<float>() + (n - 1) * v;
  return std::vector<float>(p, p + v);
}

std::map<std::string, std::string> char_model_metadata(const CharModelSpec& s) {
  std::map<std::string, std::string> md{{"arch", s.arch},
                                        {"task", "language-model"},
                                        {"vocab_size", std::to_string(s.vocab_size)},
                                        {"block_size", std::to_string(s.block_size)}};
  if (s.arch == "gpt") {
    md["n_layer"] = std::to_string(s.gpt.n_layer);
    md["n_head"] = std::to_string(s.gpt.n_head);
    md["width"] = std::to_string(s.gpt.width);
    md["norm"] = nn::block_norm_name(s.gpt.norm);
    md["position"] = nn::norm_position_name(s.gpt.position);
  } else {
    md["embed_dim"] = std::to_string(s.lstm.embed_dim);
    md["hidden_size"] = std::to_string(s.lstm.hidden_size);
    md["num_layers"] = std::to_string(s.lstm.num_layers);
    md["norm"] = "none";
  }
  return md;
}

CharModelSpec read_char_model_metadata(const std::map<std::string, std::string>& md, const std::string& path) {
  CharModelSpec s;
  s.arch = lm_metadata_text(md, path, "arch");
  s.vocab_size = lm_metadata_size(md, path, "vocab_size");
  s.block_size = lm_metadata_size(md, path, "block_size");
  if (s.arch == "gpt") {
    s.gpt.n_layer = lm_metadata_size(md, path, "n_layer");
    s.gpt.n_head = lm_metadata_size(md, path, "n_head");
    s.gpt.width = lm_metadata_size(md, path, "width");
    s.gpt.norm = nn::parse_block_norm(lm_metadata_text(md, path, "norm"));
    s.gpt.position = nn::parse_norm_position(lm_metadata_text(md, path, "position"));
  } else if (s.arch == "lstm") {
    s.lstm.embed_dim = lm_metadata_size(md, path, "embed_dim");
    s.lstm.hidden_size = lm_metadata_size(md, path, "hidden_size");
    s.lstm.num_layers = lm_metadata_size(md, path, "num_layers");
  } else {
    throw Error(path + ": metadata \"arch\" is \"" + s.arch + "\", expected gpt or lstm for a language model");
  }
  return s;
}

namespace {

// The shape of the tensor called `name` in `tensors` (empty when there is none).
autograd::Shape shape_of(const autograd::NamedTensors& tensors, const std::string& name) {
  for (const auto& [n, t] : tensors)
    if (n == name) return t.shape();
  return {};
}

// How many of `tensors` are named prefix<k>suffix for k = 0, 1, ... in a row.
int64_t count_numbered(const autograd::NamedTensors& tensors, const std::string& prefix, const std::string& suffix) {
  int64_t k = 0;
  while (!shape_of(tensors, prefix + std::to_string(k) + suffix).empty()) ++k;
  return k;
}

// Throws unless the tensor `name` has `want` at dimension `dim`, the value of metadata `key`.
void expect_dim(const autograd::NamedTensors& tensors, const std::string& path, const std::string& name, size_t dim,
                int64_t want, const std::string& key) {
  const autograd::Shape s = shape_of(tensors, name);
  if (s.empty()) throw Error(path + ": the checkpoint holds no tensor " + name + " (metadata \"" + key + "\" " +
                             std::to_string(want) + " describes one)");
  if (s.size() <= dim || s[dim] != want)
    throw Error(path + ": metadata \"" + key + "\" is " + std::to_string(want) + " but the tensor " + name + " is " +
                autograd::shape_str(s) + ": the metadata does not describe these weights (an edited file?)");
}

// Throws unless `count` numbered tensors (prefix<k>...) are what metadata `key` says.
void expect_count(int64_t count, int64_t want, const std::string& path, const std::string& key, const std::string& what) {
  if (count != want)
    throw Error(path + ": metadata \"" + key + "\" is " + std::to_string(want) + " but the checkpoint holds " +
                std::to_string(count) + " " + what + ": the metadata does not describe these weights (an edited file?)");
}

}  // namespace

void check_char_model_sizes(const CharModelSpec& s, const autograd::NamedTensors& tensors, const std::string& path) {
  if (s.arch == "gpt") {
    expect_dim(tensors, path, "transformer.wte.weight", 0, s.vocab_size, "vocab_size");
    expect_dim(tensors, path, "transformer.wte.weight", 1, s.gpt.width, "width");
    expect_dim(tensors, path, "transformer.wpe.weight", 0, s.block_size, "block_size");
    expect_count(count_numbered(tensors, "transformer.h.", ".attn.c_attn.weight"), s.gpt.n_layer, path, "n_layer",
                 "block(s) (transformer.h.<i>)");
    if (s.gpt.width % s.gpt.n_head != 0)
      throw Error(path + ": metadata \"n_head\" is " + std::to_string(s.gpt.n_head) + ", which does not divide \"width\" " +
                  std::to_string(s.gpt.width));
  } else {
    expect_dim(tensors, path, "embedding.weight", 0, s.vocab_size, "vocab_size");
    expect_dim(tensors, path, "embedding.weight", 1, s.lstm.embed_dim, "embed_dim");
    expect_dim(tensors, path, "lstm.weight_hh_l0", 1, s.lstm.hidden_size, "hidden_size");
    expect_count(count_numbered(tensors, "lstm.weight_ih_l", ""), s.lstm.num_layers, path, "num_layers",
                 "layer(s) (lstm.weight_ih_l<k>)");
  }
}

int64_t lm_metadata_size(const std::map<std::string, std::string>& md, const std::string& path, const std::string& key) {
  const auto it = md.find(key);
  if (it == md.end()) throw Error(path + ": language model metadata lacks \"" + key + "\"");
  try {
    size_t used = 0;
    const int64_t v = std::stoll(it->second, &used);
    if (used == it->second.size() && v >= 1) return v;
  } catch (const std::exception&) {
  }
  throw Error(path + ": metadata \"" + key + "\" is \"" + it->second + "\", expected a whole number >= 1");
}

double lm_metadata_fraction(const std::map<std::string, std::string>& md, const std::string& path,
                            const std::string& key) {
  const std::string text = lm_metadata_text(md, path, key);
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && v > 0 && v < 1) return v;  // NaN fails both comparisons
  } catch (const std::exception&) {
  }
  throw Error(path + ": metadata \"" + key + "\" is \"" + text + "\", expected a fraction above 0 and below 1");
}

std::string lm_metadata_text(const std::map<std::string, std::string>& md, const std::string& path,
                             const std::string& key) {
  const auto it = md.find(key);
  if (it == md.end()) throw Error(path + ": language model metadata lacks \"" + key + "\"");
  return it->second;
}

}  // namespace normlab::experiments
