// safetensors files: save and load named tensors in Hugging Face's format, readable by PyTorch users.
//
// Layout: 8 bytes, little-endian u64 N; N bytes of UTF-8 JSON
//   {"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"key": "value", ...}}
// (padded with spaces to a multiple of 8 so the data stays 8-byte aligned); then the raw
// little-endian, row-major data, with offsets relative to the end of the header. The tensors' data
// must tile the data area exactly: sorted by offset, the first starts at 0, each starts where the
// previous ends, the last ends at the end of the file.
#pragma once
#include <map>
#include <string>

#include "autograd/tensor.h"

namespace normlab::serialize {

using autograd::NamedTensors;

// What a safetensors file holds: tensors in the order of their data in the file, and the
// free-form string metadata of "__metadata__".
struct SafetensorsFile {
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;
};

// Writes tensors (float32 as F32, float64 as F64) and metadata to path, atomically: the data goes
// to "<path>.tmp.<pid>", is fsync'ed and renamed over path, so path holds either the old file or
// the complete new one; on any failure the temporary file is removed and an existing file is left
// untouched. A tensor whose name ends in "num_batches_tracked" is written as I64, as PyTorch stores
// it (its values must be whole numbers). The header lists the tensors sorted by name; the data is
// ordered 8-byte types first (keeping every tensor aligned), otherwise in the given order.
// Throws normlab::Error naming the file on a duplicate, empty or reserved ("__metadata__") name,
// an undefined tensor, or an I/O failure.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Reads a safetensors file. F32 becomes float32 and F64 float64; the integer types I64 and I32
// (e.g. PyTorch's num_batches_tracked) become float64 tensors holding the same values (exact up
// to 2^53). Validates everything before returning: the file must exist and be readable, hold at
// least 8 bytes and a header no longer than the rest of the file, whose JSON is an object of
// entries with a supported dtype, a shape of non-negative integers and data_offsets [begin, end]
// with end - begin = numel * dtype size, tiling the data area exactly, without duplicate names;
// "__metadata__" must map strings to strings. Any violation throws a normlab::Error naming the
// file and the problem.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace normlab::serialize
