// The last-level cache size behind the elementwise kernels' choice of streaming stores.
#include "autograd/kernels/stream.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <string>

namespace normlab::autograd::kernels {

namespace {

std::atomic<int64_t> g_test_bytes{0};

// The largest cache of cpu0 that Linux lists (sysfs, as lscpu reads it): glibc's sysconf may
// report the whole package's L3 (320 MiB on a Zen 4 VM whose core shares 32 MiB).
int64_t system_llc_bytes() {
  static const int64_t bytes = [] {
    int64_t best = 0;
    for (int i = 0; i < 8; ++i) {
      std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size");
      std::string text;
      if (!(f >> text) || text.empty()) continue;
      int64_t v = 0;
      size_t k = 0;
      while (k < text.size() && text[k] >= '0' && text[k] <= '9') v = v * 10 + (text[k++] - '0');
      const char unit = k < text.size() ? text[k] : ' ';
      v *= unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : unit == 'G' ? int64_t(1) << 30 : 1;
      best = std::max(best, v);
    }
    return best > 0 ? best : int64_t(32) << 20;
  }();
  return bytes;
}

}  // namespace

int64_t last_level_cache_bytes() {
  const int64_t t = g_test_bytes.load(std::memory_order_relaxed);
  return t > 0 ? t : system_llc_bytes();
}

void set_last_level_cache_bytes_for_test(int64_t bytes) { g_test_bytes.store(bytes, std::memory_order_relaxed); }

bool stream_elementwise(int64_t elems, int inputs, size_t elem_bytes) {
  return (inputs + 1) * elems * static_cast<int64_t>(elem_bytes) > last_level_cache_bytes();
}

}  // namespace normlab::autograd::kernels
