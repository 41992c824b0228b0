// Training checkpoints: two tensor files named by their step and state.json, written last.
#include "experiments/run/checkpointing.h"

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>

#include "base/error.h"
#include "experiments/records/records.h"
#include "experiments/records/result_set.h"
#include "experiments/support/output.h"
#include "nn/checkpoint.h"
#include "optim/checkpoint.h"

namespace normlab::experiments {

namespace fs = std::filesystem;

namespace {

constexpr int kFormat = 1;  // state.json's "normlab_checkpoint"

// The steps done at the checkpoint in dir, or -1 when dir holds none that can be read.
int64_t steps_of(const fs::path& dir) {
  try {
    return read_checkpoint(dir).position.step;
  } catch (const Error&) {
    return -1;
  }
}

}  // namespace

void write_checkpoint(const fs::path& dir, const RunResult& r, const optim::Optimizer& opt, int64_t schedule_step,
                      const RunPosition& p) {
  fs::create_directories(dir);
  const std::string tag = "step-" + std::to_string(p.step);
  const std::string model = "model." + tag + ".safetensors", optimizer = "optimizer." + tag + ".safetensors";
  nn::save_module((dir / model).string(), *r.model);
  optim::save_optimizer((dir / optimizer).string(), opt, schedule_step);
  const nlohmann::json state = {
      {"normlab_checkpoint", kFormat},
      {"position", {{"epoch", p.epoch}, {"batch", p.batch}, {"step", p.step}, {"loss_sum", p.loss_sum},
                    {"correct", p.score.correct}, {"seen", p.score.seen}, {"regression", p.score.regression},
                    {"sse", p.score.sse}, {"sum_y", p.score.sum_y}, {"sum_y2", p.score.sum_y2}}},
      {"model", model}, {"optimizer", optimizer}, {"records", records_json(r)}};
  write_file_atomic(dir / "state.json", state.dump() + "\n");
  // The files of earlier checkpoints (state.json no longer names them).
  for (const auto& f : fs::directory_iterator(dir)) {
    const std::string name = f.path().filename().string();
    if (name != model && name != optimizer && name.ends_with(".safetensors") &&
        (name.starts_with("model.step-") || name.starts_with("optimizer.step-"))) {
      std::error_code ec;
      fs::remove(f.path(), ec);
    }
  }
}

Checkpoint read_checkpoint(const fs::path& dir) {
  const fs::path file = dir / "state.json";
  std::ifstream f(file, std::ios::binary);
  if (!f) throw Error(file.string() + ": no checkpoint here (a train run writes one with --checkpoint-every N, "
                      "or when Ctrl-C stops it)");
  std::stringstream text;
  text << f.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  const auto bad = [&](const std::string& why) { return Error(file.string() + ": not a normlab checkpoint (" + why + ")"); };
  if (j.is_discarded() || !j.is_object()) throw bad("not JSON");
  if (j.value("normlab_checkpoint", 0) != kFormat) throw bad("no \"normlab_checkpoint\": " + std::to_string(kFormat));
  Checkpoint ck;
  ck.dir = dir;
  try {
    const auto& p = j.at("position");
    ck.position.epoch = p.at("epoch"), ck.position.batch = p.at("batch"), ck.position.step = p.at("step");
    ck.position.loss_sum = p.at("loss_sum");
    ScoreMeter& s = ck.position.score;
    s.correct = p.at("correct"), s.seen = p.at("seen"), s.regression = p.at("regression");
    s.sse = p.at("sse"), s.sum_y = p.at("sum_y"), s.sum_y2 = p.at("sum_y2");
    ck.model = dir / j.at("model").get<std::string>();
    ck.optimizer = dir / j.at("optimizer").get<std::string>();
    ck.records = j.at("records");
  } catch (const nlohmann::json::exception& e) {
    throw bad(e.what());
  }
  const RunPosition& p = ck.position;
  if (p.epoch < 1 || p.batch < 0 || p.step < 0 || p.score.seen < 0 || p.score.correct < 0 || !ck.records.is_object())
    throw bad("its position is out of range");
  for (const fs::path& t : {ck.model, ck.optimizer})
    if (t.filename() != t.lexically_relative(dir) || !fs::exists(t)) throw bad(t.filename().string() + " is missing");
  return ck;
}

std::optional<fs::path> find_checkpoint(const fs::path& where) {
  if (fs::exists(where / "state.json")) return where;
  std::optional<fs::path> best;
  int64_t best_steps = -2;  // a checkpoint that cannot be read is taken when it is the only one (to say why)
  const auto consider = [&](const fs::path& dir) {
    if (const int64_t s = steps_of(dir); s > best_steps) best = dir, best_steps = s;
  };
  if (fs::exists(where / "checkpoint" / "state.json")) consider(where / "checkpoint");
  // A killed command's partial folder: ".<name>.normlab-partial-<pid>" beside the output folder.
  for (const fs::path& k : killed_partials(output_folder(where)))
    if (fs::exists(k / "checkpoint" / "state.json")) consider(k / "checkpoint");
  return best;
}

}  // namespace normlab::experiments
