// Splits and the DataLoader: coverage of every sample, per-epoch shuffles from the seed, drop_last, errors.
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <set>

#include "data/loader.h"
#include "data/split.h"
#include "tests/data/support.h"

using namespace normlab::data;
using normlab::test::check_mentions;
using normlab::test::error_of;
using normlab::test::numbered;

namespace {

// Sample ids (feature 0 of numbered() is the sample's index) of a data set, in row order.
std::vector<int64_t> ids(const Dataset& ds) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < ds.size(); ++i) out.push_back(static_cast<int64_t>(ds.x.at({i, 0})));
  return out;
}

// Batch sizes and the concatenated sample ids of one epoch, checking each batch against the data set.
std::pair<std::vector<int64_t>, std::vector<int64_t>> run_epoch(const DataLoader& loader, int64_t e) {
  std::vector<int64_t> sizes, seen;
  for (const Batch& b : loader.epoch(e)) {
    sizes.push_back(b.size());
    BOOST_REQUIRE(b.x.shape() == (normlab::autograd::Shape{b.size(), 2}));
    BOOST_REQUIRE(static_cast<int64_t>(b.labels.size()) == b.size());
    for (int64_t i = 0; i < b.size(); ++i) {
      const int64_t id = b.indices[i];
      BOOST_REQUIRE(b.x.at({i, 0}) == id);
      BOOST_REQUIRE(b.x.at({i, 1}) == 10 * id);
      BOOST_REQUIRE(b.labels[i] == loader.dataset().labels[id]);
      seen.push_back(id);
    }
  }
  return {sizes, seen};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(split)

BOOST_AUTO_TEST_CASE(counts_partition_every_sample_once) {
  Dataset ds = numbered(10);
  Splits s = split_counts(ds, 2, 3, 42);
  BOOST_TEST(s.train.size() == 5);
  BOOST_TEST(s.validation.size() == 2);
  BOOST_TEST(s.test.size() == 3);
  std::vector<int64_t> all = ids(s.train), v = ids(s.validation), t = ids(s.test);
  all.insert(all.end(), v.begin(), v.end());
  all.insert(all.end(), t.begin(), t.end());
  BOOST_TEST(all != ids(ds));  // shuffled
  std::sort(all.begin(), all.end());
  BOOST_TEST(all == ids(ds));
  BOOST_TEST(ids(split_counts(ds, 2, 3, 42).test) == t);  // same seed, same split
  BOOST_TEST(ids(split_counts(ds, 2, 3, 43).train) != ids(s.train));
  // Labels travel with their rows.
  for (int64_t i = 0; i < s.train.size(); ++i) BOOST_TEST(s.train.labels[i] == ids(s.train)[i] % 3);
}

BOOST_AUTO_TEST_CASE(unshuffled_parts_are_consecutive) {
  Splits s = split_counts(numbered(10), 2, 3, 0, /*shuffle=*/false);
  BOOST_TEST(ids(s.train) == (std::vector<int64_t>{0, 1, 2, 3, 4}));
  BOOST_TEST(ids(s.validation) == (std::vector<int64_t>{5, 6}));
  BOOST_TEST(ids(s.test) == (std::vector<int64_t>{7, 8, 9}));
  Splits none = split_counts(numbered(4), 0, 0, 0);
  BOOST_TEST(none.train.size() == 4);
  BOOST_TEST(none.validation.x.shape() == (normlab::autograd::Shape{0, 2}));
  BOOST_TEST(ids(first_n(numbered(10), 3)) == (std::vector<int64_t>{0, 1, 2}));
}

BOOST_AUTO_TEST_CASE(fractions_round_to_counts) {
  // 0.2 * 10 = 2 and 0.25 * 10 = 2.5, rounded half away from zero to 3.
  Splits s = split_fractions(numbered(10), 0.2, 0.25, 1);
  BOOST_TEST(s.validation.size() == 2);
  BOOST_TEST(s.test.size() == 3);
  BOOST_TEST(s.train.size() == 5);
}

BOOST_AUTO_TEST_CASE(impossible_splits_are_errors) {
  Dataset ds = numbered(10);
  check_mentions(error_of([&] { split_counts(ds, 4, 6, 0); }), {"10 samples", "validation 4 + test 6", "no training"});
  check_mentions(error_of([&] { split_counts(ds, -1, 0, 0); }), {"validation size", "got -1"});
  check_mentions(error_of([&] { split_fractions(ds, 1.0, 0, 0); }), {"validation fraction", "[0, 1)"});
  check_mentions(error_of([&] { split_fractions(ds, 0.5, 0.5, 0); }), {"no training"});
  check_mentions(error_of([&] { first_n(ds, 11); }), {"1 to 10", "got 11"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(loader)

BOOST_AUTO_TEST_CASE(every_sample_once_per_epoch_with_a_partial_last_batch) {
  DataLoader loader(numbered(10), 3, /*shuffle=*/true, 7, /*drop_last=*/false);
  BOOST_TEST(loader.num_batches() == 4);
  for (int64_t e = 0; e < 3; ++e) {
    auto [sizes, seen] = run_epoch(loader, e);
    BOOST_TEST(sizes == (std::vector<int64_t>{3, 3, 3, 1}));
    std::sort(seen.begin(), seen.end());
    BOOST_TEST(seen == ids(numbered(10)));
  }
}

BOOST_AUTO_TEST_CASE(drop_last_drops_the_partial_batch) {
  DataLoader loader(numbered(10), 3, true, 7, /*drop_last=*/true);
  BOOST_TEST(loader.num_batches() == 3);
  auto [sizes, seen] = run_epoch(loader, 0);
  BOOST_TEST(sizes == (std::vector<int64_t>{3, 3, 3}));
  BOOST_TEST(std::set<int64_t>(seen.begin(), seen.end()).size() == 9u);
  // The dropped sample is the last of the epoch's order.
  BOOST_TEST((std::find(seen.begin(), seen.end(), loader.order(0).back()) == seen.end()));
  DataLoader exact(numbered(9), 3, true, 7, true);
  BOOST_TEST(run_epoch(exact, 0).first == (std::vector<int64_t>{3, 3, 3}));
}

BOOST_AUTO_TEST_CASE(shuffles_differ_between_epochs_and_repeat_with_the_seed) {
  Dataset ds = numbered(50);
  DataLoader a(ds, 8, true, 123, false), b(ds, 8, true, 123, false), c(ds, 8, true, 124, false);
  const std::vector<int64_t> e0 = run_epoch(a, 0).second, e1 = run_epoch(a, 1).second;
  BOOST_TEST(e0 != e1);
  BOOST_TEST(e0 != ids(ds));
  BOOST_TEST(run_epoch(c, 0).second != e0);
  // b consumed nothing before epoch 5, a consumed epochs 0 and 1: the same order anyway.
  BOOST_TEST(run_epoch(b, 5).second == run_epoch(a, 5).second);
  BOOST_TEST(run_epoch(b, 1).second == e1);
  // Every sample comes first in some epoch about equally often (a uniform-looking permutation).
  DataLoader small(numbered(4), 4, true, 9, false);
  std::vector<int> first(4, 0);
  for (int64_t e = 0; e < 400; ++e) ++first[small.order(e)[0]];
  for (int f : first) BOOST_TEST((f > 60 && f < 140));
}

BOOST_AUTO_TEST_CASE(without_shuffle_the_order_is_the_data_set_order) {
  DataLoader loader(numbered(5), 2, false, 7, false);
  BOOST_TEST(run_epoch(loader, 3).second == ids(numbered(5)));
  BOOST_TEST(run_epoch(loader, 3).first == (std::vector<int64_t>{2, 2, 1}));
}

BOOST_AUTO_TEST_CASE(batch_larger_than_the_data_set) {
  check_mentions(error_of([] { DataLoader(numbered(5), 8, true, 0, true); }),
                 {"numbered", "batch size 8", "larger than the data set (5 samples)", "drop_last"});
  DataLoader one(numbered(5), 8, true, 0, false);  // without drop_last: one batch of everything
  BOOST_TEST(run_epoch(one, 0).first == (std::vector<int64_t>{5}));
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_errors) {
  check_mentions(error_of([] { DataLoader(numbered(5), 0, true, 0, false); }), {"batch size", "at least 1, got 0"});
  check_mentions(error_of([] { DataLoader(numbered(5).slice(0, 0), 2, true, 0, false); }), {"empty"});
  DataLoader loader(numbered(5), 2, true, 0, false);
  check_mentions(error_of([&] { loader.order(-1); }), {"epoch", "got -1"});
  check_mentions(error_of([&] { loader.epoch(0).batch(3); }), {"batch 3", "[0, 3)"});
}

BOOST_AUTO_TEST_CASE(regression_batches_carry_targets) {
  Dataset r;
  r.name = "reg";
  r.x = normlab::autograd::tensor({0, 1, 2, 3}, {4, 1});
  r.y = normlab::autograd::tensor({0, 10, 20, 30}, {4, 1});
  DataLoader loader(r, 3, true, 5, false);
  int64_t total = 0;
  for (const Batch& b : loader.epoch(0)) {
    BOOST_TEST(b.labels.empty());
    BOOST_REQUIRE(b.y.shape() == (normlab::autograd::Shape{b.size(), 1}));
    for (int64_t i = 0; i < b.size(); ++i) BOOST_TEST(b.y.at({i, 0}) == 10 * b.x.at({i, 0}));
    total += b.size();
  }
  BOOST_TEST(total == 4);
}

BOOST_AUTO_TEST_SUITE_END()
