// DataLoader: per-epoch permutations from (seed, epoch), batches gathered into new tensors.
#include "data/loader.h"

#include <cstring>

#include "data/split.h"

namespace normlab::data {

namespace {

// SplitMix64's finalizer: a bijective 64-bit mix, so nearby (seed, epoch) pairs give unrelated streams.
uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

DataLoader::DataLoader(const Dataset& ds, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last)
    : ds_(ds), batch_size_(batch_size), shuffle_(shuffle), seed_(seed), drop_last_(drop_last) {
  ds_.validate();
  const int64_t n = ds_.size();
  const std::string what = "data loader for \"" + ds_.name + "\": ";
  check(batch_size >= 1, what + "the batch size must be at least 1, got " + std::to_string(batch_size));
  check(n >= 1, what + "the data set is empty");
  check(!drop_last || batch_size <= n,
        what + "batch size " + std::to_string(batch_size) + " is larger than the data set (" +
            std::to_string(n) + " samples): with drop_last no batch would be left");
}

int64_t DataLoader::num_batches() const {
  const int64_t n = ds_.size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

std::vector<int64_t> DataLoader::order(int64_t epoch) const {
  check(epoch >= 0, "data loader for \"" + ds_.name + "\": the epoch must be >= 0, got " +
                        std::to_string(epoch));
  const int64_t n = ds_.size();
  if (shuffle_) return permutation(n, mix64(mix64(seed_) + static_cast<uint64_t>(epoch)));
  std::vector<int64_t> o(n);
  for (int64_t i = 0; i < n; ++i) o[i] = i;
  return o;
}

Batch DataLoader::gather(const int64_t* indices, int64_t count) const {
  const int64_t n = ds_.size(), d = ds_.features();
  Batch b;
  b.indices.assign(indices, indices + count);
  b.x = autograd::empty({count, d});
  if (ds_.is_classification()) b.labels.resize(count);
  if (ds_.y.defined()) b.y = autograd::empty({count, 1});
  const float* src = ds_.x.data<float>();
  float* dst = b.x.data<float>();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = indices[i];
    if (j < 0 || j >= n)  // the message is built only on failure: this loop runs once per sample
      check(false, "data loader for \"" + ds_.name + "\": sample index " + std::to_string(j) + " is outside [0, " +
                       std::to_string(n) + ")");
    std::memcpy(dst + i * d, src + j * d, d * sizeof(float));
    if (ds_.is_classification()) b.labels[i] = ds_.labels[j];
    if (ds_.y.defined()) b.y.data<float>()[i] = ds_.y.data<float>()[j];
  }
  return b;
}

int64_t Epoch::size() const { return loader_->num_batches(); }

Batch Epoch::batch(int64_t b) const {
  if (b < 0 || b >= size())  // the message is built only on failure (once per training step)
    check(false, "epoch batch " + std::to_string(b) + " is outside [0, " + std::to_string(size()) + ")");
  const int64_t bs = loader_->batch_size(), n = static_cast<int64_t>(order_.size());
  const int64_t begin = b * bs, end = std::min(begin + bs, n);
  return loader_->gather(order_.data() + begin, end - begin);
}

Batch Epoch::iterator::operator*() const { return epoch_->batch(b_); }

}  // namespace normlab::data
