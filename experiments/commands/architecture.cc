// `--arch` in every training command: the flags that go with one kind of model only, and the
// report's note on the defaults an arch brought (their values: presets.h).
#include "experiments/commands/entry_flags.h"
#include "experiments/commands/presets.h"
#include "experiments/commands/training.h"
#include "experiments/models/archs.h"
#include "experiments/registry/entries.h"
#include "experiments/registry/layers.h"

namespace normlab::experiments::commands {

// --arch and the flags that go with one kind of model only.
void TrainingCommand::check_architecture(const Given& given) {
  ModelSpec& m = o_.train.model;
  const ArchEntry& a = arch(m.arch);
  check_entry_flags(archs(), a, given, "--arch", "--arch " + m.arch + (given("--arch") ? "" : " (the default)"));
  if (given("--activation") && !a.activation)
    throw Error("--arch " + m.arch + " takes no --activation: its cell's nonlinearities are fixed (sigmoid and tanh)");
  if (!a.image) return;
  if (traits_.one_arch)
    throw Error("study runs its MLP and its CNN parts itself: --arch " + m.arch + " goes with train, compare and sweep");
  if (m.image.empty())  // the data set has none (preset_model)
    throw Error("--arch " + m.arch + " needs the image shape of a sample: give --image-shape C,H,W (e.g. 1,28,28 for "
                "784 grayscale pixels); the " + o_.data.name + " data set has no image shape of its own");
}

// The arch's optimizer and clipping where not given (compare and sweep; the lstm: Adam, clipped to
// 1), said in the report.
void TrainingCommand::apply_arch_defaults(const Given& given) {
  if (!traits_.clip_grad_norm) return;
  const ArchEntry& a = arch(o_.train.model.arch);
  std::vector<std::string> chosen;
  preset_arch(o_, given, o_.csv_fit, chosen);
  own_arch_defaults(given, a, chosen);
  if (chosen.empty()) return;
  std::string note = "--arch " + a.name + "'s defaults, not given on the command line: " + chosen[0];
  for (size_t i = 1; i < chosen.size(); ++i) note += (i + 1 < chosen.size() ? ", " : " and ") + chosen[i];
  o_.defaults_note += (o_.defaults_note.empty() ? "" : " ") + note + ".";
}

}  // namespace normlab::experiments::commands
