// The data-parallel benchmark (`[mpirun -np W] bench_dist [--threads N] [--reps R]`): the
// gradient allreduce of the MLP and the CNN, and one data-parallel training step of each at the
// global batch 128 (each of the W ranks on 128 / W samples) with no norm, BatchNorm (each rank's
// own statistics) and SyncBatchNorm. Every rank runs the same reps in step (collectives meet), so
// this is not a Google Benchmark (its adaptive iteration counts would differ per rank). Rank 0
// prints one JSON line per workload: name, ranks, threads, median/min/max microseconds.
// bench/dist/pytorch_dist.py times the same workloads in PyTorch (gloo) under the same names.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "autograd/parallel.h"
#include "dist/dist.h"
#include "experiments/models/model.h"
#include "experiments/run/ddp.h"
#include "optim/sgd.h"

namespace {

using namespace normlab;
using autograd::Tensor;

// Times fn `reps` times after `warmup` untimed calls, each rep starting together on every rank.
void time_it(const std::string& name, int warmup, int reps, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> us;
  for (int i = 0; i < reps; ++i) {
    dist::barrier();
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  // Rank 0's times, the slowest rank's per rep would need one more collective: the step's
  // allreduce already makes every rank wait for the slowest.
  std::sort(us.begin(), us.end());
  if (dist::rank() == 0)
    std::printf("{\"name\": \"%s\", \"ranks\": %d, \"threads\": %d, \"median_us\": %.3f, \"min_us\": %.3f, "
                "\"max_us\": %.3f, \"reps\": %d}\n",
                name.c_str(), dist::world_size(), autograd::num_threads(), us[us.size() / 2], us.front(), us.back(),
                reps);
  std::fflush(stdout);
}

experiments::ModelSpec mlp(const std::string& norm) {
  experiments::ModelSpec s;
  s.inputs = 784, s.hidden = {256, 256}, s.outputs = 10, s.norm = norm;
  return s;
}

experiments::ModelSpec cnn(const std::string& norm) {
  experiments::ModelSpec s;
  s.arch = "cnn", s.image = {1, 28, 28}, s.inputs = 784, s.outputs = 10, s.norm = norm;
  return s;
}

// One data-parallel SGD step as the trainer takes it: rank 0's buffers, forward on this rank's
// slice, the global loss, backward, gradients averaged over the ranks, momentum update.
void ddp_step(const std::string& name, const experiments::ModelSpec& spec, int64_t global_batch, int reps) {
  autograd::Generator gen(0);
  auto model = experiments::build_model(spec, gen).net;
  experiments::broadcast_state(*model);
  model->train();
  optim::SGD opt(model->parameters(), {.lr = 0.01, .momentum = 0.9});
  data::Batch global;
  global.x = autograd::randn({global_batch, spec.inputs}, gen);
  for (int64_t i = 0; i < global_batch; ++i) {
    global.labels.push_back(static_cast<int64_t>(gen.next_u64() % 10));
    global.indices.push_back(i);
  }
  const data::Batch b = experiments::shard(global);
  const Tensor x = b.x;  // (n, 784): the CNN unflattens it to (n, 1, 28, 28) itself
  const bool ddp = dist::world_size() > 1;
  time_it(name, 3, reps, [&] {
    if (ddp) experiments::broadcast_buffers(*model);
    Tensor loss = autograd::cross_entropy((*model)(x), b.labels);
    double lv = loss.item();
    if (ddp) dist::allreduce_sum(&lv, 1);
    opt.zero_grad();
    loss.backward();
    if (ddp) experiments::average_gradients(opt.parameters());
    opt.step();
  });
}

int parse_int(const std::string& flag, const char* value) {
  try {
    size_t used = 0;
    const int v = std::stoi(value, &used);
    if (used == std::string(value).size() && v >= 1) return v;
  } catch (const std::logic_error&) {
  }
  throw Error(flag + " expects a whole number of at least 1, got '" + value + "'");
}

int run(int argc, char** argv) {
  dist::init();
  int reps = 30;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--threads" || a == "--reps") && i + 1 < argc) {
      const int v = parse_int(a, argv[++i]);
      if (a == "--threads") autograd::set_num_threads(v);
      else reps = v;
    } else {
      throw Error("unknown argument '" + a + "' (expected --threads N, --reps R)");
    }
  }
  autograd::Generator gen(0);
  for (const auto& [what, spec] : {std::pair{"mlp", mlp("batch")}, std::pair{"cnn", cnn("batch")}}) {
    const int64_t n = experiments::build_model(spec, gen).net->num_parameters();
    std::vector<float> g(static_cast<size_t>(n), 1.0f);
    if (dist::world_size() > 1)  // one process has nothing to reduce
      time_it(std::string("allreduce ") + what + " grads " + std::to_string(n), 3, reps * 3,
            [&] { dist::allreduce_sum(g.data(), n); });
  }
  for (const std::string norm : {"none", "batch", "syncbatch"})
    ddp_step("ddp step mlp 784-256-256-10 b128 " + norm, mlp(norm), 128, reps * 3);
  for (const std::string norm : {"none", "batch", "syncbatch"})
    ddp_step("ddp step cnn b128 " + norm, cnn(norm), 128, reps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_dist: %s\n", e.what());
    return 2;
  }
}
