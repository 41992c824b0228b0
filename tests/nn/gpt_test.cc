// nn::GPT: nanoGPT's state_dict names and init, float64 gradchecks for every norm and position,
// causality, the errors; and the inference path: forward_cached's logits equal the full forward's
// at every position (token by token, in chunks, after a rewind), GPTDecoder's crop equals nanoGPT's
// idx[:, -block_size:], nothing recorded by autograd. (PyTorch parity of the training steps:
// tests/optim/gpt_steps_test.cc.)
#include <boost/test/unit_test.hpp>
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "nn/gpt.h"
#include "nn/init.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using namespace normlab::nn;
using normlab::test::expect_elements_close;
using normlab::test::expect_error;
using normlab::test::expect_gradcheck;
using In = std::vector<Tensor>;

namespace {

const BlockNorm kNorms[] = {BlockNorm::Layer, BlockNorm::RMS, BlockNorm::Batch, BlockNorm::None};
const NormPosition kPositions[] = {NormPosition::Pre, NormPosition::Post};

std::vector<std::string> names(const NamedTensors& t) {
  std::vector<std::string> r;
  for (const auto& e : t) r.push_back(e.first);
  return r;
}

GPTConfig small(BlockNorm norm, NormPosition position, int64_t vocab = 11, int64_t block = 8) {
  GPTConfig c;
  c.vocab_size = vocab;
  c.block_size = block;
  c.n_layer = 2;
  c.n_head = 2;
  c.width = 8;
  c.norm = norm;
  c.position = position;
  return c;
}

// Parameters redrawn from U(-0.5, 0.5) (norm scales U(0.5, 1.5), embeddings U(-1, 1)): with nanoGPT's
// N(0, 0.02) the attention is nearly uniform and the logits nearly 0, which would hide errors.
void scramble(Module& m, unsigned seed) {
  Generator gen(seed);
  NoGradGuard ng;
  for (const auto& [name, p] : m.named_parameters()) {
    const bool norm = name.find("ln_") != std::string::npos;
    const bool scale = norm && name.find("weight") != std::string::npos;
    const bool emb = name.find("wte") != std::string::npos || name.find("wpe") != std::string::npos;
    init::uniform_(p, scale ? 0.5 : emb ? -1 : -0.5, scale ? 1.5 : emb ? 1 : 0.5, gen);
  }
}

// BatchNorm's running statistics from a few training batches, then eval mode (for every norm).
void to_eval(GPT& m, unsigned seed) {
  if (m.config().norm == BlockNorm::Batch) {
    NoGradGuard ng;
    for (unsigned s = 0; s < 3; ++s) {
      Generator g(seed + s);
      std::vector<int64_t> ids(2 * m.config().block_size);
      for (auto& i : ids) i = static_cast<int64_t>(g.randint(static_cast<uint64_t>(m.config().vocab_size)));
      m.forward(ids, {2, m.config().block_size});
    }
  }
  m.eval();
}

std::vector<int64_t> random_ids(int64_t n, int64_t vocab, unsigned seed) {
  Generator g(seed);
  std::vector<int64_t> ids(static_cast<size_t>(n));
  for (auto& i : ids) i = static_cast<int64_t>(g.randint(static_cast<uint64_t>(vocab)));
  return ids;
}

// Row b's tokens [from, to) of ids (B, T), as a (B, to - from) batch when taken for every b.
std::vector<int64_t> columns(const std::vector<int64_t>& ids, int64_t B, int64_t T, int64_t from, int64_t to) {
  std::vector<int64_t> r;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = from; t < to; ++t) r.push_back(ids[static_cast<size_t>(b * T + t)]);
  return r;
}

// logits (B, T, V) at position t: (B, V) values.
std::vector<double> at_position(const Tensor& logits, int64_t t) {
  const int64_t B = logits.size(0), T = logits.size(1), V = logits.size(2);
  std::vector<double> r;
  const auto all = logits.to_vector();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t v = 0; v < V; ++v) r.push_back(all[static_cast<size_t>((b * T + t) * V + v)]);
  return r;
}

std::string label(BlockNorm norm, NormPosition pos, DType dt) {
  return "norm " + block_norm_name(norm) + " position " + norm_position_name(pos) + " " + dtype_name(dt);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpt)

