// The autograd engine: accumulation, retain_graph, freed graphs and saved tensors, detach,
// shared leaves and diamonds, retain_grad, explicit gradients, no_grad, deep chains.
#include <boost/test/unit_test.hpp>
#include <memory>
#include <thread>

#include "autograd/autograd.h"
#include "tests/support/compare.h"
#include "tests/support/tensors.h"

using namespace normlab::autograd;
using normlab::Error;
using normlab::test::check_tensor;

namespace {

// a + b recorded with a backward that counts its calls and remembers which inputs needed a gradient.
struct Counted {
  int calls = 0;
  Needs needs;
  Tensor operator()(const Tensor& a, const Tensor& b) {
    Tensor out = add(a.detach(), b.detach());
    return record("Counted", out, {a, b}, [this](const Tensor& g, const Needs& n) {
      ++calls;
      needs = n;
      return std::vector<Tensor>{g, g};
    });
  }
};

}  // namespace

BOOST_AUTO_TEST_SUITE(engine)

BOOST_AUTO_TEST_CASE(gradients_accumulate_across_backward_calls) {
  Tensor x = tensor({1, 2, 3});
  x.requires_grad_();
  Tensor y = sum(mul(x, x));  // dy/dx = 2x
  y.backward(Tensor(), /*retain_graph=*/true);
  check_tensor(x.grad(), {2, 4, 6});
  y.backward();
  check_tensor(x.grad(), {4, 8, 12});
}

BOOST_AUTO_TEST_CASE(second_backward_through_freed_graph_is_an_error) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  Tensor y = sum(exp(x));
  y.backward();
  BOOST_CHECK_EXCEPTION(y.backward(), Error, [](const Error& e) {
    return std::string(e.what()).find("second time") != std::string::npos;
  });
}

BOOST_AUTO_TEST_CASE(non_scalar_backward_needs_a_gradient) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  Tensor y = mul(x, 2.0);
  BOOST_CHECK_EXCEPTION(y.backward(), Error, [](const Error& e) {
    return std::string(e.what()).find("[2]") != std::string::npos;
  });
  y.backward(tensor({1, 10}));
  check_tensor(x.grad(), {2, 20});
}

BOOST_AUTO_TEST_CASE(no_grad_records_nothing) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  Tensor y;
  {
    NoGradGuard g;
    y = mul(x, x);
  }
  BOOST_TEST(!y.requires_grad());
  BOOST_TEST(!y.grad_fn());
  BOOST_TEST(grad_enabled());
}

BOOST_AUTO_TEST_CASE(million_op_chain_backpropagates_without_recursion) {
  Tensor x = scalar(1.0);
  x.requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 1000000; ++i) y = add(y, 1e-6);
  y.backward();
  BOOST_TEST(x.grad().item() == 1.0);
  y = Tensor();  // frees a million nodes, iteratively
  BOOST_TEST(x.grad().item() == 1.0);
}

BOOST_AUTO_TEST_CASE(linear_cross_entropy_gradcheck) {
  Generator gen(1);
  Tensor x = randn({4, 3}, gen, 0, 1, DType::Float64);
  Tensor w = randn({5, 3}, gen, 0, 1, DType::Float64);
  Tensor b = randn({5}, gen, 0, 1, DType::Float64);
  x.requires_grad_(), w.requires_grad_(), b.requires_grad_();
  BOOST_TEST(gradcheck([](const std::vector<Tensor>& in) {
    return cross_entropy(linear(in[0], in[1], in[2]), {0, 4, 2, 1});
  }, {x, w, b}));
}

BOOST_AUTO_TEST_CASE(retain_graph_allows_another_backward) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  const Tensor y = sum(exp(x));
  y.backward(Tensor(), true);
  y.backward(Tensor(), true);
  y.backward();  // the last one frees the graph
  check_tensor(x.grad(), {3 * std::exp(1.0), 3 * std::exp(2.0)}, 1e-6, 0);
  normlab::test::expect_error([&] { y.backward(); }, {"second time"});
}

BOOST_AUTO_TEST_CASE(detach_stops_gradients) {
  Tensor x = tensor({1, 2, 3});
  x.requires_grad_();
  const Tensor y = mul(x, x);
  const Tensor z = sum(mul(y.detach(), x));  // dz/dx = y (no path through y)
  z.backward();
  check_tensor(x.grad(), {1, 4, 9}, 0, 0);
  BOOST_TEST(!y.detach().requires_grad());
}

