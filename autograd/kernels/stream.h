// When a kernel writes its output with non-temporal (streaming) stores, which skip reading each
// output line from memory before it is overwritten (a memory-bound y = f(x) moves 8 bytes per
// element instead of 12, z = x + y 12 instead of 16) but leave nothing of the output in the caches.
#pragma once
#include <cstddef>
#include <cstdint>

namespace normlab::autograd::kernels {

// The norm kernels stream outputs of at least kStreamBytes: their inputs are read in passes that
// want the caches, and their outputs are rarely read right away.
constexpr int64_t kStreamBytes = int64_t(4) << 20;

// Whether an output of `elems` elements of `elem_bytes` bytes each is streamed by a norm kernel.
constexpr bool stream_output(int64_t elems, size_t elem_bytes) {
  return elems * static_cast<int64_t>(elem_bytes) >= kStreamBytes;
}

// The last-level cache's size in bytes (the largest cache Linux lists for cpu0; 32 MiB when it
// lists none).
int64_t last_level_cache_bytes();
// For tests: pretends the last-level cache has `bytes` bytes (0: the system's value again).
void set_last_level_cache_bytes_for_test(int64_t bytes);

// Whether an elementwise op reading `inputs` full-size arrays and writing one, `elems` elements
// of `elem_bytes` each, streams its output: only when they cannot all stay in the last-level
// cache. Then the next op would find nothing cached anyway, and streaming saves the reads of the
// output lines (Zen 4, 4096x1024 floats, 1 thread: z = x + y, 48 MiB, 1.6 -> 0.95 ms). When
// they fit, plain stores leave the output cached for its reader (relu, 32 MiB, on 2 threads:
// 375 us with plain stores, 625 us streamed).
bool stream_elementwise(int64_t elems, int inputs, size_t elem_bytes);

}  // namespace normlab::autograd::kernels
