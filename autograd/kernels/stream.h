// When a kernel writes its output with non-temporal (streaming) stores: outputs of at least
// kStreamBytes would not stay in the caches next to their inputs anyway, and streaming them skips
// reading each line from memory before it is overwritten (a memory-bound kernel moves 8 bytes per
// element instead of 12 for y = f(x), 12 instead of 16 for z = x + y) and keeps the inputs cached.
// Measured on Zen 4 at 1 thread, 4096x1024 floats: z = x + y 1.9 -> 1.05 ms, relu 0.88 -> 0.68 ms.
#pragma once
#include <cstddef>
#include <cstdint>

namespace normlab::autograd::kernels {

constexpr int64_t kStreamBytes = int64_t(4) << 20;

// Whether an output of `elems` elements of `elem_bytes` bytes each is streamed.
constexpr bool stream_output(int64_t elems, size_t elem_bytes) {
  return elems * static_cast<int64_t>(elem_bytes) >= kStreamBytes;
}

}  // namespace normlab::autograd::kernels
