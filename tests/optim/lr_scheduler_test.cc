// Learning-rate schedules: PyTorch's closed forms by hand, values computed by PyTorch 1.13, chaining,
// the LRScheduler driving an optimizer, and every bad argument.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "optim/optim.h"
#include "tests/optim/support.h"
#include "tests/support/compare.h"

using namespace normlab::autograd;
using namespace normlab::optim;
using normlab::Error;
using normlab::test::check_error;

namespace {

// lr_at(0..n-1) for base lr 0.1.
std::vector<double> lrs(const Schedule& s, size_t n) {
  std::vector<double> out;
  for (size_t t = 0; t < n; ++t) out.push_back(s.lr_at(static_cast<int64_t>(t), 0.1));
  return out;
}

// Drives a real optimizer (base lr 0.1) with an LRScheduler: the lr after construction, then after
// each of n-1 steps, as PyTorch's scheduler loop below records them.
std::vector<double> driven(const Schedule& s, size_t n) {
  SGD opt({tensor({0})}, {.lr = 0.1});
  LRScheduler sched(opt, s);
  std::vector<double> out = {opt.lr()};
  for (size_t t = 1; t < n; ++t) {
    opt.step();
    sched.step();
    out.push_back(opt.lr());
  }
  return out;
}

void check_lrs(const std::vector<double>& got, const std::vector<double>& want) {
  BOOST_REQUIRE_EQUAL(got.size(), want.size());
  normlab::test::check_close(got, want, want.size(), 1e-12, 1e-15);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(lr_scheduler)

// ---- Closed forms, by hand ------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(step_lr_multiplies_by_gamma_every_step_size_steps) {
  // 0.1 * 0.5^floor(t / 3)
  check_lrs(lrs(StepLR(3, 0.5), 8), {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025});
}

BOOST_AUTO_TEST_CASE(cosine_annealing_closed_form) {
  // T_max = 4, eta_min = 0.02: 0.02 + 0.08 (1 + cos(pi t / 4)) / 2; cos(pi/4) = sqrt(2)/2.
  const double h = std::sqrt(2.0) / 2;
  check_lrs(lrs(CosineAnnealingLR(4, 0.02), 9),
            {0.1, 0.02 + 0.04 * (1 + h), 0.06, 0.02 + 0.04 * (1 - h), 0.02, 0.02 + 0.04 * (1 - h), 0.06,
             0.02 + 0.04 * (1 + h), 0.1});
}

BOOST_AUTO_TEST_CASE(linear_lr_and_warmup) {
  // LinearLR(0.2, 1, 4): 0.1 * (0.2 + 0.8 min(t, 4) / 4) = 0.02, 0.04, 0.06, 0.08, 0.1, 0.1
  check_lrs(lrs(LinearLR(0.2, 1.0, 4), 6), {0.02, 0.04, 0.06, 0.08, 0.1, 0.1});
  check_lrs(lrs(LinearWarmup(4, 0.2), 6), {0.02, 0.04, 0.06, 0.08, 0.1, 0.1});
  // Decay with end_factor 0.5: 0.1 * (1 - 0.5 min(t, 2) / 2)
  check_lrs(lrs(LinearLR(1.0, 0.5, 2), 4), {0.1, 0.075, 0.05, 0.05});
}

BOOST_AUTO_TEST_CASE(chain_restarts_the_second_schedule_at_the_milestone) {
  // Warmup 0.1 (0.2 + 0.8 t / 4) = 0.02, 0.04, 0.06, 0.08 for t < 4, then StepLR(2, 0.5) from 0
  // at t = 4: 0.1, 0.1, 0.05, 0.05, 0.025 (the warmup never reaches its own end value 0.1).
  const Schedule s = Chain(LinearWarmup(4, 0.2), StepLR(2, 0.5), 4);
  check_lrs(lrs(s, 9), {0.02, 0.04, 0.06, 0.08, 0.1, 0.1, 0.05, 0.05, 0.025});
  // Chains nest: a third schedule (StepLR with a long step, so 0.1) from step 9.
  const Schedule nested = Chain(s, StepLR(1000, 0.5), 9);
  check_lrs(lrs(nested, 11), {0.02, 0.04, 0.06, 0.08, 0.1, 0.1, 0.05, 0.05, 0.025, 0.1, 0.1});
  BOOST_TEST(s.name() == "Chain(LinearLR(start_factor=0.2, end_factor=1.0, total_iters=4), "
                         "StepLR(step_size=2, gamma=0.5), milestone=4)");
}

// ---- PyTorch 1.13 values ---------------------------------------------------------------------------
// Produced with /usr/bin/python3 (torch 1.13), from torch.optim.lr_scheduler as L:
//   opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1); s = make(opt)
//   out = [opt.param_groups[0]['lr']]
//   for _ in range(n): opt.step(); s.step(); out.append(opt.param_groups[0]['lr'])
// PyTorch steps its recursive forms; they agree with our closed forms to rounding.

BOOST_AUTO_TEST_CASE(matches_pytorch_step_lr) {
  // make = lambda o: L.StepLR(o, step_size=3, gamma=0.5); n = 9
  const std::vector<double> torch = {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125};
  check_lrs(driven(StepLR(3, 0.5), torch.size()), torch);
}

BOOST_AUTO_TEST_CASE(matches_pytorch_cosine_annealing_past_t_max) {
  // make = lambda o: L.CosineAnnealingLR(o, T_max=10, eta_min=0.001); n = 25
  const std::vector<double> torch = {
      0.1, 0.09757729755661011, 0.0905463412215599, 0.07959536998847742, 0.0657963412215599, 0.0505,
      0.03520365877844011, 0.02140463001152259, 0.010453658778440109, 0.0034227024433899004, 0.001,
      0.0034227024433899004, 0.01045365877844014, 0.02140463001152267, 0.035203658778440255, 0.05050000000000022,
      0.06579634122156018, 0.07959536998847777, 0.09054634122156031, 0.09757729755661054, 0.10000000000000045,
      0.09757729755661054, 0.09054634122156033, 0.07959536998847778, 0.0657963412215602, 0.050500000000000225};
  check_lrs(driven(CosineAnnealingLR(10, 0.001), torch.size()), torch);
}

BOOST_AUTO_TEST_CASE(matches_pytorch_linear_lr) {
  // make = lambda o: L.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=4); n = 6
  const std::vector<double> torch = {0.010000000000000002, 0.03250000000000001, 0.055000000000000014,
                                     0.07750000000000003,  0.10000000000000003, 0.10000000000000003,
                                     0.10000000000000003};
  check_lrs(driven(LinearLR(0.1, 1.0, 4), torch.size()), torch);
}

BOOST_AUTO_TEST_CASE(matches_pytorch_sequential_lr_warmup_then_cosine) {
  // make = lambda o: L.SequentialLR(o, [L.LinearLR(o, start_factor=0.1, total_iters=3),
  //                                     L.CosineAnnealingLR(o, T_max=6)], milestones=[3]); n = 11
  const std::vector<double> torch = {0.010000000000000002, 0.04, 0.07, 0.1, 0.09330127018922195, 0.07500000000000001,
                                     0.05, 0.025000000000000012, 0.006698729810778065, 0.0, 0.006698729810778065,
                                     0.025};
  check_lrs(driven(Chain(LinearLR(0.1, 1.0, 3), CosineAnnealingLR(6), 3), torch.size()), torch);
}

// ---- The LRScheduler -------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(scheduler_sets_lr_at_construction_step_and_set_step) {
  SGD opt({tensor({0})}, {.lr = 0.5});
  LRScheduler sched(opt, LinearWarmup(4, 0.5));
  BOOST_TEST(sched.base_lr() == 0.5);
  BOOST_TEST(sched.last_step() == 0);
  BOOST_TEST(opt.lr() == 0.25);  // 0.5 * 0.5 at step 0
  sched.step();
  BOOST_TEST(sched.last_step() == 1);
  BOOST_TEST(opt.lr() == 0.3125, boost::test_tools::tolerance(1e-15));  // 0.5 (0.5 + 0.5 / 4)
  BOOST_TEST(sched.lr_at(3) == 0.4375, boost::test_tools::tolerance(1e-15));  // pure: opt untouched
  BOOST_TEST(opt.lr() == 0.3125, boost::test_tools::tolerance(1e-15));
  sched.set_step(10);  // resuming: jumps to step 10
  BOOST_TEST(sched.last_step() == 10);
  BOOST_TEST(opt.lr() == 0.5);
  // A second scheduler made on the resumed optimizer would take 0.5 as base; the lr the schedule
  // gives at any step depends only on the step and the base lr.
  BOOST_TEST(sched.schedule().lr_at(2, 1.0) == 0.75);
}