BOOST_AUTO_TEST_CASE(state_dict_names_are_nanogpts) {
  for (BlockNorm norm : kNorms) {
    Generator gen(1);
    const GPT m(small(norm, NormPosition::Pre), gen);
    Generator gen2(1);
    const TransformerBlock block(8, 2, norm, NormPosition::Pre, gen2);
    std::vector<std::string> want = {"transformer.wte.weight", "transformer.wpe.weight"};
    for (const char* l : {"0", "1"})
      for (const auto& n : names(block.state_dict())) want.push_back(std::string("transformer.h.") + l + "." + n);
    // ln_f: the norm's own names (those of the block's ln_1).
    for (const auto& n : names(block.state_dict()))
      if (n.rfind("ln_1.", 0) == 0) want.push_back("transformer.ln_f." + n.substr(5));
    want.push_back("lm_head.weight");
    BOOST_TEST(names(m.state_dict()) == want, boost::test_tools::per_element());
  }
  Generator gen(1);
  const GPT m(small(BlockNorm::Layer, NormPosition::Pre), gen);
  const std::string s = m.str();
  for (const char* part : {"GPT(\n  (transformer): ModuleDict(\n    (wte): Embedding(11, 8)\n    (wpe): Embedding(8, 8)\n"
                           "    (h): ModuleList(\n      (0): TransformerBlock(",
                           "    (ln_f): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n  )\n"
                           "  (lm_head): Linear(in_features=8, out_features=11, bias=False)\n)"})
    BOOST_TEST(s.find(part) != std::string::npos, s);
  // Untied: lm_head has its own weight.
  BOOST_TEST(m.num_parameters() == 11 * 8 + 8 * 8 + 2 * TransformerBlock(8, 2, BlockNorm::Layer, NormPosition::Pre, gen)
                                                             .num_parameters() +
                                       2 * 8 + 8 * 11);
}

// nanoGPT's _init_weights: Linear weights and embeddings N(0, 0.02), residual projections
// N(0, 0.02 / sqrt(2 n_layer)), biases 0, norms 1 and 0; in the dtype asked for.
BOOST_AUTO_TEST_CASE(init_is_nanogpts) {
  GPTConfig c;
  c.vocab_size = 200;
  c.block_size = 64;
  c.n_layer = 3;
  c.n_head = 4;
  c.width = 64;
  Generator gen(5);
  const GPT m(c, gen, DType::Float64);
  const double resid = 0.02 / std::sqrt(6.0);
  for (const auto& [name, p] : m.named_parameters()) {
    BOOST_TEST_CONTEXT(name) {
      BOOST_TEST((p.dtype() == DType::Float64));
      const auto v = p.to_vector();
      if (name.find("ln_") != std::string::npos) {
        const double want = name.find("weight") != std::string::npos ? 1.0 : 0.0;
        for (double x : v) BOOST_TEST(x == want);
      } else if (name.find("bias") != std::string::npos) {
        for (double x : v) BOOST_TEST(x == 0.0);
      } else {
        // At least 4096 values: the sample deviation is within 4% of sigma with overwhelming odds.
        BOOST_TEST(v.size() >= 4096u);
        double mean = 0, sq = 0;
        for (double x : v) mean += x;
        mean /= static_cast<double>(v.size());
        for (double x : v) sq += (x - mean) * (x - mean);
        const double sd = std::sqrt(sq / static_cast<double>(v.size() - 1));
        const double want = name.find("c_proj") != std::string::npos ? resid : 0.02;
        BOOST_TEST(std::fabs(sd / want - 1) < 0.04, "std " << sd << ", want " << want);
      }
    }
  }
}

// Logits (B, T, V); d logits / d every parameter for every norm and position (tiny model, float64).
BOOST_AUTO_TEST_CASE(gradcheck_every_norm_and_position) {
  for (BlockNorm norm : kNorms)
    for (NormPosition pos : kPositions) {
      GPTConfig c = small(norm, pos, 5, 4);
      c.width = 4;
      Generator gen(11);
      GPT m(c, gen, DType::Float64);
      scramble(m, 12);
      const std::vector<int64_t> ids = {0, 3, 3, 1, 4, 2, 0, 4};
      const Tensor y = m.forward(ids, {2, 4});
      BOOST_TEST(y.shape() == (Shape{2, 4, 5}));
      expect_gradcheck(label(norm, pos, DType::Float64), [&m, &ids](const In&) { return m.forward(ids, {2, 4}); },
                       m.parameters());
    }
}

