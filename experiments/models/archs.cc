// The built-in archs: the MLP (linear-norm-act per hidden width), the CNN (its layer string) and
// the LSTM (recurrent.h).
#include "experiments/models/archs.h"

#include <sstream>

#include "base/error.h"
#include "experiments/models/recurrent.h"
#include "experiments/registry/entries.h"
#include "experiments/registry/layers.h"

namespace normlab::experiments {

namespace {

std::string widths_text(const std::vector<int64_t>& widths, const std::string& sep) {
  std::string t;
  for (int64_t h : widths) t += (t.empty() ? "" : sep) + std::to_string(h);
  return t;
}

// The character language model: trained by `normlab train --dataset text` (text_training.h,
// language_model.h) with its own flags there; no classifier of samples.
ArchEntry gpt_arch() {
  return {.name = "gpt",
          .help = "gpt (a character language model: --dataset text)",
          .describe = [](const ModelSpec&) { return std::string("gpt"); },
          .build = [](const ModelSpec&, autograd::Generator*, Model*) {
            throw Error("--arch gpt is a character language model: it trains on --dataset text "
                        "(normlab train --arch gpt --dataset text [--text FILE])");
          },
          .norms = {"layer", "rms", "batch", "none", "noisybatch"},
          .norm_positions = true};
}

// The LSTM (recurrent.h): each image read row by row.
ArchEntry lstm_arch() {
  return {.name = "lstm",
          .help = "lstm (--hidden, on images read row by row)",
          .flags = {"--hidden", "--image-shape"},
          .image = true,
          .describe = [](const ModelSpec& s) {
            return shape_text(s.image) + "-lstm" + widths_text(s.hidden, "x") + "-" + std::to_string(s.outputs);
          },
          .metadata = [](const ModelSpec& s) -> std::map<std::string, std::string> {
            return {{"hidden", widths_text(s.hidden, ",")}, {"image_shape", shape_text(s.image)}};
          },
          .read_metadata = [](ModelSpec& s, const MetadataGet& get, const MetadataList& list) {
            s.hidden = list("hidden", get("hidden"), ',');
            s.image = list("image_shape", get("image_shape"), 'x');
          },
          .build = build_lstm,
          .default_hidden = {128},
          .activation = false,
          // The sequence study's protocol: Adam (lr 0.001) with the gradient norm clipped to 1.
          .default_optimizer = "adam",
          .default_clip_grad_norm = 1.0,
          .default_lr_scaling = "sqrt",
          .time_steps = [](const ModelSpec& s) { return std::pair<int64_t, int64_t>{s.image.at(1), s.image.at(2)}; },
          .weight_names = lstm_weight_names};
}

std::vector<ArchEntry> builtin_archs() {
  std::vector<ArchEntry> t;
  t.push_back({.name = "mlp",
               .help = "mlp (--hidden)",
               .flags = {"--hidden"},
               // linear<h>-norm-act for every hidden width
               .layers = [](const ModelSpec& s) {
                 std::string l;
                 for (int64_t h : s.hidden) {
                   if (h <= 0) throw Error("hidden widths must be positive, got " + std::to_string(h));
                   l += (l.empty() ? "" : "-") + ("linear" + std::to_string(h)) + "-norm-act";
                 }
                 return l;
               },
               .describe = [](const ModelSpec& s) {
                 std::string d = std::to_string(s.inputs);
                 for (int64_t h : s.hidden) d += "-" + std::to_string(h);
                 return d + "-" + std::to_string(s.outputs);
               },
               .metadata = [](const ModelSpec& s) -> std::map<std::string, std::string> {
                 return {{"hidden", widths_text(s.hidden, ",")}};
               },
               .read_metadata = [](ModelSpec& s, const MetadataGet& get, const MetadataList& list) {
                 const std::string h = get("hidden");
                 if (!h.empty()) s.hidden = list("hidden", h, ',');
               }});
  t.push_back({.name = "cnn",
               .help = "cnn (--model, on images)",
               .flags = {"--model", "--image-shape"},
               .image = true,
               .layers = [](const ModelSpec& s) { return s.layers; },
               .describe = [](const ModelSpec& s) {
                 return shape_text(s.image) + "-" + s.layers + "-" + std::to_string(s.outputs);
               },
               .metadata = [](const ModelSpec& s) -> std::map<std::string, std::string> {
                 return {{"layers", s.layers}, {"image_shape", shape_text(s.image)}};
               },
               .read_metadata = [](ModelSpec& s, const MetadataGet& get, const MetadataList& list) {
                 s.layers = get("layers");
                 s.image = list("image_shape", get("image_shape"), 'x');
               }});
  t.push_back(lstm_arch());
  return t;
}

std::vector<ArchEntry>& arch_table() {
  static std::vector<ArchEntry> t = [] {
    std::vector<ArchEntry> a = builtin_archs();
    a.push_back(gpt_arch());
    return a;
  }();
  return t;
}

}  // namespace

const std::vector<ArchEntry>& archs() { return arch_table(); }
const ArchEntry& arch(const std::string& name) { return find_entry(archs(), name, "--arch"); }
void register_arch(ArchEntry entry) {
  if ((!entry.layers && !entry.build) || !entry.describe)
    throw Error("register_arch: the arch '" + entry.name + "' needs layers (or build) and describe");
  add_entry(arch_table(), std::move(entry), "register_arch", "arch");
}
std::string arch_names() { return names_of(archs()); }

std::vector<std::string> norm_choice_names(const ArchEntry& a) {
  std::vector<std::string> names;
  for (const std::string& n : a.norms) {
    names.push_back(n);
    if (a.norm_positions && !norm(n).is_identity()) names.push_back(n + "-post");
  }
  return names;
}

std::optional<NormChoice> find_norm_choice(const ArchEntry& a, const std::string& name) {
  for (const std::string& n : a.norms) {
    if (name == n) return NormChoice{name, &norm(n), nn::NormPosition::Pre};
    if (a.norm_positions && !norm(n).is_identity() && name == n + "-post")
      return NormChoice{name, &norm(n), nn::NormPosition::Post};
  }
  return std::nullopt;
}

std::string model_text(const ModelSpec& spec) {
  return arch(spec.arch).describe(spec) + (arch(spec.arch).activation ? " (" + spec.activation + ")" : "");
}

std::vector<std::string> weight_names(const ModelSpec& spec) {
  const ArchEntry& a = arch(spec.arch);
  if (a.weight_names) return a.weight_names(spec);
  if (!a.layers) return {};
  std::vector<std::string> names;
  int convs = 0, linears = 0;
  std::stringstream tokens(a.layers(spec));
  for (std::string t; std::getline(tokens, t, '-');) {
    if (t.rfind("conv", 0) == 0) names.push_back("Conv2d " + std::to_string(++convs));
    else if (t.rfind("linear", 0) == 0) names.push_back("Linear " + std::to_string(++linears));
  }
  names.push_back("output Linear");
  return names;
}

}  // namespace normlab::experiments
