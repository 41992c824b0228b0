// The training loop, the same for every family: epochs of batches (a language model's run is one
// epoch of its steps), each batch one training step (step.h), the loop stopped by a non-finite
// loss (diverged), by Ctrl-C (interrupt.h: interrupted) or by the family after an epoch (early
// stopping, a test loss that is not finite). A family's run says what its epochs, batches and
// records are: the classifiers' in trainer.cc, the language models' in lm_run.cc.
#pragma once
#include <cmath>
#include <cstdint>

#include "experiments/run/step.h"
#include "experiments/support/interrupt.h"

namespace normlab::experiments {

// Where a run is: the epoch in progress (from 1), the batches of it done, the steps done.
struct LoopPosition {
  int64_t epoch = 1, batch = 0, step = 0;
};

// How the loop ended.
enum class LoopEnd {
  Finished,     // every epoch's every batch
  Diverged,     // a step's loss was not finite: position.step is that step's index
  Interrupted,  // stopped after a step (Ctrl-C)
  Stopped,      // the run's epoch_end stopped it
};

// What run_loop asks of a family's run R: R::Task, its task of train_step (step.h), and
//   task()                  that task
//   epochs()                the run's epochs
//   batches()               the batches of an epoch
//   epoch_begin(p)          before the epoch's first step (p.epoch; p.batch: the first batch)
//   batch(p)                batch p.batch of epoch p.epoch, the step's index p.step
//   step_done(p)            after a step whose loss was finite (p counts it)
//   stop_asked(p)           after that: true stops the run (its rule for Ctrl-C)
//   epoch_end(p)            after the epoch's last step: true stops the run
// The loop counts every finished step (count_step, interrupt.h) before asking stop_asked.
template <class R>
LoopEnd run_loop(R& run, Optimization& o, LoopPosition& p) {
  for (; p.epoch <= run.epochs(); ++p.epoch, p.batch = 0) {
    run.epoch_begin(p);
    while (p.batch < run.batches()) {
      const typename R::Task::Batch b = run.batch(p);
      if (!std::isfinite(train_step(run.task(), o, b).loss)) return LoopEnd::Diverged;
      ++p.step, ++p.batch;
      run.step_done(p);
      count_step();
      if (run.stop_asked(p)) return LoopEnd::Interrupted;
    }
    if (run.epoch_end(p)) return LoopEnd::Stopped;
  }
  return LoopEnd::Finished;
}

}  // namespace normlab::experiments