// Changing the token at position 3 changes the logits at positions >= 3 only (the learned
// positions matter: the same token at two positions gives different logits), except with BatchNorm
// over tokens in training mode, whose statistics include every position.
BOOST_AUTO_TEST_CASE(causal_except_batch_norm_in_training) {
  const int64_t B = 2, T = 8, V = 11;
  const std::vector<int64_t> ids = random_ids(B * T, V, 3);
  std::vector<int64_t> ids2 = ids;
  ids2[3] = (ids2[3] + 1) % V;
  for (BlockNorm norm : kNorms)
    for (NormPosition pos : kPositions)
      for (bool training : {true, false}) {
        BOOST_TEST_CONTEXT(label(norm, pos, DType::Float64) << " training " << training) {
          Generator gen(4);
          GPT m(small(norm, pos), gen, DType::Float64);
          scramble(m, 5);
          if (!training) to_eval(m, 6);
          NoGradGuard ng;
          const Tensor y = m.forward(ids, {B, T}), y2 = m.forward(ids2, {B, T});
          for (int64_t t = 0; t < T; ++t) {
            const bool changed = at_position(y, t) != at_position(y2, t);
            BOOST_TEST(changed == (t >= 3 || (norm == BlockNorm::Batch && training)), "position " << t);
          }
          const std::vector<int64_t> same(B * T, 2);
          const Tensor z = m.forward(same, {B, T});
          BOOST_TEST(at_position(z, 0) != at_position(z, 1));
        }
      }
}

BOOST_AUTO_TEST_CASE(errors) {
  Generator gen(1);
  GPTConfig c = small(BlockNorm::Layer, NormPosition::Pre);
  GPT m(c, gen);
  expect_error([&] { m.forward(std::vector<int64_t>(18, 0), {2, 9}); },
               {"T=9", "block_size=8", "--block-size"});
  std::vector<int64_t> ids(16, 1);
  ids[10] = 11;
  expect_error([&] { m.forward(ids, {2, 8}); }, {"token id 11", "(1, 2)", "[0, 11)"});
  ids[10] = -1;
  expect_error([&] { m.forward(ids, {2, 8}); }, {"token id -1", "(1, 2)"});
  expect_error([&] { m.forward(std::vector<int64_t>(8, 0), {8}); }, {"(B, T)", "[8]"});
  expect_error([&] { m.forward(std::vector<int64_t>(7, 0), {2, 4}); }, {"7 token ids", "[2, 4]"});
  expect_error([&] { m.forward(tensor({1, 2.5}, {1, 2})); }, {"whole numbers", "2.5"});
  BOOST_TEST(m.forward(tensor({1, 2, 10}, {1, 3})).shape() == (Shape{1, 3, 11}));
  for (auto [field, value] : {std::pair<int, int64_t>{0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, -2}}) {
    GPTConfig b = c;
    int64_t* f[] = {&b.vocab_size, &b.block_size, &b.n_layer, &b.n_head, &b.width};
    const char* n[] = {"vocab_size", "block_size", "n_layer", "n_head", "width"};
    *f[field] = value;
    expect_error([&] { GPT g(b, gen); }, {std::string(n[field]) + " >= 1", std::to_string(value)});
  }
  GPTConfig b = c;
  b.n_head = 3;
  expect_error([&] { GPT g(b, gen); }, {"width=8", "n_head=3"});
}

// ---- Inference with the cache ----------------------------------------------------------------------