// ---- Bad input -------------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(invalid_schedule_arguments_are_errors) {
  check_error([] { StepLR(0); }, "StepLR: step_size must be >= 1, got 0");
  check_error([] { StepLR(-3); }, "StepLR: step_size must be >= 1, got -3");
  check_error([] { StepLR(5, 0); }, "StepLR: gamma must be a finite number > 0, got 0");
  check_error([] { CosineAnnealingLR(0); }, "CosineAnnealingLR: T_max must be >= 1, got 0");
  check_error([] { CosineAnnealingLR(10, -0.1); }, "CosineAnnealingLR: eta_min must be a finite number >= 0, got -0.1");
  check_error([] { LinearLR(0.0); }, "LinearLR: start_factor must be in (0, 1], got 0");
  check_error([] { LinearLR(1.5); }, "LinearLR: start_factor must be in (0, 1], got 1.5");
  check_error([] { LinearLR(-0.1); }, "LinearLR: start_factor must be in (0, 1], got -0.1");
  check_error([] { LinearLR(0.5, 1.5); }, "LinearLR: end_factor must be in [0, 1], got 1.5");
  check_error([] { LinearLR(0.5, 1.0, 0); }, "LinearLR: total_iters must be >= 1, got 0");
  check_error([] { LinearWarmup(0, 0.1); }, "LinearWarmup: steps must be >= 1, got 0");
  check_error([] { LinearWarmup(5, 0); }, "LinearWarmup: start_factor must be in (0, 1], got 0");
  check_error([] { Chain(StepLR(1), StepLR(1), 0); }, "Chain: milestone (the step where the second schedule starts) must be >= 1, got 0");
  check_error([] { StepLR(2).lr_at(-1, 0.1); }, "StepLR(step_size=2, gamma=0.1): the step must be >= 0, got -1");
  SGD opt({tensor({0})}, {.lr = 0.1});
  LRScheduler sched(opt, StepLR(2));
  sched.step();
  check_error([&] { sched.set_step(-1); }, "LRScheduler.set_step: the step must be >= 0, got -1");
  BOOST_TEST(sched.last_step() == 1);
  BOOST_TEST(opt.lr() == 0.1);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_CASE(warmup_reaches_the_base_lr_at_its_last_step_and_constant_holds_it) {
  const Schedule w = Warmup(4);
  // lr (t + 1) / steps: 0.25, 0.5, 0.75, 1 of the base, then the base; worked by hand.
  const std::vector<double> want{0.1, 0.2, 0.3, 0.4, 0.4, 0.4};
  for (int64_t t = 0; t < 6; ++t) BOOST_TEST(w.lr_at(t, 0.4) == want[t], boost::test_tools::tolerance(1e-15));
  BOOST_TEST(w.lr_at(1, 0.3) == 0.3 * 2 / 4);  // bitwise: base * (t + 1), then / steps
  BOOST_TEST(w.name() == "Warmup(steps=4)");
  BOOST_CHECK_THROW(Warmup(0), Error);
  const Schedule c = Constant();
  for (int64_t t : {0, 1, 1000}) BOOST_TEST(c.lr_at(t, 0.05) == 0.05);
  // Warmup then cosine, as the experiments chain them: the cosine starts at the base lr.
  const Schedule wc = Chain(Warmup(2), CosineAnnealingLR(8), 2);
  BOOST_TEST(wc.lr_at(1, 0.1) == 0.1);
  BOOST_TEST(wc.lr_at(2, 0.1) == 0.1);
  BOOST_TEST(wc.lr_at(6, 0.1) == 0.05, boost::test_tools::tolerance(1e-15));
}
