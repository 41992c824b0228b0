// Fuzzes the IDX/gzip readers of Fashion-MNIST: any input (plain or gzip) must be read or refused
// with normlab::Error, without allocating more than the data it holds justifies (libFuzzer's
// -rss_limit_mb catches a reader that trusts a size from the file).
#include "data/fashion_mnist.h"
#include "fuzz/input_file.h"

using namespace normlab;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::input_file(data, size, ".idx");
  try {
    data::read_idx_images(path, 100);
  } catch (const Error&) {
  }
  try {
    data::read_idx_labels(path, 100);
  } catch (const Error&) {
  }
  return 0;
}