// For every norm (BatchNorm in eval mode) and position, float64 and float32: the cached logits of
// each position equal the full forward's, token by token, in chunks (a prompt of 3, then 2, 1, 2),
// and after a rewind (start 2 < length 5, the sequence changed from position 2 on).
BOOST_AUTO_TEST_CASE(cached_logits_equal_the_full_forward) {
  const int64_t B = 2, T = 8, V = 11;
  const std::vector<int64_t> ids = random_ids(B * T, V, 7);
  std::vector<int64_t> ids2 = ids;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 2; t < T; ++t) ids2[b * T + t] = (ids[b * T + t] + 3 + t) % V;
  for (DType dt : {DType::Float64, DType::Float32})
    for (BlockNorm norm : kNorms)
      for (NormPosition pos : kPositions) {
        BOOST_TEST_CONTEXT(label(norm, pos, dt)) {
          const double rtol = dt == DType::Float64 ? 1e-11 : 1e-5, atol = dt == DType::Float64 ? 1e-12 : 2e-6;
          Generator gen(8);
          GPT m(small(norm, pos), gen, dt);
          scramble(m, 9);
          to_eval(m, 10);
          const NamedTensors before = m.state_dict();
          std::vector<std::vector<double>> buffers;
          for (const auto& e : m.named_buffers()) buffers.push_back(e.second.to_vector());
          Tensor full, full2;
          {
            NoGradGuard ng;
            full = m.forward(ids, {B, T});
            full2 = m.forward(ids2, {B, T});
          }
          GPTCache cache = m.make_cache(B);
          for (int64_t t = 0; t < T; ++t) {
            const Tensor y = m.forward_cached(columns(ids, B, T, t, t + 1), 1, t, cache);
            BOOST_TEST(y.shape() == (Shape{B, V}));
            BOOST_TEST(cache.length == t + 1);
            expect_elements_close("token " + std::to_string(t), y.to_vector(), at_position(full, t), rtol, atol);
          }
          GPTCache chunked = m.make_cache(B);
          int64_t at = 0;
          for (int64_t n : {3, 2, 1, 2}) {
            const Tensor y = m.forward_cached(columns(ids, B, T, at, at + n), n, at, chunked);
            at += n;
            expect_elements_close("chunk to " + std::to_string(at), y.to_vector(), at_position(full, at - 1), rtol,
                                  atol);
          }
          // Rewind: keep positions 0, 1 of a cache of 5, feed the changed sequence from 2 on.
          GPTCache rewound = m.make_cache(B);
          m.forward_cached(columns(ids, B, T, 0, 5), 5, 0, rewound);
          m.forward_cached(columns(ids2, B, T, 2, 4), 2, 2, rewound);
          for (int64_t t = 4; t < T; ++t) {
            const Tensor y = m.forward_cached(columns(ids2, B, T, t, t + 1), 1, t, rewound);
            expect_elements_close("rewound token " + std::to_string(t), y.to_vector(), at_position(full2, t), rtol,
                                  atol);
          }
          // Nothing changed in the model (BatchNorm's running statistics included).
          size_t i = 0;
          for (const auto& e : m.named_buffers()) BOOST_TEST(e.second.to_vector() == buffers[i++]);
          BOOST_TEST(names(m.state_dict()) == names(before), boost::test_tools::per_element());
        }
      }
}

// nanoGPT's generate feeds idx[:, -block_size:]: past block_size tokens, GPTDecoder's logits are the
// full forward's on the last block_size tokens (positions 0 .. block_size - 1 again).
BOOST_AUTO_TEST_CASE(decoder_crops_the_context_as_nanogpt) {
  const int64_t B = 2, V = 11, L = 21, bs = 8;
  const std::vector<int64_t> seq = random_ids(B * L, V, 13);
  for (DType dt : {DType::Float64, DType::Float32})
    for (BlockNorm norm : {BlockNorm::Layer, BlockNorm::Batch}) {
      BOOST_TEST_CONTEXT(label(norm, NormPosition::Pre, dt)) {
        const double rtol = dt == DType::Float64 ? 1e-11 : 1e-5, atol = dt == DType::Float64 ? 1e-12 : 2e-6;
        Generator gen(14);
        GPT m(small(norm, NormPosition::Pre), gen, dt);
        scramble(m, 15);
        to_eval(m, 16);
        const auto reference = [&](int64_t len) {  // nanoGPT: logits of forward(idx[:, -block_size:])[:, -1]
          const int64_t from = std::max<int64_t>(0, len - bs);
          NoGradGuard ng;
          return at_position(m.forward(columns(seq, B, L, from, len), {B, len - from}), len - from - 1);
        };
        // A prompt of 3, then one token at a time up to 21 tokens.
        GPTDecoder dec(m, B);
        Tensor y = dec.feed(columns(seq, B, L, 0, 3), 3);
        expect_elements_close("prompt", y.to_vector(), reference(3), rtol, atol);
        for (int64_t len = 4; len <= L; ++len) {
          y = dec.feed(columns(seq, B, L, len - 1, len), 1);
          expect_elements_close("length " + std::to_string(len), y.to_vector(), reference(len), rtol, atol);
          BOOST_TEST(dec.length() == std::min(len, bs));
          BOOST_TEST(dec.context() == columns(seq, B, L, std::max<int64_t>(0, len - bs), len),
                     boost::test_tools::per_element());
        }
        // A prompt longer than block_size at once, then 2 tokens at once.
        GPTDecoder dec2(m, B);
        expect_elements_close("long prompt", dec2.feed(columns(seq, B, L, 0, 11), 11).to_vector(), reference(11),
                              rtol, atol);
        expect_elements_close("two more", dec2.feed(columns(seq, B, L, 11, 13), 2).to_vector(), reference(13), rtol,
                              atol);
      }
    }
}

