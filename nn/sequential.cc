// Sequential: chaining, indexing and printing.
#include "nn/sequential.h"

namespace normlab::nn {

Sequential::Sequential(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) add(m);
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (const auto& [name, m] : children()) h = (*m)(h);  // through operator(): the child's forward hooks run
  return h;
}

std::string Sequential::repr() const { return children().empty() ? "Sequential()" : "Sequential"; }

std::shared_ptr<Module> Sequential::at(int64_t i) const {
  const int64_t n = size();
  if (i < -n || i >= n)
    throw Error("Sequential: index " + std::to_string(i) + " is out of range for a Sequential of " + std::to_string(n) +
                " module" + (n == 1 ? "" : "s"));
  return children()[i < 0 ? i + n : i].second;
}

}  // namespace normlab::nn