BOOST_AUTO_TEST_CASE(a_leaf_used_twice_gets_the_sum) {
  Tensor x = tensor({1, 2, 3});
  x.requires_grad_();
  sum(add(mul(x, x), x)).backward();  // d/dx (x^2 + x) = 2x + 1
  check_tensor(x.grad(), {3, 5, 7}, 0, 0);
  Tensor w = tensor({2});
  w.requires_grad_();
  sum(add(mul(w, 3.0), mul(w, 4.0))).backward();  // two separate ops on the same leaf
  BOOST_TEST(w.grad().item() == 7);
}

BOOST_AUTO_TEST_CASE(diamond_runs_each_node_once_after_all_its_consumers) {
  Tensor x = tensor({0.5, 1});
  x.requires_grad_();
  Counted top;
  const Tensor a = top(x, zeros({2}));  // a = x, counted
  const Tensor b = mul(a, 2.0), c = mul(a, 3.0), d = add(b, c);
  sum(mul(d, a)).backward();  // three paths into a: through b, c, and directly
  BOOST_TEST(top.calls == 1);
  // d(5a * a)/da = 10 a
  check_tensor(x.grad(), {5, 10}, 0, 0);
  BOOST_TEST(top.needs == (Needs{true, false}));  // zeros({2}) needs no gradient
}

BOOST_AUTO_TEST_CASE(retain_grad_on_a_non_leaf) {
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  const Tensor y = mul(x, 3.0), w = mul(x, 2.0);
  y.retain_grad();
  const Tensor z = sum(mul(y, y));
  z.backward(Tensor(), true);
  check_tensor(y.grad(), {6, 12}, 0, 0);  // dz/dy = 2y
  check_tensor(x.grad(), {18, 36}, 0, 0);
  BOOST_TEST(!w.grad().defined());  // a non-leaf without retain_grad keeps no gradient
  z.backward();
  check_tensor(y.grad(), {12, 24}, 0, 0);  // accumulates like a leaf
}

BOOST_AUTO_TEST_CASE(backward_with_an_explicit_gradient) {
  Tensor x = tensor({1, 2, 3, 4}, {2, 2});
  x.requires_grad_();
  const Tensor y = mul(x, x);
  y.backward(tensor({1, 0, 0.5, -1}, {2, 2}));  // dx = g * 2x
  check_tensor(x.grad(), {2, 0, 3, -8}, 0, 0);
  // On a leaf, backward(g) accumulates g itself, as a copy (changing g later changes nothing).
  Tensor l = zeros({2});
  l.requires_grad_();
  const Tensor g = tensor({1, 2});
  l.backward(g);
  fill_(g, 5);
  check_tensor(l.grad(), {1, 2}, 0, 0);
  // A view of the gradient is not kept either.
  Tensor m = zeros({2, 2});
  m.requires_grad_();
  const Tensor gg = ones({4});
  reshape(m, {4}).backward(gg);
  fill_(gg, 7);
  check_tensor(m.grad(), {1, 1, 1, 1}, 0, 0);
}

// A leaf takes the engine's gradient buffer as its .grad when nothing else holds it (no copy), and
// copies it when another leaf (or the caller) still can see the same buffer.
BOOST_AUTO_TEST_CASE(a_leaf_takes_an_unshared_gradient_and_copies_a_shared_one) {
  Tensor x = tensor({1, 2}), y = tensor({3, 4});
  x.requires_grad_();
  y.requires_grad_();
  Counted both;  // passes the same gradient tensor to x and to y
  both(mul(x, 2.0), y).backward(tensor({1, -1}));
  check_tensor(x.grad(), {2, -2}, 0, 0);
  check_tensor(y.grad(), {1, -1}, 0, 0);
  fill_(y.grad(), 9);  // x.grad and y.grad are distinct buffers
  check_tensor(x.grad(), {2, -2}, 0, 0);
  // The buffer mul's backward made for x alone becomes x.grad itself: gradients still accumulate.
  Tensor z = tensor({1, 2});
  z.requires_grad_();
  sum(mul(z, 3.0)).backward();
  sum(mul(z, 3.0)).backward();
  check_tensor(z.grad(), {6, 6}, 0, 0);
}

