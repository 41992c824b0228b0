// `--arch` in every training command: the flags that go with one kind of model only, and the
// defaults an arch brings (the lstm's width, the image shape of the data set).
#include "experiments/archs.h"
#include "experiments/commands/entry_flags.h"
#include "experiments/commands/training.h"
#include "experiments/entries.h"
#include "experiments/registry.h"

namespace normlab::experiments::commands {

// --arch and the flags that go with one kind of model only.
void TrainingCommand::check_architecture(const Given& given) {
  ModelSpec& m = o_.train.model;
  const ArchEntry& a = arch(m.arch);
  check_entry_flags(archs(), a, given, "--arch", "--arch " + m.arch + (given("--arch") ? "" : " (the default)"));
  if (!given("--hidden") && !a.default_hidden.empty()) m.hidden = a.default_hidden;
  if (given("--activation") && !a.activation)
    throw Error("--arch " + m.arch + " takes no --activation: its cell's nonlinearities are fixed (sigmoid and tanh)");
  if (!a.image) return;
  if (traits_.one_arch)
    throw Error("study runs its MLP and its CNN parts itself: --arch " + m.arch + " goes with train, compare and sweep");
  if (m.image.empty()) {
    const DatasetEntry& d = dataset(o_.data.name);
    if (d.image_shape.empty())
      throw Error("--arch " + m.arch + " needs the image shape of a sample: give --image-shape C,H,W (e.g. 1,28,28 for "
                  "784 grayscale pixels); the " + o_.data.name + " data set has no image shape of its own");
    m.image = d.image_shape;
  }
  if (!o_.eval_batch_given) o_.train.eval_batch = kCnnEvalBatch;
}

}  // namespace normlab::experiments::commands
