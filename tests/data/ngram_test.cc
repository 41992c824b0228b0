// Character n-gram baselines: a hand-computed case, an independent count-by-scanning model on
// random text, the fortunes corpus's values, and the refused inputs.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

#include "base/error.h"
#include "data/ngram.h"
#include "data/text.h"

namespace d = normlab::data;

namespace {

// The same model by scanning train for each evaluated position: O(|train| |eval|), small inputs.
double scanned(const std::vector<int64_t>& train, const std::vector<int64_t>& eval, int64_t V, int n, double a) {
  double bits = 0;
  int64_t m = 0;
  for (size_t i = n - 1; i < eval.size(); ++i, ++m) {
    double gram = 0, context = 0;
    for (size_t j = n - 1; j < train.size(); ++j) {
      bool same_context = true;
      for (int k = 1; k < n; ++k) same_context = same_context && train[j - k] == eval[i - k];
      if (!same_context) continue;
      context += 1;
      if (train[j] == eval[i]) gram += 1;
    }
    bits -= std::log2((gram + a) / (context + a * V));
  }
  return bits / m;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(ngram)

// train "abab" (a = 0, b = 1), V = 2, alpha = 1. Bigram: count(ab) = 2, count(ba) = 1, count(a.) = 2,
// count(b.) = 1. eval "aba": P(b|a) = (2 + 1) / (2 + 2) = 3/4, P(a|b) = (1 + 1) / (1 + 2) = 2/3.
// Unigram on eval "ab": P(a) = P(b) = (2 + 1) / (4 + 2) = 1/2, 1 bit each.
BOOST_AUTO_TEST_CASE(a_hand_computed_case) {
  const std::vector<int64_t> train{0, 1, 0, 1};
  const double want = -(std::log2(3.0 / 4) + std::log2(2.0 / 3)) / 2;
  BOOST_TEST(d::ngram_bits_per_char(train, {0, 1, 0}, 2, 2, 1.0) == want, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(d::ngram_bits_per_char(train, {0, 1}, 2, 1, 1.0) == 1.0, boost::test_tools::tolerance(1e-12));
}

BOOST_AUTO_TEST_CASE(matches_counting_by_scanning) {
  std::mt19937 rng(7);
  for (int64_t V : {3, 5}) {
    std::discrete_distribution<int64_t> pick({5, 3, 1, 1, 2});  // uneven, so counts differ
    std::vector<int64_t> train(400), eval(120);
    for (auto& c : train) c = pick(rng) % V;
    for (auto& c : eval) c = pick(rng) % V;
    for (int n = 1; n <= 4; ++n)
      for (double a : {0.1, 1.0}) {
        BOOST_TEST_CONTEXT("V " << V << " n " << n << " alpha " << a) {
          BOOST_TEST(d::ngram_bits_per_char(train, eval, V, n, a) == scanned(train, eval, V, n, a),
                     boost::test_tools::tolerance(1e-12));
        }
      }
  }
}

// Debian's fortunes, split 90/10 as the text data set does, add-0.1 smoothing: a longer context
// always helps on this much text (about 4.9, 3.8, 3.1 and 2.7 bits per character for n = 1..4).
BOOST_AUTO_TEST_CASE(fortunes_baselines) {
  const d::TextCorpus corpus = d::load_default_corpus(64);
  double last = 1e9;
  const double want[] = {4.87, 3.77, 3.09, 2.73};
  for (int n = 1; n <= 4; ++n) {
    const double bits = d::ngram_bits_per_char(corpus.train, corpus.validation, corpus.vocabulary.size(), n, 0.1);
    BOOST_TEST_MESSAGE("fortunes " << n << "-gram: " << bits << " bits per character");
    BOOST_TEST(bits < last);
    BOOST_TEST(bits == want[n - 1], boost::test_tools::tolerance(0.05));
    last = bits;
  }
}

BOOST_AUTO_TEST_CASE(refuses_bad_input) {
  const std::vector<int64_t> ids{0, 1, 0};
  BOOST_CHECK_THROW(d::ngram_bits_per_char(ids, ids, 2, 0, 0.1), normlab::Error);
  BOOST_CHECK_THROW(d::ngram_bits_per_char(ids, ids, 2, 2, 0), normlab::Error);
  BOOST_CHECK_THROW(d::ngram_bits_per_char(ids, {0, 2}, 2, 1, 0.1), normlab::Error);   // id outside V
  BOOST_CHECK_THROW(d::ngram_bits_per_char(ids, {0}, 2, 2, 0.1), normlab::Error);      // eval shorter than n
  BOOST_CHECK_THROW(d::ngram_bits_per_char(ids, ids, 1000, 7, 0.1), normlab::Error);   // keys overflow
}

BOOST_AUTO_TEST_SUITE_END()
