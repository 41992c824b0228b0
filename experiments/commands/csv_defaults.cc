// The defaults of train and compare on a CSV file, fitted to its size where the flags are not
// given: scikit-learn's MLP choices (Adam at lr 0.001, early stopping with patience 10 on a 10%
// validation split, at most 200 epochs) and a batch size from the number of training rows.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "experiments/commands/training.h"
#include "experiments/report/claims.h"
#include "experiments/report/report.h"

namespace normlab::experiments::commands {

namespace {

constexpr int64_t kMaxEpochs = 200;     // scikit-learn's max_iter
constexpr int64_t kStepBudget = 20000;  // epochs stop growing past about this many steps
constexpr int64_t kPatience = 10;       // scikit-learn's n_iter_no_change

// The power of two nearest to n / 8, between 8 and 128 (and not above n): 16 for 120 rows, 64 for 455.
int64_t batch_for(int64_t n) {
  const double eighth = std::max(1.0, static_cast<double>(n) / 8);
  const int64_t b = int64_t(1) << std::lround(std::log2(eighth));
  return std::max<int64_t>(1, std::min({std::max<int64_t>(b, 8), int64_t(128), n}));
}

}  // namespace

void TrainingCommand::apply_csv_defaults(const Given& given) {
  o_.fit_batch = !given("--batch-size");
  o_.fit_epochs = !given("--epochs");
  o_.fit_optimizer = !given("--optimizer");
  o_.fit_validation = !given("--val-fraction");
  if (o_.fit_optimizer) o_.train.optimizer = "adam";
  if (o_.fit_validation) o_.data.validation_fraction = 0.1, o_.data.validation_defaulted = true;
  o_.fit_early_stopping = !given("--early-stopping") && o_.data.validation_fraction > 0;
  if (o_.fit_early_stopping) o_.train.early_stopping = kPatience;
}

// Once the training set is read: the batch size and the epochs it gets (those not given), early
// stopping off when the validation split came out empty, and the sentence that says what was chosen.
void TrainingCommand::fit_to_training_set() {
  const TrainingOptions& o = o_;
  if (!o.fit_batch && !o.fit_epochs && !o.fit_early_stopping && !o.fit_optimizer && !o.fit_validation) return;
  const int64_t n = data_.train.size();
  TrainConfig& t = o_.train;
  if (o.fit_batch) t.batch_size = batch_for(n);
  const int64_t steps = std::max<int64_t>(1, (n + t.batch_size - 1) / t.batch_size);
  if (o.fit_epochs) t.epochs = std::clamp<int64_t>((kStepBudget + steps - 1) / steps, 5, kMaxEpochs);
  if (o.fit_early_stopping && data_.validation.size() == 0) t.early_stopping = 0;
  std::vector<std::string> chosen;
  if (o.fit_batch) chosen.push_back("batch " + std::to_string(t.batch_size));
  if (o.fit_epochs) chosen.push_back((t.early_stopping > 0 ? "at most " : "") + report::count_of(t.epochs, "epoch"));
  if (o.fit_early_stopping)
    chosen.push_back(t.early_stopping > 0 ? "early stopping after " + report::count_of(t.early_stopping, "epoch") +
                                                " without a lower validation loss (keeping the best epoch's weights)"
                                          : std::string("no early stopping (the validation split is empty)"));
  if (o.fit_validation)
    chosen.push_back("a validation split of 10% (" + std::to_string(data_.validation.size()) + " rows)");
  if (o.fit_optimizer) chosen.push_back(optimizer_text(t));
  o_.defaults_note = "Defaults for a CSV file of " + std::to_string(n) + " training rows (the flags not given): " +
                     report::join_names(chosen) +
                     ". `--batch-size`, `--epochs`, `--early-stopping`, `--val-fraction` and `--optimizer` set them.";
  if (!o.quiet) std::printf("normlab: %s\n", o_.defaults_note.c_str());
}

}  // namespace normlab::experiments::commands
