// The layer registry: every norm and activation an experiment can put in a model, one entry each.
// The command line (validation, --help), model building, reports, plots and checkpoint metadata
// all read it, so adding a norm is its module (nn/) plus one entry in layers.cc, or one
// register_norm() call from a program of your own.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "nn/transformer.h"

namespace normlab::experiments {

// What a norm's factory gets: the activations it normalizes, and the options a norm may read.
struct LayerSpec {
  int64_t features = 0;        // C: the channels (the width of a hidden Linear, or a Conv2d's outputs)
  int64_t groups = 8;          // GroupNorm's num_groups (--groups)
  std::vector<int64_t> shape;  // one sample's activations: {C} (after a Linear) or {C, H, W} (a Conv2d)
  uint64_t seed = 0;           // for a norm that draws random numbers (noisybatch): the model's seed for it
  bool image() const { return shape.size() == 3; }
};

// One kind of normalization layer.
struct NormEntry {
  std::string name;     // as typed on the command line and written in the CSV files: "batch"
  std::string display;  // for reports and plot legends: "BatchNorm"
  // Normalizes with the statistics of the training batch (and running estimates in eval): a
  // batch of one sample is an error, and the batch-size sweep also evaluates it with precise
  // population statistics and with the test batches' own statistics.
  bool batch_statistics = false;
  // Its batch statistics span every rank of a data-parallel run (SyncBatchNorm), so one sample per
  // rank is enough.
  bool synchronized = false;
  // The norm it is in one process ("": itself): SyncBatchNorm is BatchNorm there.
  std::string in_one_process;
  // What the reports that compare it say of it ("": nothing), e.g. how it differs from a norm it
  // resembles.
  std::string note;
  // The archs (--arch) it is a norm of; empty: every arch. A model of another arch is an error
  // naming these (batch-shared, a recurrent BatchNorm, is the lstm's only).
  std::vector<std::string> archs;
  // The flags only this norm (and others listing them) reads, e.g. {"--groups"}: given while no run
  // uses such a norm, a usage error.
  std::vector<std::string> flags;
  // Throws normlab::Error when the spec cannot be built (e.g. groups that do not divide C); may be empty.
  std::function<void(const LayerSpec&)> check;
  // The layer for a spec; empty for "none" (no layer: the hidden layer is Linear -> activation).
  std::function<std::shared_ptr<nn::Module>(const LayerSpec&)> make;
  // What a checkpoint must record to rebuild the layer besides its name and the model's widths
  // (GroupNorm: its number of groups); may be empty.
  std::function<std::map<std::string, std::string>(const LayerSpec&)> metadata;
  // Its look in every plot (report/plot.h): a palette colour (1 blue, 2 vermillion, 3 green,
  // 4 purple, 5 orange, 6 sky blue, 7 black, 8 grey) and a gnuplot point type (5 filled square,
  // 6 open circle, 7 filled circle, 9 filled triangle, ...). 0: register_norm picks a colour and a
  // point type no registered norm has as a pair.
  int plot_color = 0;
  int plot_point = 0;
  // How a transformer block (nn::TransformerBlock: the GPT's ln_1 and ln_2) builds it; set for the
  // norms a block takes (none, layer, rms, batch: BatchNorm over the B x T tokens of a batch).
  std::optional<nn::BlockNorm> block_norm;

  // True for "none": no layer is inserted.
  bool is_identity() const { return !make; }
};

// One kind of activation function.
struct ActivationEntry {
  std::string name;     // as typed: "relu"
  std::string display;  // "ReLU"
  std::function<std::shared_ptr<nn::Module>()> make;
};

// The data-parallel experiment's two BatchNorms: the norm whose statistics span the ranks
// (syncbatch) and the norm it is in one process, BatchNorm with each rank's own statistics (batch).
const std::string& sync_bn();
const std::string& local_bn();

// Every registered norm, in registration order: none, batch, layer, group, rms, instance,
// syncbatch, batch-shared, then any added.
const std::vector<NormEntry>& norms();
// The entry called `name`; throws normlab::Error "unknown norm 'x' (expected one of: ...)".
const NormEntry& norm(const std::string& name);
// Adds a norm (e.g. from a test or a program of your own); a name that exists already is an error.
void register_norm(NormEntry entry);
// "none, batch, layer, group, rms, instance": the names, for help texts and messages.
std::string norm_names();

// Every registered activation: relu, tanh, gelu, sigmoid.
const std::vector<ActivationEntry>& activations();
// The entry called `name`; throws normlab::Error "unknown activation 'x' (expected one of: ...)".
const ActivationEntry& activation(const std::string& name);
// "relu, tanh, gelu, sigmoid".
std::string activation_names();

}  // namespace normlab::experiments