// Grad mode is off inside (the result has no graph, no parameter gets a gradient) and restored after.
BOOST_AUTO_TEST_CASE(cached_forward_records_nothing) {
  Generator gen(1);
  GPT m(small(BlockNorm::RMS, NormPosition::Post), gen);
  GPTCache cache = m.make_cache(1);
  BOOST_TEST(cache.k.size() == 2u);
  BOOST_TEST(cache.k[0].shape() == (Shape{1, 2, 8, 4}));
  const Tensor y = m.forward_cached({1, 2, 3}, 3, 0, cache);
  BOOST_TEST(grad_enabled());
  BOOST_TEST(!y.requires_grad());
  BOOST_TEST(y.is_leaf());
  BOOST_TEST(m.forward({1, 2, 3}, {1, 3}).requires_grad());
  sum(m.forward({1, 2, 3}, {1, 3})).backward();
  BOOST_TEST(m.parameters()[0].grad().defined());
}

BOOST_AUTO_TEST_CASE(cached_forward_errors) {
  Generator gen(1);
  GPT m(small(BlockNorm::Layer, NormPosition::Pre), gen);
  GPTCache cache = m.make_cache(2);
  m.forward_cached({1, 2, 3, 4}, 2, 0, cache);
  expect_error([&] { m.forward_cached({1, 2}, 1, 3, cache); }, {"start=3", "[0, 2]"});
  expect_error([&] { m.forward_cached({1, 2}, 1, -1, cache); }, {"start=-1"});
  expect_error([&] { m.forward_cached(std::vector<int64_t>(14, 1), 7, 2, cache); },
               {"[2, 9)", "block_size=8", "--block-size"});
  expect_error([&] { m.forward_cached({1, 2, 3}, 1, 2, cache); }, {"3 token ids", "[2, 1]"});
  expect_error([&] { m.forward_cached({1, 12}, 1, 2, cache); }, {"token id 12", "(1, 0)", "[0, 11)"});
  expect_error([&] { m.forward_cached({}, 0, 2, cache); }, {"n >= 1", "n=0"});
  GPTCache other = m.make_cache(2);
  other.k[1] = zeros({2, 2, 8, 4}, DType::Float64);
  expect_error([&] { m.forward_cached({1, 2}, 1, 0, other); }, {"layer 1", "float64", "[2, 2, 8, 4]"});
  GPTCache none;
  expect_error([&] { m.forward_cached({1}, 1, 0, none); }, {"make_cache", "2 layers"});
  GPTCache no_scores = m.make_cache(2);
  no_scores.scores = Tensor();
  expect_error([&] { m.forward_cached({1, 2}, 1, 0, no_scores); }, {"scores", "[8]"});
  expect_error([&] { m.make_cache(0); }, {"batch >= 1", "0"});
  BOOST_TEST(cache.length == 2);  // the failed calls changed nothing
  Generator gen2(2);
  GPT bn(small(BlockNorm::Batch, NormPosition::Pre), gen2);
  GPTCache bc = bn.make_cache(1);
  expect_error([&] { bn.forward_cached({1}, 1, 0, bc); }, {"eval mode", "Batch"});
  bn.eval();
  BOOST_TEST(bn.forward_cached({1}, 1, 0, bc).shape() == (Shape{1, 11}));
  GPTDecoder dec(m, 2);
  expect_error([&] { dec.feed({1, 2, 3}, 2); }, {"2 x n", "n=2", "3 ids"});
  std::vector<int64_t> long_ids(18, 1);
  long_ids[17] = 11;  // dropped by the crop, still an error
  expect_error([&] { dec.feed(long_ids, 9); }, {"token id 11", "(1, 8)"});
  BOOST_TEST(dec.length() == 0);
}

BOOST_AUTO_TEST_SUITE_END()
