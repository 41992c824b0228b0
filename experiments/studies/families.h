// The study's table of the four model families side by side (MLP, CNN, LSTM, character GPT): from
// each family's batch-size sweep, the norms tied for the best at its largest batch, what each norm
// loses at its smallest batch against its own best batch size, whether that loss is beyond the
// seeds' spread, and a reading computed from these numbers.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "experiments/records/context.h"
#include "experiments/report/claims.h"

namespace normlab::experiments::studies {

// One family's batch-size sweep as the table reads it.
struct FamilySweep {
  std::string family;          // "MLP", "CNN", "LSTM", "GPT"
  std::string metric;          // "test accuracy, %", "validation bits/char"
  const Report* sweep = nullptr;  // its sweep_accuracy: norm -> (batch, the seeds' final values)
  bool lower_is_better = false;   // bits per character: lower is better
  report::Units units;
  std::function<std::string(const std::string&)> display;  // a norm's name in the text
  const Report* why = nullptr;  // a comparison with the landscape probes (its why values), if any
};

// The batch sizes a sweep ran (the keys of its sweep_accuracy), smallest first, each once.
std::vector<double> batches_of(const Report& r);

// "## The four families side by side": the two tables and the reading. Families whose sweep has
// no batch size are left out.
std::string families_section(const std::vector<FamilySweep>& families);

}  // namespace normlab::experiments::studies
