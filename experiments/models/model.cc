// The experiments' models, assembled from registry entries: an MLP is the layer list
// linear<h>-norm-act per hidden width; a CNN is its layer string (model.h). One builder walks the
// list, tracking the shape of one sample's activations ({F} or {C, H, W}).
#include "experiments/models/model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "autograd/generator.h"
#include "base/error.h"
#include "experiments/models/archs.h"
#include "experiments/models/size_limits.h"
#include "experiments/registry/entries.h"
#include "experiments/registry/layers.h"
#include "nn/conv.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/pooling.h"

namespace normlab::experiments {

namespace {

// One token of a layer string: its kind and numbers, e.g. conv32k3p1 -> "conv", {32}, {k:3, p:1}.
struct Token {
  std::string text;  // as written
  int index;         // 1-based position in the string
  std::string kind;
  int64_t n = -1;    // the number after the kind (-1: none)
  std::map<char, std::pair<int64_t, int64_t>> opts;  // k/s/p/d/g -> (h, w)
};

[[noreturn]] void token_error(const Token& t, const std::string& what) {
  throw Error("--model: layer " + std::to_string(t.index) + " '" + t.text + "': " + what);
}

// Reads a whole number at s[i..]; -1 if there is none (or it is absurdly long).
int64_t read_number(const std::string& s, size_t& i) {
  size_t j = i;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  if (j == i || j - i > 7) return -1;
  const int64_t v = std::stoll(s.substr(i, j - i));
  i = j;
  return v;
}

Token parse_token(const std::string& text, int index) {
  Token t{text, index, "", -1, {}};
  static const char* const kKinds[] = {"conv", "maxpool", "avgpool", "linear", "gap", "flatten", "norm",
                                       "act",  "relu",    "tanh",    "gelu",   "sigmoid"};
  for (const char* k : kKinds)
    if (text.rfind(k, 0) == 0 && std::string(k).size() > t.kind.size()) t.kind = k;
  if (t.kind.empty())
    token_error(t, "unknown layer (expected conv<C>, maxpool<K>, avgpool<K>, gap, flatten, linear<N>, norm, act, "
                   "relu, tanh, gelu or sigmoid)");
  size_t i = t.kind.size();
  const bool numbered = t.kind == "conv" || t.kind == "maxpool" || t.kind == "avgpool" || t.kind == "linear";
  if (numbered) {
    t.n = read_number(text, i);
    if (t.n < 1) token_error(t, "expected a whole number from 1 to 9999999 after '" + t.kind + "'");
  }
  const std::string allowed = t.kind == "conv" ? "kspdg" : (t.kind == "maxpool" || t.kind == "avgpool") ? "sp" : "";
  while (i < text.size()) {
    const char key = text[i++];
    if (allowed.find(key) == std::string::npos)
      token_error(t, "unexpected '" + text.substr(i - 1) + "'" +
                         (allowed.empty() ? " (this layer takes no options)"
                                          : " (options: " + std::string(t.kind == "conv" ? "k<K> or k<KH>x<KW>, s<S>, p<P>, d<D>, g<G>" : "s<S>, p<P>") + ")"));
    if (t.opts.count(key)) token_error(t, std::string("option '") + key + "' given twice");
    int64_t h = read_number(text, i), w = h;
    if (key == 'k' && h >= 0 && i < text.size() && text[i] == 'x') {
      ++i;
      w = read_number(text, i);
    }
    if (h < 0 || w < 0) token_error(t, std::string("expected a whole number after '") + key + "'");
    t.opts[key] = {h, w};
  }
  return t;
}

std::vector<Token> parse_layers(const std::string& layers) {
  std::vector<Token> tokens;
  if (layers.empty()) throw Error("--model: the layer string is empty (e.g. " + std::string(kDefaultCnn) + ")");
  size_t start = 0;
  int index = 0;
  while (true) {
    const size_t dash = layers.find('-', start);
    const std::string text = layers.substr(start, dash == std::string::npos ? std::string::npos : dash - start);
    ++index;
    if (text.empty()) throw Error("--model: layer " + std::to_string(index) + " is empty (two '-' in a row, or one at an end)");
    tokens.push_back(parse_token(text, index));
    if (dash == std::string::npos) break;
    start = dash + 1;
  }
  return tokens;
}

// Walks a layer list, building the modules (with a generator) or only checking that they fit
// (without), and tracking the shape of one sample's activations.
class Builder {
 public:
  Builder(const ModelSpec& s, autograd::Generator* gen, Model* m)
      : s_(s), norm_(experiments::norm(s.norm)), gen_(gen), m_(m), shape_(input_shape(s)) {
    if (m_ && arch(s.arch).image) add(std::make_shared<nn::Unflatten>(1, autograd::Shape(s.image.begin(), s.image.end())));
  }

  void layer(const Token& t) {
    if (t.kind == "conv") conv(t);
    else if (t.kind == "maxpool" || t.kind == "avgpool") pool(t);
    else if (t.kind == "gap") global_pool(t);
    else if (t.kind == "flatten") flatten(t);
    else if (t.kind == "linear") linear(t);
    else if (t.kind == "norm") normalize(t);
    else activate(t);
  }

