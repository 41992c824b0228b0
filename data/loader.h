// DataLoader: mini-batches of a data set, reshuffled each epoch from (seed, epoch), optionally dropping the last.
#pragma once
#include <cstdint>
#include <vector>

#include "data/dataset.h"

namespace normlab::data {

/// One mini-batch of B samples, copied out of the data set (the caller owns its tensors).
struct Batch {
  autograd::Tensor x;            ///< (B, D) float32 features
  std::vector<int64_t> labels;   ///< (B) class indices (classification), empty otherwise
  autograd::Tensor y;            ///< (B, 1) float32 targets (regression), undefined otherwise
  std::vector<int64_t> indices;  ///< (B) the samples' positions in the data set

  /// B, the number of samples.
  int64_t size() const { return static_cast<int64_t>(indices.size()); }
};

class DataLoader;

/// The batches of one epoch, in the order fixed when the epoch was made: for (const Batch& b : epoch).
class Epoch {
 public:
  /// Input iterator over batch numbers; dereferencing copies the batch out.
  class iterator {
   public:
    iterator(const Epoch* e, int64_t b) : epoch_(e), b_(b) {}  ///< Batch b of epoch e.
    Batch operator*() const;  ///< The batch, copied out.
    iterator& operator++() { ++b_; return *this; }  ///< The next batch.
    bool operator!=(const iterator& o) const { return b_ != o.b_; }  ///< True at a different batch.
    bool operator==(const iterator& o) const { return b_ == o.b_; }  ///< True at the same batch.

   private:
    const Epoch* epoch_;
    int64_t b_;
  };

  Epoch(const DataLoader& loader, std::vector<int64_t> order) : loader_(&loader), order_(std::move(order)) {}  ///< The batches of loader in this sample order.
  /// Number of batches (the loader's num_batches()).
  int64_t size() const;
  /// Batch b in [0, size()): samples order[b * B, min((b + 1) * B, N)).
  Batch batch(int64_t b) const;
  /// The epoch's sample order (a permutation of [0, N)).
  const std::vector<int64_t>& order() const { return order_; }
  iterator begin() const { return iterator(this, 0); }  ///< The first batch.
  iterator end() const { return iterator(this, size()); }  ///< Past the last batch.

 private:
  const DataLoader* loader_;  // must outlive the epoch
  std::vector<int64_t> order_;
};

/// Batches a data set. With shuffle, epoch e visits the samples in a permutation drawn from
/// Generator(mix(seed, e)): reproducible, and independent of what was consumed before. Without
/// shuffle the order is 0..N-1. The last batch has N % B samples unless drop_last drops it.
class DataLoader {
 public:
  /// Throws for batch_size < 1, an empty or invalid data set, and for batch_size > N with
  /// drop_last (no batch at all). The data set's tensors are shared, not copied.
  DataLoader(const Dataset& ds, int64_t batch_size, bool shuffle, uint64_t seed, bool drop_last);

  /// Batches per epoch: N / B with drop_last, ceil(N / B) otherwise.
  int64_t num_batches() const;
  int64_t batch_size() const { return batch_size_; }  ///< B, the samples per batch.
  bool drop_last() const { return drop_last_; }  ///< Whether a last, smaller batch is dropped.
  const Dataset& dataset() const { return ds_; }  ///< The data set batched.
  /// The sample order of epoch `epoch` (>= 0).
  std::vector<int64_t> order(int64_t epoch) const;
  /// The batches of epoch `epoch` (>= 0).
  Epoch epoch(int64_t epoch) const { return Epoch(*this, order(epoch)); }
  /// The batch of these sample indices (a gather of rows into a new (B, D) tensor).
  Batch gather(const int64_t* indices, int64_t count) const;

 private:
  Dataset ds_;
  int64_t batch_size_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
};

}  // namespace normlab::data
