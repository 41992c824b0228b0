// How large a model here may be, checked before anything is allocated: one layer's weights, one
// sample's activations in one layer, one training batch's activations. The limits are far above
// any model a CPU trains and far below what would exhaust memory, so a size typed by mistake
// (--width 1048576, --hidden 100000, --batch-size 100000000) is refused at once, naming its flag,
// instead of ending in an out-of-memory error minutes later.
#pragma once
#include <cstdint>
#include <string>

#include "experiments/config/model_spec.h"

namespace normlab::experiments {

inline constexpr double kMaxWeights = double(int64_t{1} << 28);       // 1 GiB of float32
inline constexpr double kMaxActivations = double(int64_t{1} << 26);   // 256 MiB of float32, per sample
inline constexpr double kMaxBatchValues = double(int64_t{1} << 31);   // 8 GiB of float32, one batch

// "1234567" below 10^9, "1.23e+10" above.
std::string value_count(double values);

// Throws normlab::Error unless values <= most: "<flags>: <what> would be <formula> = <n> values,
// more than the <most> (<GiB> of float32) <scope> may hold here; give <fix>".
void check_values(const std::string& flags, const std::string& what, const std::string& formula, double values,
                  double most, const std::string& scope, const std::string& fix);

// The flags a character model's sizes were typed with, for the errors: train's and compare's by
// default; a sweep's batch sizes come from --batch-sizes, the study's GPT part from --gpt-*.
struct CharModelFlags {
  std::string width = "--width";
  std::string layers = "--layers";
  std::string heads = "--heads";
  std::string block = "--block-size";
  std::string hidden = "--hidden";
  std::string batch = "--batch-size";
};

// A character language model's sizes (GPT: --layers, --width, --heads, --block-size; LSTM:
// --width as embed_dim, --hidden, --layers) and its training batch (--batch-size windows of
// --block-size characters) against the limits; errors name the flags (as `flags` says) with their values.
void check_char_model_size(const CharModelSpec& s, int64_t batch, const CharModelFlags& flags = {});

// An LSTM classifier's layers (--hidden) on T steps of I features against the limits.
void check_lstm_size(int64_t features, int64_t hidden, int64_t layers, int64_t steps);

}  // namespace normlab::experiments
