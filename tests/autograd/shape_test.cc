// Shape, the small inline vector of dims: std::vector's semantics at every rank, inline (no heap
// block) up to Shape::kInline dims, on the heap beyond, through copies, moves, inserts and erases.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <map>
#include <numeric>
#include <utility>
#include <vector>

#include "autograd/autograd.h"

using namespace normlab::autograd;

namespace {

// True when s keeps its dims in its own object (no heap block).
bool is_inline(const Shape& s) {
  const auto* self = reinterpret_cast<const char*>(&s);
  const auto* p = reinterpret_cast<const char*>(s.data());
  return p >= self && p < self + sizeof(Shape);
}

// A shape and the std::vector it must equal, dims 1, 2, ..., r.
std::pair<Shape, std::vector<int64_t>> ramp(int r) {
  std::vector<int64_t> v(r);
  std::iota(v.begin(), v.end(), 1);
  return {Shape(v.begin(), v.end()), v};
}

void check_same(const Shape& s, const std::vector<int64_t>& v) {
  BOOST_TEST_REQUIRE(s.size() == v.size());
  BOOST_TEST(s.empty() == v.empty());
  for (size_t i = 0; i < v.size(); ++i) BOOST_TEST(s[i] == v[i]);
  BOOST_TEST((s.vec() == v));
}

}  // namespace

BOOST_AUTO_TEST_SUITE(shape)

BOOST_AUTO_TEST_CASE(constructors_match_std_vector) {
  check_same(Shape{}, {});
  check_same(Shape{2, 3}, {2, 3});
  check_same(Shape(3), {0, 0, 0});
  check_same(Shape(2, 7), {7, 7});
  check_same(Shape(std::vector<int64_t>{4, 5, 6}), {4, 5, 6});
  const std::vector<int64_t> v{1, 2, 3, 4};
  check_same(Shape(v.begin() + 1, v.end()), {2, 3, 4});
  Shape s = {9, 8};
  check_same(s, {9, 8});
  s = {1};
  check_same(s, {1});
}

BOOST_AUTO_TEST_CASE(inline_up_to_kInline_dims_heap_beyond) {
  for (int r = 0; r <= 20; ++r) {
    BOOST_TEST_CONTEXT("rank " << r) {
      auto [s, v] = ramp(r);
      check_same(s, v);
      BOOST_TEST(is_inline(s) == (static_cast<size_t>(r) <= Shape::kInline));
      Shape copy = s;
      check_same(copy, v);
      BOOST_TEST(is_inline(copy) == (static_cast<size_t>(r) <= Shape::kInline));
      Shape assigned{5, 5, 5};
      assigned = s;
      check_same(assigned, v);
      Shape moved = std::move(copy);
      check_same(moved, v);
      BOOST_TEST(copy.empty());  // NOLINT: a moved-from shape is empty and usable
      copy.push_back(3);
      check_same(copy, {3});
      Shape move_assigned = ramp(12).first;
      move_assigned = std::move(moved);
      check_same(move_assigned, v);
      // Growing one dim at a time across the inline capacity keeps the dims.
      Shape grown;
      for (int64_t d : v) grown.push_back(d);
      check_same(grown, v);
    }
  }
}

BOOST_AUTO_TEST_CASE(insert_erase_resize_like_std_vector) {
  for (int r = 0; r <= 12; ++r)
    for (int at = 0; at <= r; ++at) {
      BOOST_TEST_CONTEXT("rank " << r << ", position " << at) {
        auto [s, v] = ramp(r);
        const std::vector<int64_t> extra{-1, -2, -3};
        s.insert(s.begin() + at, extra.begin(), extra.end());
        v.insert(v.begin() + at, extra.begin(), extra.end());
        check_same(s, v);
        s.insert(s.begin() + at, int64_t{42});
        v.insert(v.begin() + at, int64_t{42});
        check_same(s, v);
        s.erase(s.begin() + at, s.begin() + at + 2);
        v.erase(v.begin() + at, v.begin() + at + 2);
        check_same(s, v);
        s.erase(s.begin() + at);
        v.erase(v.begin() + at);
        check_same(s, v);
        s.resize(r + 3, 7);
        v.resize(r + 3, 7);
        check_same(s, v);
        s.pop_back();
        v.pop_back();
        check_same(s, v);
        BOOST_TEST(s.back() == v.back());
        BOOST_TEST(s.front() == v.front());
      }
    }
}

BOOST_AUTO_TEST_CASE(comparisons_are_std_vectors) {
  const std::vector<std::vector<int64_t>> vs = {{}, {0}, {1}, {1, 2}, {1, 3}, {2}, {1, 2, 3, 4, 5, 6, 7, 8, 9}};
  for (const auto& a : vs)
    for (const auto& b : vs) {
      const Shape sa(a), sb(b);
      BOOST_TEST((sa == sb) == (a == b));
      BOOST_TEST((sa != sb) == (a != b));
      BOOST_TEST((sa < sb) == (a < b));
      BOOST_TEST((sa >= sb) == (a >= b));
    }
  std::map<Shape, int> m{{Shape{2, 3}, 1}, {Shape{2}, 2}};
  BOOST_TEST(m.at(Shape{2}) == 2);
}

BOOST_AUTO_TEST_CASE(tensors_of_rank_above_the_inline_capacity) {
  // Rank 10 (heap-held shape): reshape, a broadcasting add and a reduction with its backward.
  const Shape s{1, 2, 1, 2, 1, 2, 1, 1, 2, 1};
  Tensor x = reshape(arange(16, DType::Float64), s).detach();
  x.requires_grad_();
  BOOST_TEST((x.shape() == s));
  const Tensor y = sum(add(x, ones({2, 1}, DType::Float64)));
  BOOST_TEST(y.item() == 16 * 15 / 2 + 16);
  y.backward();
  BOOST_TEST((x.grad().shape() == s));
  BOOST_TEST(x.grad().flat(15) == 1);
}

BOOST_AUTO_TEST_CASE(python_tuple_repr) {
  BOOST_TEST(py_tuple({}) == "()");
  BOOST_TEST(py_tuple({3}) == "(3,)");
  BOOST_TEST(py_tuple({2, 3}) == "(2, 3)");
}

BOOST_AUTO_TEST_SUITE_END()
