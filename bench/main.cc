// The benchmark executable: `bench_kernels [--threads=N] [--target=NAME] [Google Benchmark flags]`.
// The thread count (default: all cores) applies to every kernel and to the STREAM loops. --target
// pins the kernels' dispatch to one Highway target this CPU supports (AVX2 on an AVX-512 machine,
// say), to see what a machine without the wider vectors runs.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <stdexcept>
#include <string>
#include <vector>

#include <hwy/targets.h>

#include "autograd/kernels/target.h"
#include "autograd/parallel.h"
#include "base/error.h"
#include "bench/bench.h"

namespace {

// Removes --threads=N / --threads N from argv and applies it; a clear message on bad input.
bool take_threads_flag(int& argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i], value;
    if (arg.rfind("--threads=", 0) == 0) {
      value = arg.substr(10);
    } else if (arg == "--threads") {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_kernels: --threads needs a value (a thread count of at least 1)\n");
        return false;
      }
      value = argv[++i];
    } else {
      rest.push_back(argv[i]);
      continue;
    }
    int n = 0;
    try {
      size_t used = 0;
      n = std::stoi(value, &used);
      if (used != value.size()) throw std::invalid_argument(value);
    } catch (const std::logic_error&) {  // not a number, or out of int's range
      std::fprintf(stderr, "bench_kernels: --threads expects a whole number of at least 1, got '%s'\n", value.c_str());
      return false;
    }
    try {
      normlab::autograd::set_num_threads(n);
    } catch (const normlab::Error& e) {
      std::fprintf(stderr, "bench_kernels: --threads: %s\n", e.what());
      return false;
    }
  }
  argc = static_cast<int>(rest.size());
  for (int i = 0; i < argc; ++i) argv[i] = rest[static_cast<size_t>(i)];
  return true;
}

// The first value of a /proc/cpuinfo field ("model name", "cpu family", "model"), "?" without one.
std::string cpuinfo(const std::string& field) {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    if (key == field) return colon + 2 <= line.size() ? line.substr(colon + 2) : "";
  }
  return "?";
}

// Removes --target=NAME from argv and pins dispatch to that target; a clear message when this CPU
// or this build has no such target.
bool take_target_flag(int& argc, char** argv) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--target=", 0) != 0) {
      rest.push_back(argv[i]);
      continue;
    }
    const std::string want = arg.substr(9);
    std::string names;
    bool found = false;
    for (int64_t t : hwy::SupportedAndGeneratedTargets()) {
      names += std::string(names.empty() ? "" : ", ") + hwy::TargetName(t);
      if (want == hwy::TargetName(t)) {
        hwy::SetSupportedTargetsForTest(t);
        found = true;
      }
    }
    if (!found) {
      std::fprintf(stderr, "bench_kernels: --target: '%s' is not a target of this build on this CPU (one of: %s)\n",
                   want.c_str(), names.c_str());
      return false;
    }
  }
  argc = static_cast<int>(rest.size());
  for (int i = 0; i < argc; ++i) argv[i] = rest[static_cast<size_t>(i)];
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (!take_threads_flag(argc, argv) || !take_target_flag(argc, argv)) return 2;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::AddCustomContext("normlab_threads", std::to_string(normlab::autograd::num_threads()));
  benchmark::AddCustomContext("highway_target", normlab::autograd::kernels::active_target());
  // Where it ran: figures from machines of the same kind differ (compare ratios, not times).
  benchmark::AddCustomContext("cpu_model_name", cpuinfo("model name"));
  benchmark::AddCustomContext("cpu_family", cpuinfo("cpu family"));
  benchmark::AddCustomContext("cpu_model", cpuinfo("model"));
  benchmark::AddCustomContext("cores", std::to_string(std::thread::hardware_concurrency()));
  normlab::bench::register_gemm();
  normlab::bench::register_kernels();
  normlab::bench::register_norms();
  normlab::bench::register_stream();
  normlab::bench::register_peak();
  normlab::bench::register_pool();
  normlab::bench::register_grain();
  normlab::bench::register_train();
  normlab::bench::register_scaling();
  normlab::bench::register_conv();
  normlab::bench::register_seq();
  normlab::bench::register_second_order();
  const size_t ran = benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (ran == 0) {
    std::fprintf(stderr, "bench_kernels: no benchmark matches the filter (list them with --benchmark_list_tests)\n");
    return 1;
  }
  return 0;
}
