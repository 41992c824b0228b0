// The finished runs of an mpirun job's ranks gathered on every rank: each rank sends its runs as
// records (JSON whose numbers round-trip exactly) and every rank reads back the others', so that
// every rank holds the results one process training them all would have. Used by the
// classification studies (runs.h) and the GPT studies (studies/lm_runs.h).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "dist/dist.h"

namespace normlab::experiments {

// finished[i] is run i's result, or nothing where this rank did not train it (or Ctrl-C stopped
// it). When `send`, this rank sends its finished, uninterrupted runs as records(i, result); every
// rank fills each empty place with read_back(i, records) of another rank's (a collective: every
// rank calls it). A run no rank finished stays empty; records that cannot be read back throw.
template <class Result, class Records, class ReadBack>
void gather_runs_of_ranks(std::vector<std::optional<Result>>& finished, bool send, Records records, ReadBack read_back) {
  nlohmann::json mine = nlohmann::json::array();
  for (size_t i = 0; send && i < finished.size(); ++i)
    if (finished[i] && !finished[i]->interrupted) mine.push_back({{"index", i}, {"records", records(i, *finished[i])}});
  for (const std::string& part : dist::allgather(mine.dump()))
    for (const auto& run : nlohmann::json::parse(part)) {
      const size_t i = run.at("index").get<size_t>();
      if (finished[i]) continue;  // this rank's own
      std::optional<Result> r = read_back(i, run.at("records"));
      if (!r) throw Error("the results of run " + std::to_string(i) + " from another rank could not be read back");
      finished[i] = std::move(*r);
    }
}

}  // namespace normlab::experiments
