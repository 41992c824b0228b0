// Character n-gram language models with add-alpha smoothing: the reference baselines of a text
// split, what a model that sees only the last n - 1 characters scores when it counts them in the
// training split. A neural language model that does not beat the 3- or 4-gram has learned little.
#pragma once
#include <cstdint>
#include <vector>

namespace normlab::data {

/// Bits per character of an add-alpha n-gram model: a baseline for the character language models.
/// Bits per character on `eval` of the n-gram model counted on `train` (ids in [0, V), V = vocab):
///   P(c | h) = (count(h c) + alpha) / (count(h) + alpha V),
/// h the n - 1 characters before c, count(h c) the times train holds h c and count(h) the times it
/// holds h followed by a character (so P sums to 1 over c); the score is
/// -(1/M) sum log2 P(eval[i] | eval[i-n+1 .. i-1]) over the M = |eval| - n + 1 positions i >= n - 1
/// of eval (contexts from eval itself, as a model reading the split from its start would). n = 1
/// is the unigram model (h empty: count(h) = |train|). Throws for n < 1, alpha <= 0, vocab < 1,
/// an id outside [0, V), V^n above 2^62 (the n-gram keys would not fit), or eval shorter than n.
double ngram_bits_per_char(const std::vector<int64_t>& train, const std::vector<int64_t>& eval, int64_t vocab,
                           int n, double alpha);

}  // namespace normlab::data
