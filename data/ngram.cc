// Character n-gram baselines: counts of n-grams and of their (n-1)-character contexts as sorted
// keys (an n-gram c_1 .. c_n is the number sum_k c_k V^(n-k)), looked up by binary search.
#include "data/ngram.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.h"
#include "base/format.h"

namespace normlab::data {

namespace {

// The keys of the length-`len` windows of ids, sorted (len = 0: one empty key per position).
std::vector<uint64_t> sorted_keys(const std::vector<int64_t>& ids, int64_t vocab, int len) {
  const int64_t count = static_cast<int64_t>(ids.size()) - len + 1;
  std::vector<uint64_t> keys;
  if (count <= 0) return keys;
  keys.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    uint64_t key = 0;
    for (int k = 0; k < len; ++k) key = key * static_cast<uint64_t>(vocab) + static_cast<uint64_t>(ids[i + k]);
    keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

int64_t count_of(const std::vector<uint64_t>& sorted, uint64_t key) {
  const auto range = std::equal_range(sorted.begin(), sorted.end(), key);
  return static_cast<int64_t>(range.second - range.first);
}

void check_ids(const std::vector<int64_t>& ids, int64_t vocab, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw Error(std::string("ngram_bits_per_char: ") + what + " id " + std::to_string(ids[i]) + " at position " +
                  std::to_string(i) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
}

}  // namespace

double ngram_bits_per_char(const std::vector<int64_t>& train, const std::vector<int64_t>& eval, int64_t vocab,
                           int n, double alpha) {
  if (n < 1) throw Error("ngram_bits_per_char: n must be at least 1, got " + std::to_string(n));
  if (!(alpha > 0)) throw Error("ngram_bits_per_char: alpha must be above 0, got " + base::py_float(alpha));
  if (vocab < 1) throw Error("ngram_bits_per_char: the vocabulary is empty");
  if (std::pow(static_cast<double>(vocab), n) > std::ldexp(1.0, 62))
    throw Error("ngram_bits_per_char: " + std::to_string(vocab) + "^" + std::to_string(n) +
                " n-grams do not fit the 62-bit keys; use a smaller n");
  if (static_cast<int64_t>(eval.size()) < n)
    throw Error("ngram_bits_per_char: the evaluation text has " + std::to_string(eval.size()) +
                " characters, fewer than n = " + std::to_string(n));
  check_ids(train, vocab, "training");
  check_ids(eval, vocab, "evaluation");
  const std::vector<uint64_t> grams = sorted_keys(train, vocab, n);
  // Contexts: the first n - 1 characters of each counted n-gram (not of every train position).
  std::vector<uint64_t> contexts(grams.size());
  for (size_t i = 0; i < grams.size(); ++i) contexts[i] = grams[i] / static_cast<uint64_t>(vocab);
  // (grams sorted => contexts sorted: integer division by V is monotonic.)
  const double denom_extra = alpha * static_cast<double>(vocab);
  double bits = 0;
  const int64_t positions = static_cast<int64_t>(eval.size()) - n + 1;
  for (int64_t i = n - 1; i < static_cast<int64_t>(eval.size()); ++i) {
    uint64_t key = 0;
    for (int64_t k = i - n + 1; k <= i; ++k) key = key * static_cast<uint64_t>(vocab) + static_cast<uint64_t>(eval[k]);
    const double p = (static_cast<double>(count_of(grams, key)) + alpha) /
                     (static_cast<double>(count_of(contexts, key / static_cast<uint64_t>(vocab))) + denom_extra);
    bits -= std::log2(p);
  }
  return bits / static_cast<double>(positions);
}

}  // namespace normlab::data
