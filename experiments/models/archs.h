// The arch registry: every kind of model (--arch) an experiment can build, one entry each (mlp, cnn,
// lstm).
// The command line, the model builder, the reports and the checkpoints read it, so adding an arch
// is one entry in archs.cc, or one register_arch() call from a program of your own
// (tests/experiments/registries_test.cc registers a toy one and trains with it).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "experiments/config/model_spec.h"
#include "experiments/models/built_model.h"
#include "experiments/registry/layers.h"
#include "nn/transformer.h"

namespace normlab::experiments {

// A value of a checkpoint's metadata by key (throws naming the file when it is missing), and a
// list of whole numbers in a value ("256,256" with ',').
using MetadataGet = std::function<std::string(const std::string& key)>;
using MetadataList = std::function<std::vector<int64_t>(const std::string& key, const std::string& text, char sep)>;

// One kind of model (--arch). Adding one is an entry here (register_arch) whose layers are a
// string of the grammar above: the builder, the checks, the observers and the checkpoints follow.
struct ArchEntry {
  std::string name;                // as typed and recorded: "mlp"
  std::string help;                // for --help: "mlp (--hidden)"
  std::vector<std::string> flags;  // the flags only it reads: given with another arch, a usage error
  bool image = false;              // reads samples as images (C, H, W): --image-shape or the data set's shape
  // Its layers as a layer string, without the classifier Linear ("": the classifier alone; an image
  // arch needs at least one layer).
  std::function<std::string(const ModelSpec&)> layers;
  std::function<std::string(const ModelSpec&)> describe;  // "784-256-256-10"
  // What a checkpoint records to rebuild it beside arch, inputs, outputs, norm and activation (may
  // be empty), and reading that back into a spec.
  std::function<std::map<std::string, std::string>(const ModelSpec&)> metadata;
  std::function<void(ModelSpec&, const MetadataGet&, const MetadataList&)> read_metadata;
  // Builds (gen and m given) or only checks (both null) a model that is no layer string (the lstm);
  // when set, `layers` is not read.
  std::function<void(const ModelSpec&, autograd::Generator*, Model*)> build;
  // --hidden when not given (empty: the data set's default).
  std::vector<int64_t> default_hidden;
  // Reads --activation (the lstm's nonlinearities are its cell's: sigmoid and tanh).
  bool activation = true;
  // compare and sweep: --optimizer when not given ("": the command's own default, sgd) and
  // --clip-grad-norm when not given (0: off). The lstm's: adam (so lr 0.001) and 1.
  std::string default_optimizer;
  double default_clip_grad_norm = 0;
  // sweep --over batch: --lr-scaling when not given ("": linear). The lstm's: sqrt (Adam).
  std::string default_lr_scaling;
  // A sequence model: each sample's inputs read as T time steps of I features ({T, I}, T I =
  // inputs); the runs record the gradient reaching each step's input (InputGradNorm). Empty: none.
  std::function<std::pair<int64_t, int64_t>(const ModelSpec&)> time_steps;
  // The names the reports give its weight matrices, in the order of Model::weights (the output
  // Linear last), e.g. {"LSTM layer 1 input-to-hidden", "LSTM layer 1 hidden-to-hidden", "output
  // Linear"}. Empty: read from its layer string ("Conv2d 1", ..., "Linear 1", ..., "output Linear").
  std::function<std::vector<std::string>(const ModelSpec&)> weight_names;
  // The norms it takes, in this order (empty: every norm whose NormEntry::archs allows it); the
  // GPT's: layer, rms, batch, none (their NormEntry::block_norm).
  std::vector<std::string> norms;
  // Its norm may sit before each sublayer (pre-norm, the norm's name) or after it ("<name>-post":
  // the original Transformer's post-norm); "none" has no position.
  bool norm_positions = false;
};

// A norm as --norms names it for an arch: the registry's entry and where it sits, pre-norm unless
// the name ends in "-post" ("layer-post": LayerNorm after each sublayer).
struct NormChoice {
  std::string name;
  const NormEntry* entry = nullptr;
  nn::NormPosition position = nn::NormPosition::Pre;
};
// The names an arch takes in --norms, in its order: each of ArchEntry::norms, and with
// norm_positions its "-post" form after it (the GPT: layer, layer-post, rms, rms-post, batch,
// batch-post, none); empty for an arch without ArchEntry::norms.
std::vector<std::string> norm_choice_names(const ArchEntry& a);
// The choice a name stands for (std::nullopt: the arch does not take it).
std::optional<NormChoice> find_norm_choice(const ArchEntry& a, const std::string& name);

// The names the reports give the weight matrices of spec's model (ArchEntry::weight_names, or its
// layer string's Conv2d and Linear layers counted by kind, then "output Linear"); empty when the
// arch has neither.
std::vector<std::string> weight_names(const ModelSpec& spec);

// The model as the reports name it: describe(spec), and its activation in parentheses when the
// arch reads --activation ("784-256-256-10 (relu)"; "1x28x28-lstm128-10").
std::string model_text(const ModelSpec& spec);

// Every registered arch: mlp, cnn, lstm, then any added.
const std::vector<ArchEntry>& archs();
// The entry called `name`; throws normlab::Error "unknown --arch 'x' (expected one of: ...)".
const ArchEntry& arch(const std::string& name);
void register_arch(ArchEntry entry);
std::string arch_names();

}  // namespace normlab::experiments
