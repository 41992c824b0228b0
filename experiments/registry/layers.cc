// The built-in norms and activations, one table entry each.
#include "experiments/registry/layers.h"

#include <algorithm>

#include "base/error.h"
#include "experiments/registry/entries.h"
#include "nn/activation.h"
#include "nn/batchnorm.h"
#include "nn/groupnorm.h"
#include "nn/instancenorm.h"
#include "nn/layernorm.h"
#include "nn/noisy_batchnorm.h"
#include "nn/rmsnorm.h"
#include "nn/syncbatchnorm.h"

namespace normlab::experiments {

namespace {

// The normalized shape of LayerNorm and RMSNorm: everything but the batch dim ({C} or {C, H, W}).
autograd::Shape sample_shape(const LayerSpec& s) {
  return s.shape.empty() ? autograd::Shape{s.features} : autograd::Shape(s.shape.begin(), s.shape.end());
}

// GroupNorm's groups must divide the channels (or hidden width).
void check_groups(const LayerSpec& s) {
  if (s.groups <= 0 || s.features % s.groups != 0)
    throw Error("GroupNorm with " + std::to_string(s.groups) + " groups needs " +
                (s.image() ? "channel counts" : "hidden widths") + " divisible by " + std::to_string(s.groups) +
                ", got " + std::to_string(s.features) + " (set --groups)");
}

// InstanceNorm normalizes each channel of an image over H x W: it needs more than one value there.
void check_instance(const LayerSpec& s) {
  if (!s.image())
    throw Error("instance norm normalizes each channel of an image over H x W: it needs "
                "convolutional activations (--arch cnn), not a Linear layer's");
  if (s.shape[1] * s.shape[2] < 2)
    throw Error("instance norm needs more than one value per channel, but the activations are " +
                std::to_string(s.shape[0]) + "x1x1");
}

// The recurrent BatchNorm LSTM with one set of statistics for every time step (nn::BatchNormLSTM
// with shared_statistics; "batch" keeps statistics per step): an LSTM cell, built by the lstm
// arch (recurrent.h), never a layer of its own.
NormEntry batch_shared_norm() {
  return {.name = "batch-shared",
          .display = "BatchNorm (shared statistics)",
          .batch_statistics = true,
          .note = "BatchNorm (shared statistics) trains exactly as BatchNorm (each time step normalized with "
                  "the batch's statistics at that step, so its training numbers are the same); only its running "
                  "statistics, which evaluation uses, are one set for all steps instead of one per step.",
          .archs = {"lstm"},
          .make = [](const LayerSpec&) -> std::shared_ptr<nn::Module> {
            throw Error("norm batch-shared is a recurrent BatchNorm: only the lstm arch builds it");
          },
          .plot_color = 6,  // sky blue (BatchNorm's blue, lighter), filled triangle
          .plot_point = 9};
}

NormEntry sync_batch_norm() {
  // BatchNorm over every rank's slice of the global batch in data-parallel training (--distributed);
  // in one process it is BatchNorm.
  return {.name = "syncbatch",
          .display = "SyncBatchNorm",
          .batch_statistics = true,
          .synchronized = true,
          .in_one_process = "batch",
          .make = [](const LayerSpec& s) -> std::shared_ptr<nn::Module> {
            return std::make_shared<nn::SyncBatchNorm>(s.features);
          },
          .plot_color = 6,  // sky blue (BatchNorm's blue, lighter), filled pentagon
          .plot_point = 15};
}

// BatchNorm with a random per-unit scale and shift drawn at every training step (nn::NoisyBatchNorm):
// the control that trains like BatchNorm while its layers' inputs are anything but stable.
NormEntry noisy_batch_norm() {
  return {.name = "noisybatch",
          .display = "noisy BatchNorm",
          .batch_statistics = true,
          .note = "noisy BatchNorm is BatchNorm whose output, per unit, is multiplied by a scale drawn from "
                  "U[0.5, 2) and shifted by an offset drawn from U[-0.5, 1.5) anew at every training step "
                  "(at evaluation: their means, 1.25 and 0.5): its layers' inputs change their mean and variance at every step.",
          .make = [](const LayerSpec& s) -> std::shared_ptr<nn::Module> {
            return std::make_shared<nn::NoisyBatchNorm>(s.features, s.image(), s.seed);
          },
          .plot_color = 8,  // grey, open circle (the colour of no other norm)
          .plot_point = 6,
          .block_norm = nn::BlockNorm::NoisyBatch};
}

std::vector<NormEntry> builtin_norms() {
  std::vector<NormEntry> n;
  n.push_back({.name = "none", .display = "no norm", .plot_color = 7, .plot_point = 6,  // black, open circle
               .block_norm = nn::BlockNorm::None});
  n.push_back({.name = "batch",
               .display = "BatchNorm",
               .batch_statistics = true,
               .make = [](const LayerSpec& s) -> std::shared_ptr<nn::Module> {
                 if (s.image()) return std::make_shared<nn::BatchNorm2d>(s.features);
                 return std::make_shared<nn::BatchNorm1d>(s.features);
               },
               .plot_color = 1,  // blue, filled circle
               .plot_point = 7,
               .block_norm = nn::BlockNorm::Batch});
  n.push_back({.name = "layer",
               .display = "LayerNorm",
               .make = [](const LayerSpec& s) { return std::make_shared<nn::LayerNorm>(sample_shape(s)); },
               .plot_color = 2,  // vermillion, filled square
               .plot_point = 5,
               .block_norm = nn::BlockNorm::Layer});
  n.push_back({.name = "group",
               .display = "GroupNorm",
               .flags = {"--groups"},
               .check = check_groups,
               .make = [](const LayerSpec& s) { return std::make_shared<nn::GroupNorm>(s.groups, s.features); },
               .metadata = [](const LayerSpec& s) {
                 return std::map<std::string, std::string>{{"num_groups", std::to_string(s.groups)}};
               },
               .plot_color = 3,  // green, filled triangle
               .plot_point = 9});
  n.push_back({.name = "rms",
               .display = "RMSNorm",
               .make = [](const LayerSpec& s) { return std::make_shared<nn::RMSNorm>(sample_shape(s)); },
               .plot_color = 5,  // orange, filled diamond
               .plot_point = 13,
               .block_norm = nn::BlockNorm::RMS});
  // InstanceNorm2d with affine=True (PyTorch's default is False): every norm of the study then has
  // the same per-channel scale and shift, as in the GroupNorm paper's comparison.
  n.push_back({.name = "instance",
               .display = "InstanceNorm",
               .check = check_instance,
               .make = [](const LayerSpec& s) {
                 return std::make_shared<nn::InstanceNorm2d>(s.features, 1e-5, 0.1, /*affine=*/true);
               },
               .plot_color = 4,  // purple, filled downward triangle
               .plot_point = 11});
  n.push_back(sync_batch_norm());
  n.push_back(batch_shared_norm());
  n.push_back(noisy_batch_norm());
  return n;
}

template <class M>
ActivationEntry act(std::string name, std::string display) {
  return {std::move(name), std::move(display), [] { return std::make_shared<M>(); }};
}

std::vector<NormEntry>& norm_table() {
  static std::vector<NormEntry> t = builtin_norms();
  return t;
}

}  // namespace

const std::vector<NormEntry>& norms() { return norm_table(); }

const NormEntry& norm(const std::string& name) { return find_entry(norms(), name, "norm"); }

void register_norm(NormEntry entry) {
  if (entry.display.empty()) entry.display = entry.name;
  // A colour or point type not given: the first pair no registered norm has (colours from the
  // norm's position in the table on, so that added norms differ in colour first).
  static const int kPoints[] = {4, 8, 10, 12, 14, 6, 5, 7, 9, 11, 13, 15, 1, 2, 3};
  const int start = static_cast<int>(norms().size());
  for (int p = 0; p < 15 && (entry.plot_color == 0 || entry.plot_point == 0); ++p)
    for (int c = 0; c < 8; ++c) {
      const int color = entry.plot_color ? entry.plot_color : (start + c) % 8 + 1;
      const int point = entry.plot_point ? entry.plot_point : kPoints[p];
      if (std::none_of(norms().begin(), norms().end(),
                       [&](const NormEntry& e) { return e.plot_color == color && e.plot_point == point; })) {
        entry.plot_color = color, entry.plot_point = point;
        break;
      }
    }
  add_entry(norm_table(), std::move(entry), "register_norm", "norm");
}

std::string norm_names() { return names_of(norms()); }

const std::string& sync_bn() {
  for (const NormEntry& e : norms())
    if (e.synchronized) return e.name;
  throw Error("no registered norm has statistics over the ranks of a data-parallel run");
}

const std::string& local_bn() { return norm(sync_bn()).in_one_process; }

const std::vector<ActivationEntry>& activations() {
  static const std::vector<ActivationEntry> a{act<nn::ReLU>("relu", "ReLU"), act<nn::Tanh>("tanh", "Tanh"),
                                              act<nn::GELU>("gelu", "GELU"), act<nn::Sigmoid>("sigmoid", "Sigmoid")};
  return a;
}

const ActivationEntry& activation(const std::string& name) { return find_entry(activations(), name, "activation"); }

std::string activation_names() { return names_of(activations()); }

}  // namespace normlab::experiments
