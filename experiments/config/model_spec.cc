// What model a run trains (model_spec.h).
#include "experiments/config/model_spec.h"

namespace normlab::experiments {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

}  // namespace normlab::experiments
