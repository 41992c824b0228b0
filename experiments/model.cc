// The experiments' models, assembled from registry entries: an MLP is the layer list
// linear<h>-norm-act per hidden width; a CNN is its layer string (model.h). One builder walks the
// list, tracking the shape of one sample's activations ({F} or {C, H, W}).
#include "experiments/model.h"

#include <cctype>

#include "autograd/error.h"
#include "experiments/registry.h"
#include "nn/conv.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/pooling.h"

namespace normlab::experiments {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

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

// The layer list of an MLP: linear<h>-norm-act for every hidden width.
std::vector<Token> mlp_layers(const ModelSpec& s) {
  std::vector<Token> tokens;
  for (int64_t h : s.hidden) {
    if (h <= 0) throw Error("hidden widths must be positive, got " + std::to_string(h));
    tokens.push_back({"linear" + std::to_string(h), 0, "linear", h, {}});
    tokens.push_back({"norm", 0, "norm", -1, {}});
    tokens.push_back({"act", 0, "act", -1, {}});
  }
  return tokens;
}

// Builds (net != nullptr) or only checks (net == nullptr) the model of spec.
void assemble(const ModelSpec& s, autograd::Generator* gen, Model* m) {
  const NormEntry& norm = experiments::norm(s.norm);
  activation(s.activation);  // throws for an unknown name
  if (s.inputs <= 0 || s.outputs <= 0) throw Error("the model needs at least one input and one output");
  const bool cnn = s.arch == "cnn";
  if (!cnn && s.arch != "mlp") throw Error("unknown --arch '" + s.arch + "' (expected mlp or cnn)");
  std::vector<int64_t> shape{s.inputs};
  if (cnn) {
    if (s.image.size() != 3 || s.image[0] < 1 || s.image[1] < 1 || s.image[2] < 1)
      throw Error("--arch cnn needs the image shape of a sample as C,H,W (--image-shape), got '" +
                  shape_text(s.image) + "'");
    if (s.image[0] * s.image[1] * s.image[2] != s.inputs)
      throw Error("--image-shape " + shape_text(s.image) + " holds " + std::to_string(s.image[0] * s.image[1] * s.image[2]) +
                  " values, but the samples have " + std::to_string(s.inputs) + " features");
    shape = s.image;
  }
  const std::vector<Token> tokens = cnn ? parse_layers(s.layers) : mlp_layers(s);
  nn::Sequential* net = m ? m->net.get() : nullptr;
  const auto add = [&](std::shared_ptr<nn::Module> mod) { return net ? net->add(std::move(mod)) : nullptr; };
  if (cnn) add(std::make_shared<nn::Unflatten>(1, autograd::Shape(s.image.begin(), s.image.end())));
  const auto add_weighted = [&](auto mod) {
    if (!net) return std::shared_ptr<nn::Module>();
    const std::string name = std::to_string(net->size()) + ".weight";
    m->weights.emplace_back(name, mod->weight());
    return add(mod);
  };
  int layer = -1;                      // the current hidden layer (a Linear or Conv2d)
  std::shared_ptr<nn::Module> last;    // its module, until a norm follows
  bool normed = false;
  const auto close_layer = [&] {       // without a norm, the layer's output is also "post"
    if (m && last && !normed) m->probes.back().where.push_back("post");
    last = nullptr;
  };
  const auto where = [&](const Token& t) { return "the activations are " + shape_text(shape) + " at " + t.text; };
  for (const Token& t : tokens) {
    const bool image = shape.size() == 3;
    if (t.kind == "conv") {
      if (!image) token_error(t, "a convolution needs image activations (C, H, W), but " + where(t) + " (after flatten or linear)");
      nn::Conv2dOptions o;
      const auto opt = [&](char k, int64_t dflt) { return t.opts.count(k) ? t.opts.at(k) : std::pair{dflt, dflt}; };
      const auto [kh, kw] = opt('k', 3);
      o.stride = nn::Size2d(opt('s', 1).first, opt('s', 1).second);
      o.padding = nn::Size2d(opt('p', 0).first, opt('p', 0).second);
      o.dilation = nn::Size2d(opt('d', 1).first, opt('d', 1).second);
      o.groups = opt('g', 1).first;
      if (kh < 1 || kw < 1 || o.stride.h < 1 || o.dilation.h < 1 || o.groups < 1)
        token_error(t, "kernel, stride, dilation and groups must be at least 1");
      if (shape[0] % o.groups != 0 || t.n % o.groups != 0)
        token_error(t, "groups " + std::to_string(o.groups) + " must divide the input channels (" +
                           std::to_string(shape[0]) + ") and the output channels (" + std::to_string(t.n) + ")");
      int64_t oh = 0, ow = 0;
      try {
        oh = autograd::conv_output_size("height", shape[1], kh, o.stride.h, o.padding.h, o.dilation.h);
        ow = autograd::conv_output_size("width", shape[2], kw, o.stride.w, o.padding.w, o.dilation.w);
      } catch (const Error& e) {
        token_error(t, std::string(e.what()) + "; " + where(t));
      }
      close_layer();
      ++layer, normed = false;
      if (gen) {
        auto conv = std::make_shared<nn::Conv2d>(shape[0], t.n, nn::Size2d(kh, kw), *gen, o);
        last = add_weighted(conv);
        m->probes.push_back({last, layer, {"pre"}});
      }
      shape = {t.n, oh, ow};
    } else if (t.kind == "maxpool" || t.kind == "avgpool") {
      if (!image) token_error(t, "pooling needs image activations (C, H, W), but " + where(t));
      const int64_t k = t.n;
      const auto st = t.opts.count('s') ? t.opts.at('s') : std::pair{k, k};
      const int64_t p = t.opts.count('p') ? t.opts.at('p').first : 0;
      if (st.first < 1 || st.second < 1) token_error(t, "the stride must be at least 1");
      if (p > k / 2) token_error(t, "the padding must be at most half the kernel (" + std::to_string(k / 2) + ")");
      int64_t oh = 0, ow = 0;
      try {
        oh = autograd::conv_output_size("height", shape[1], k, st.first, p, 1);
        ow = autograd::conv_output_size("width", shape[2], k, st.second, p, 1);
      } catch (const Error& e) {
        token_error(t, std::string(e.what()) + "; " + where(t));
      }
      const nn::Size2d stride = st.first == st.second ? nn::Size2d(st.first) : nn::Size2d(st.first, st.second);
      if (t.kind == "maxpool") add(std::make_shared<nn::MaxPool2d>(k, stride, p));
      else add(std::make_shared<nn::AvgPool2d>(k, stride, p));
      shape = {shape[0], oh, ow};
    } else if (t.kind == "gap") {
      if (!image) token_error(t, "global pooling needs image activations (C, H, W), but " + where(t));
      add(std::make_shared<nn::AdaptiveAvgPool2d>(1));
      shape = {shape[0], 1, 1};
    } else if (t.kind == "flatten") {
      if (!image) token_error(t, "flatten needs image activations (C, H, W), but " + where(t));
      add(std::make_shared<nn::Flatten>());
      shape = {shape[0] * shape[1] * shape[2]};
    } else if (t.kind == "linear") {
      if (image) token_error(t, "a Linear needs flat features, but " + where(t) + " (put flatten or gap before it)");
      close_layer();
      ++layer, normed = false;
      if (gen) {
        last = add_weighted(std::make_shared<nn::Linear>(shape[0], t.n, *gen));
        m->probes.push_back({last, layer, {"pre"}});
      }
      shape = {t.n};
    } else if (t.kind == "norm") {
      if (layer < 0) token_error(t, "a norm must follow a conv or linear layer");
      if (norm.is_identity()) continue;
      const LayerSpec ls{.features = shape[0], .groups = s.groups, .shape = shape};
      if (norm.check) {
        try {
          norm.check(ls);
        } catch (const Error& e) {
          if (cnn) token_error(t, e.what());
          throw;
        }
      }
      normed = true;
      if (gen) m->probes.push_back({add(norm.make(ls)), layer, {"post"}});
    } else {  // an activation: the --activation (act) or a named one
      const ActivationEntry& a = activation(t.kind == "act" ? s.activation : t.kind);
      close_layer();
      if (gen) {
        auto mod = add(a.make());
        if (layer >= 0) m->probes.push_back({mod, layer, {"act"}});
      }
    }
  }
  close_layer();
  if (shape.size() == 3) {
    add(std::make_shared<nn::Flatten>());
    shape = {shape[0] * shape[1] * shape[2]};
  }
  if (gen) add_weighted(std::make_shared<nn::Linear>(shape[0], s.outputs, *gen));
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

std::string describe(const ModelSpec& s) {
  if (s.arch == "cnn") return shape_text(s.image) + "-" + s.layers + "-" + std::to_string(s.outputs);
  std::string d = std::to_string(s.inputs);
  for (int64_t h : s.hidden) d += "-" + std::to_string(h);
  return d + "-" + std::to_string(s.outputs);
}

std::map<std::string, std::string> checkpoint_metadata(const ModelSpec& s) {
  std::map<std::string, std::string> md{{"model", describe(s)}, {"norm", s.norm}, {"activation", s.activation}};
  if (s.arch == "cnn") {
    md["arch"] = "cnn";
    md["layers"] = s.layers;
    md["image_shape"] = shape_text(s.image);
  }
  const NormEntry& norm = experiments::norm(s.norm);
  if (norm.metadata && (s.arch == "cnn" || !s.hidden.empty())) {
    const int64_t width = s.arch == "cnn" ? s.image.at(0) : s.hidden.front();
    for (const auto& [k, v] : norm.metadata({.features = width, .groups = s.groups, .shape = {width}}))
      md["norm." + k] = v;
  }
  return md;
}

}  // namespace normlab::experiments
