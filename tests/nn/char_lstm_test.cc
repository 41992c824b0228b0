// nn::CharLSTM: PyTorch's names and printed tree, float64 gradcheck, a sequence fed in pieces with
// the carried state gives the logits of feeding it whole, and the errors. (PyTorch parity of the
// training steps: tests/optim/gpt_steps_test.cc.)
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/char_lstm.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::test::expect_elements_close;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using In = std::vector<Tensor>;

namespace {

CharLSTMConfig config(int64_t layers = 2) {
  CharLSTMConfig c;
  c.vocab_size = 7;
  c.embed_dim = 4;
  c.hidden_size = 5;
  c.num_layers = layers;
  return c;
}

// Columns [from, to) of ids (B, T).
std::vector<int64_t> columns(const std::vector<int64_t>& ids, int64_t B, int64_t T, int64_t from, int64_t to) {
  std::vector<int64_t> r;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = from; t < to; ++t) r.push_back(ids[static_cast<size_t>(b * T + t)]);
  return r;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(char_lstm)

BOOST_AUTO_TEST_CASE(names_and_tree_are_pytorchs) {
  Generator gen(1);
  const CharLSTM m(config(), gen);
  std::vector<std::string> names;
  for (const auto& e : m.state_dict()) names.push_back(e.first);
  const std::vector<std::string> want = {"embedding.weight", "lstm.weight_ih_l0", "lstm.weight_hh_l0",
                                         "lstm.bias_ih_l0",  "lstm.bias_hh_l0",   "lstm.weight_ih_l1",
                                         "lstm.weight_hh_l1", "lstm.bias_ih_l1",  "lstm.bias_hh_l1",
                                         "head.weight",      "head.bias"};
  BOOST_TEST(names == want, boost::test_tools::per_element());
  BOOST_TEST(m.str() ==
             "CharLSTM(\n  (embedding): Embedding(7, 4)\n  (lstm): LSTM(4, 5, num_layers=2, batch_first=True)\n"
             "  (head): Linear(in_features=5, out_features=7, bias=True)\n)");
}

BOOST_AUTO_TEST_CASE(gradcheck_every_parameter) {
  Generator gen(2);
  CharLSTM m(config(), gen, DType::Float64);
  const std::vector<int64_t> ids = {0, 6, 2, 2, 5, 1};
  BOOST_TEST(m.forward(ids, {2, 3}).shape() == (Shape{2, 3, 7}));
  expect_gradcheck("CharLSTM", [&m, &ids](const In&) { return m.forward(ids, {2, 3}); }, m.parameters());
}

// Feeding 3, then 1, then 2 tokens with the carried state (as generation does) gives the logits of
// the whole sequence of 6; float64 and float32.
BOOST_AUTO_TEST_CASE(state_carried_across_pieces) {
  const int64_t B = 2, T = 6;
  const std::vector<int64_t> ids = {1, 4, 0, 6, 3, 3, 2, 2, 5, 0, 1, 6};
  for (DType dt : {DType::Float64, DType::Float32}) {
    Generator gen(3);
    CharLSTM m(config(), gen, dt);
    NoGradGuard ng;
    const std::vector<double> whole = m.forward(ids, {B, T}).to_vector();
    Tensor h, c;
    std::vector<std::vector<double>> pieces(B);
    int64_t at = 0;
    for (int64_t n : {3, 1, 2}) {
      const CharLSTMOutput o = m.forward_with_state(columns(ids, B, T, at, at + n), {B, n}, h, c);
      BOOST_TEST(o.h_n.shape() == (Shape{2, B, 5}));
      const auto v = o.logits.to_vector();
      for (int64_t b = 0; b < B; ++b) pieces[b].insert(pieces[b].end(), v.begin() + b * n * 7, v.begin() + (b + 1) * n * 7);
      h = o.h_n, c = o.c_n;
      at += n;
    }
    std::vector<double> joined;
    for (const auto& p : pieces) joined.insert(joined.end(), p.begin(), p.end());
    const double tol = dt == DType::Float64 ? 1e-13 : 1e-6;
    expect_elements_close(dtype_name(dt), joined, whole, tol, tol);
  }
}

BOOST_AUTO_TEST_CASE(errors) {
  Generator gen(4);
  CharLSTM m(config(1), gen);
  expect_error([&] { m.forward({1, 7}, {1, 2}); }, {"token id 7", "(0, 1)", "[0, 7)"});
  expect_error([&] { m.forward({1, -2}, {2, 1}); }, {"token id -2", "(1, 0)"});
  expect_error([&] { m.forward({1, 2}, {2}); }, {"(B, T)", "[2]"});
  expect_error([&] { m.forward({1, 2, 3}, {1, 2}); }, {"3 token ids", "[1, 2]"});
  expect_error([&] { m.forward(tensor({0.5}, {1, 1})); }, {"whole numbers", "0.5"});
  BOOST_TEST(m.forward(tensor({1, 6}, {1, 2})).shape() == (Shape{1, 2, 7}));
  expect_error([&] { m.forward_with_state({1}, {1, 1}, zeros({2, 1, 5})); }, {"h0", "[2, 1, 5]"});
  for (int field = 0; field < 4; ++field) {
    CharLSTMConfig c = config();
    int64_t* f[] = {&c.vocab_size, &c.embed_dim, &c.hidden_size, &c.num_layers};
    const char* n[] = {"vocab_size", "embed_dim", "hidden_size", "num_layers"};
    *f[field] = 0;
    expect_error([&] { CharLSTM x(c, gen); }, {std::string(n[field]) + " >= 1", "got 0"});
  }
}

BOOST_AUTO_TEST_SUITE_END()