BOOST_AUTO_TEST_CASE(inputs_without_requires_grad_get_no_gradient) {
  Tensor a = tensor({1, 2});
  a.requires_grad_();
  const Tensor b = tensor({3, 4});
  sum(mul(a, b)).backward();
  check_tensor(a.grad(), {3, 4}, 0, 0);
  BOOST_TEST(!b.grad().defined());
  Counted op;
  sum(op(b, a)).backward();
  BOOST_TEST(op.needs == (Needs{false, true}));
}

BOOST_AUTO_TEST_CASE(saved_tensors_are_freed_after_backward) {
  Tensor x = tensor({1, 2, 3});
  x.requires_grad_();
  const Tensor w = tensor({4, 5, 6});  // mul saves w, as x's gradient needs it
  // How many references beyond its own handle hold a tensor's data: a saved input is the tensor
  // itself (one more reference to its TensorImpl), a saved output a view of its storage.
  const auto held = [](const Tensor& t) { return t.impl_ptr().use_count() + t.impl().storage.use_count() - 2; };
  BOOST_TEST(held(w) == 0);
  const Tensor y = sum(mul(x, w));
  BOOST_TEST(held(w) == 1);
  y.backward(Tensor(), true);
  BOOST_TEST(held(w) == 1);  // kept for another backward
  y.backward();
  BOOST_TEST(held(w) == 0);  // freed with the graph's saved tensors
  // mul saves x only if w needs a gradient: here it does not. (x's TensorImpl is held by its
  // accumulate-grad node in any graph that uses it, so count a new mul's references.)
  {
    const long before = x.impl_ptr().use_count();
    const Tensor z = mul(x, w);
    BOOST_TEST(x.impl_ptr().use_count() == before + 0);
    BOOST_TEST(x.impl().storage.use_count() == 1);
  }
  // Dropping an output without a backward frees its graph and what it saved.
  {
    const Tensor z = sum(exp(mul(x, w)));
    BOOST_TEST(held(w) == 1);
  }
  BOOST_TEST(held(w) == 0);
}

BOOST_AUTO_TEST_CASE(the_graph_holds_no_reference_cycles) {
  std::weak_ptr<Node> node, acc;
  std::weak_ptr<TensorImpl> leaf_impl, out_impl;
  {
    Tensor x = tensor({1, 2});
    x.requires_grad_();
    leaf_impl = x.impl_ptr();
    Tensor y = exp(mul(x, x));  // exp saves its own output (a detached handle, no cycle)
    y.retain_grad();
    node = y.grad_fn();
    acc = x.impl().grad_accumulator;
    out_impl = y.impl_ptr();
    BOOST_TEST(!node.expired());
    BOOST_TEST(!acc.expired());
  }
  BOOST_TEST(node.expired());
  BOOST_TEST(acc.expired());
  BOOST_TEST(leaf_impl.expired());
  BOOST_TEST(out_impl.expired());
}

BOOST_AUTO_TEST_CASE(no_grad_nests_and_restores) {
  Tensor x = ones({1});
  x.requires_grad_();
  BOOST_TEST(grad_enabled());
  {
    NoGradGuard outer;
    BOOST_TEST(!grad_enabled());
    {
      NoGradGuard inner;
      BOOST_TEST(!grad_enabled());
    }
    BOOST_TEST(!grad_enabled());  // the inner guard restores "off", not "on"
    set_grad_enabled(true);
    BOOST_TEST(mul(x, 2.0).requires_grad());
    {
      NoGradGuard inner;
      BOOST_TEST(!mul(x, 2.0).requires_grad());
    }
    BOOST_TEST(grad_enabled());
  }
  BOOST_TEST(grad_enabled());
  // Grad mode is per thread.
  bool other = false;
  {
    NoGradGuard g;
    std::thread t([&] { other = grad_enabled(); });
    t.join();
  }
  BOOST_TEST(other);
}

