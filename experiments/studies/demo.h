// `normlab demo`: a tiny network trained by hand on XOR, to show the loss going down.
#pragma once
#include <cstdint>

namespace normlab::experiments::studies {

// Trains for `steps` SGD steps and prints the loss; returns 0 if the loss fell.
int run_demo(int steps = 300, uint64_t seed = 0);

}  // namespace normlab::experiments::studies
