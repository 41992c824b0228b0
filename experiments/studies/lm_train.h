// `normlab train --dataset text`: one character language model (a GPT or a CharLSTM) trained for a number of
// steps on random windows of a text's training split, with its validation loss in nats and bits
// per character, its CSV files, plot, report, manifest and self-describing checkpoint.
#pragma once
#include <cstdint>
#include <string>

#include "data/text.h"
#include "experiments/config/lm_config.h"
#include "experiments/models/char_model.h"
#include "experiments/records/context.h"
#include "experiments/run/trainer.h"

namespace normlab::experiments::studies {

struct LmPlan {
  LmTrainConfig config;
  data::TextCorpus corpus;
};

// Trains, evaluates and writes steps.csv (step, loss, lr, grad_norm), evals.csv (step,
// val_loss, val_bits_per_char, windows; every --eval-every steps on the first kLmEvalWindows windows, and
// after the last step on every window), loss_curve.png/.svg, report.md, manifest.json and
// model.safetensors (metadata: language_model.h lm_metadata, plus steps and val_loss). Ctrl-C
// stops after the current step and writes what was done; a non-finite loss stops the run and saves
// model.diverged.safetensors.
Report run_lm_train(const LmPlan& plan, const StudyContext& ctx);

}  // namespace normlab::experiments::studies