  // The classifier: flatten if needed, then Linear to the classes.
  void finish() {
    close_layer();
    if (image()) {
      add(std::make_shared<nn::Flatten>());
      shape_ = {numel()};
    }
    if (m_) add_weighted(std::make_shared<nn::Linear>(shape_[0], s_.outputs, *gen_));
  }

 private:
  static std::vector<int64_t> input_shape(const ModelSpec& s) {
    if (!arch(s.arch).image) return {s.inputs};
    if (s.image.size() != 3 || s.image[0] < 1 || s.image[1] < 1 || s.image[2] < 1)
      throw Error("--arch cnn needs the image shape of a sample as C,H,W (--image-shape), got '" + shape_text(s.image) + "'");
    if (s.image[0] * s.image[1] * s.image[2] != s.inputs)
      throw Error("--image-shape " + shape_text(s.image) + " holds " +
                  std::to_string(s.image[0] * s.image[1] * s.image[2]) + " values, but the samples have " +
                  std::to_string(s.inputs) + " features");
    return s.image;
  }
  // A layer's output (per sample) or weights larger than a model here may hold: an error naming the
  // layer and its flag before anything is allocated, e.g. padding 99999 (terabytes of activations).
  void check_size(const Token& t, const std::string& what, const std::string& shape, double values, double most) const {
    if (values <= most) return;
    const std::string layer = arch(s_.arch).image ? "--model: layer " + std::to_string(t.index) + " '" + t.text + "'"
                                                  : "--hidden: the layer of width " + std::to_string(t.n);
    throw Error(layer + ": " + what + " would be " + shape + " (" +
                value_count(values) + " values), more than the " + value_count(most) + " a layer may hold here; give " +
                (t.kind == "conv" ? "less padding, a larger stride or fewer channels" : "a smaller width"));
  }
  bool image() const { return shape_.size() == 3; }
  int64_t numel() const { return image() ? shape_[0] * shape_[1] * shape_[2] : shape_[0]; }
  std::string where(const Token& t) const { return "the activations are " + shape_text(shape_) + " at " + t.text; }
  void need_image(const Token& t, const std::string& what) const {
    if (!image()) token_error(t, what + " needs image activations (C, H, W), but " + where(t) + " (after flatten or linear)");
  }
  // The output size of a window along each spatial dim, or an error naming the token.
  std::pair<int64_t, int64_t> window(const Token& t, std::pair<int64_t, int64_t> k, std::pair<int64_t, int64_t> st,
                                     std::pair<int64_t, int64_t> p, std::pair<int64_t, int64_t> d) const {
    try {
      return {autograd::conv_output_size("height", shape_[1], k.first, st.first, p.first, d.first),
              autograd::conv_output_size("width", shape_[2], k.second, st.second, p.second, d.second)};
    } catch (const Error& e) {
      token_error(t, std::string(e.what()) + "; " + where(t));
    }
  }
  std::shared_ptr<nn::Module> add(std::shared_ptr<nn::Module> mod) { return m_ ? m_->net->add(std::move(mod)) : nullptr; }
  template <class M>
  std::shared_ptr<nn::Module> add_weighted(std::shared_ptr<M> mod) {
    m_->weights.emplace_back(std::to_string(m_->net->size()) + ".weight", mod->weight());
    return add(mod);
  }
  // A new hidden layer (a Conv2d or Linear): probed as "pre"; "post" too if no norm follows.
  void open_layer(std::shared_ptr<nn::Module> mod) {
    close_layer();
    ++layer_, normed_ = false;
    if (!m_) return;
    last_ = std::move(mod);
    m_->probes.push_back({last_, layer_, {"pre"}});
  }
  void close_layer() {
    if (m_ && last_ && !normed_) m_->probes.back().where.push_back("post");
    last_ = nullptr;
  }

  void conv(const Token& t) {
    need_image(t, "a convolution");
    const auto opt = [&](char k, int64_t dflt) { return t.opts.count(k) ? t.opts.at(k) : std::pair{dflt, dflt}; };
    const auto k = opt('k', 3), st = opt('s', 1), p = opt('p', 0), d = opt('d', 1);
    const int64_t groups = opt('g', 1).first;
    if (k.first < 1 || k.second < 1 || st.first < 1 || d.first < 1 || groups < 1)
      token_error(t, "kernel, stride, dilation and groups must be at least 1");
    if (shape_[0] % groups != 0 || t.n % groups != 0)
      token_error(t, "groups " + std::to_string(groups) + " must divide the input channels (" + std::to_string(shape_[0]) +
                         ") and the output channels (" + std::to_string(t.n) + ")");
    const auto [oh, ow] = window(t, k, st, p, d);
    check_size(t, "its output per sample", shape_text({t.n, oh, ow}), double(t.n) * double(oh) * double(ow), kMaxActivations);
    check_size(t, "its weights", shape_text({t.n, shape_[0] / groups, k.first, k.second}),
               double(t.n) * double(shape_[0] / groups) * double(k.first) * double(k.second), kMaxWeights);
    std::shared_ptr<nn::Module> mod;
    if (m_) {
      nn::Conv2dOptions o{.stride = nn::Size2d(st.first, st.second), .padding = nn::Size2d(p.first, p.second),
                          .dilation = nn::Size2d(d.first, d.second), .groups = groups};
      mod = add_weighted(std::make_shared<nn::Conv2d>(shape_[0], t.n, nn::Size2d(k.first, k.second), *gen_, o));
    }
    open_layer(mod);
    shape_ = {t.n, oh, ow};
  }