BOOST_AUTO_TEST_CASE(a_backward_returning_a_wrong_shape_is_an_error) {
  // A custom op (as nn layers write them with record()) whose backward gets a shape wrong.
  Tensor x = ones({2, 3});
  x.requires_grad_();
  const Tensor y = record("BadBackward", x.detach().clone(), {x},
                          [](const Tensor& g, const Needs&) { return std::vector<Tensor>{sum(g, {0})}; });
  normlab::test::expect_error([&] { sum(y).backward(); }, {"BadBackward", "[3]", "[2, 3]"});
  const Tensor z = record("BadDtype", x.detach().clone(), {x},
                          [](const Tensor& g, const Needs&) { return std::vector<Tensor>{g.to(DType::Float64)}; });
  normlab::test::expect_error([&] { sum(z).backward(); }, {"BadDtype", "float64", "float32"});
}

BOOST_AUTO_TEST_CASE(dropping_a_long_graph_without_backward_does_not_recurse) {
  Tensor x = scalar(1.0);
  x.requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 300000; ++i) y = mul(y, 1.0);
  y = Tensor();  // frees 300k nodes iteratively (recursion this deep would overflow the stack)
  BOOST_TEST(x.is_leaf());
}

BOOST_AUTO_TEST_CASE(leaf_gradients_never_share_data_with_each_other_or_the_caller) {
  // The engine takes over a fresh gradient buffer as .grad rather than copying it; a buffer that
  // something else still sees (the caller's gradient, another input's gradient) must be copied.
  Counted op;
  Tensor a = tensor({1, 2}), b = tensor({3, 4});
  a.requires_grad_();
  b.requires_grad_();
  Tensor y = op(a, b);  // its backward gives the same tensor g to both inputs
  const Tensor g = tensor({1, 10});
  y.backward(g, /*retain_graph=*/true);
  BOOST_TEST(a.grad().impl().storage != b.grad().impl().storage);
  BOOST_TEST(a.grad().impl().storage != g.impl().storage);
  BOOST_TEST(b.grad().impl().storage != g.impl().storage);
  y.backward(g);  // accumulates in place: shared data would be counted twice
  check_tensor(a.grad(), {2, 20});
  check_tensor(b.grad(), {2, 20});
  check_tensor(g, {1, 10});
  // A leaf as the root: its gradient is the caller's, copied.
  Tensor c = tensor({5, 6});
  c.requires_grad_();
  const Tensor gc = tensor({1, 1});
  c.backward(gc);
  c.backward(gc);
  check_tensor(c.grad(), {2, 2});
  check_tensor(gc, {1, 1});
}

BOOST_AUTO_TEST_CASE(gradient_sums_leave_the_summed_tensors_unchanged) {
  // x feeds three consumers; the sum of their gradients is built in place only in a buffer no
  // one else sees: the retained gradient of z and the caller's gradient keep their values.
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  Tensor h = mul(x, 1.0);
  Tensor z = add(h, h);  // gives its gradient (the same tensor) twice to h
  z.retain_grad();
  Tensor w = mul(h, 3.0);
  const Tensor gz = tensor({1, 2}), gw = tensor({10, 20});
  Tensor total = add(sum(mul(z, gz)), sum(mul(w, gw)));
  total.backward();
  check_tensor(z.grad(), {1, 2});
  check_tensor(x.grad(), {2 * 1 + 3 * 10, 2 * 2 + 3 * 20});
  check_tensor(gz, {1, 2});
  check_tensor(gw, {10, 20});
}

BOOST_AUTO_TEST_CASE(a_failed_backward_leaves_the_graph_usable) {
  // A backward that throws half way leaves no gradient parked in the nodes: the next backward of
  // the same (retained) graph starts from scratch.
  Tensor x = tensor({1, 2});
  x.requires_grad_();
  bool fail = true;
  Tensor y = record("MaybeFails", mul(x.detach(), 2.0), {x}, [&fail](const Tensor& g, const Needs&) {
    if (fail) throw normlab::Error("MaybeFails: on purpose");
    return std::vector<Tensor>{mul(g, 2.0)};
  });
  Tensor s = add(sum(y), sum(mul(y, 1.0)));
  BOOST_CHECK_THROW(s.backward(Tensor(), /*retain_graph=*/true), Error);
  BOOST_TEST(!x.grad().defined());
  fail = false;
  s.backward();
  check_tensor(x.grad(), {4, 4});
}

BOOST_AUTO_TEST_SUITE_END()