  void pool(const Token& t) {
    need_image(t, "pooling");
    const int64_t k = t.n;
    const auto st = t.opts.count('s') ? t.opts.at('s') : std::pair{k, k};
    const int64_t p = t.opts.count('p') ? t.opts.at('p').first : 0;
    if (st.first < 1) token_error(t, "the stride must be at least 1");
    if (p > k / 2) token_error(t, "the padding must be at most half the kernel (" + std::to_string(k / 2) + ")");
    const auto [oh, ow] = window(t, {k, k}, st, {p, p}, {1, 1});
    const nn::Size2d stride(st.first);
    if (t.kind == "maxpool") add(std::make_shared<nn::MaxPool2d>(k, stride, p));
    else add(std::make_shared<nn::AvgPool2d>(k, stride, p));
    shape_ = {shape_[0], oh, ow};
  }

  void global_pool(const Token& t) {
    need_image(t, "global pooling");
    add(std::make_shared<nn::AdaptiveAvgPool2d>(1));
    shape_ = {shape_[0], 1, 1};
  }

  void flatten(const Token& t) {
    need_image(t, "flatten");
    add(std::make_shared<nn::Flatten>());
    shape_ = {numel()};
  }

  void linear(const Token& t) {
    if (image()) token_error(t, "a Linear needs flat features, but " + where(t) + " (put flatten or gap before it)");
    check_size(t, "its weights", shape_text({t.n, shape_[0]}), double(t.n) * double(shape_[0]), kMaxWeights);
    open_layer(m_ ? add_weighted(std::make_shared<nn::Linear>(shape_[0], t.n, *gen_)) : nullptr);
    shape_ = {t.n};
  }

  void normalize(const Token& t) {
    if (layer_ < 0) token_error(t, "a norm must follow a conv or linear layer");
    if (norm_.is_identity()) return;
    // A norm's seed from the model's generator, without drawing from it (every other layer's
    // initial weights stay what they are without such a norm).
    const uint64_t seed = gen_ ? autograd::Generator(*gen_).next_u64() : 0;
    const LayerSpec ls{.features = shape_[0], .groups = s_.groups, .shape = shape_, .seed = seed};
    if (norm_.check) {
      try {
        norm_.check(ls);
      } catch (const Error& e) {
        if (arch(s_.arch).image) token_error(t, e.what());
        throw;
      }
    }
    normed_ = true;
    if (m_) m_->probes.push_back({add(norm_.make(ls)), layer_, {"post"}});
  }

  void activate(const Token& t) {
    const ActivationEntry& a = activation(t.kind == "act" ? s_.activation : t.kind);
    close_layer();
    if (!m_) return;
    auto mod = add(a.make());
    if (layer_ >= 0) m_->probes.push_back({mod, layer_, {"act"}});
  }

  const ModelSpec& s_;
  const NormEntry& norm_;
  autograd::Generator* gen_;
  Model* m_;
  std::vector<int64_t> shape_;
  int layer_ = -1;                    // the current hidden layer (a Linear or Conv2d)
  std::shared_ptr<nn::Module> last_;  // its module, until a norm or an activation follows
  bool normed_ = false;
};

// Builds (gen and m given) or only checks (both null) the model of spec.
void assemble(const ModelSpec& s, autograd::Generator* gen, Model* m) {
  activation(s.activation);  // throws for an unknown name
  const NormEntry& n = experiments::norm(s.norm);
  if (s.inputs <= 0 || s.outputs <= 0) throw Error("the model needs at least one input and one output");
  const ArchEntry& a = arch(s.arch);  // throws for an unknown name
  if (!n.archs.empty() && std::find(n.archs.begin(), n.archs.end(), s.arch) == n.archs.end()) {
    std::string only;
    for (const std::string& x : n.archs) only += (only.empty() ? "--arch " : " or --arch ") + x;
    throw Error("norm " + s.norm + " (" + n.display + ") is a norm of " + only + " only, not of --arch " + s.arch);
  }
  if (a.build) return a.build(s, gen, m);
  Builder b(s, gen, m);
  const std::string layers = a.layers(s);
  if (!layers.empty() || a.image)  // an empty list: the classifier alone
    for (const Token& t : parse_layers(layers)) b.layer(t);
  b.finish();
}

}  // namespace

void validate(const ModelSpec& s) { assemble(s, nullptr, nullptr); }

Model build_model(const ModelSpec& s, autograd::Generator& gen) {
  validate(s);
  Model m;
  m.net = std::make_shared<nn::Sequential>();
  assemble(s, &gen, &m);
  return m;
}

std::string describe(const ModelSpec& s) { return arch(s.arch).describe(s); }

}  // namespace normlab::experiments
