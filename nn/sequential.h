// Sequential: a chain of modules applied in order, children named "0", "1", ... as in PyTorch, so
// state_dict names read "0.weight", "1.running_mean".
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/module.h"

namespace normlab::nn {

/// A chain of modules applied in order, PyTorch's nn.Sequential; children named 0, 1, 2, ...
class Sequential : public Module {
 public:
  /// An empty chain; append with add().
  Sequential() = default;
  /// The modules in order: Sequential({std::make_shared<Linear>(2, 3, gen), std::make_shared<ReLU>()}).
  explicit Sequential(const std::vector<std::shared_ptr<Module>>& modules);

  /// Appends m as child number size(); returns m with its own type, so a caller can keep it:
  /// auto fc = seq.add(std::make_shared<Linear>(4, 2, gen)).
  template <typename M>
  std::shared_ptr<M> add(std::shared_ptr<M> m) {
    return register_module(std::to_string(size()), std::move(m));
  }

  /// x -> m_{n-1}(... m_1(m_0(x))); an empty Sequential returns x.
  Tensor forward(const Tensor& x) override;
  /// "Sequential" (str() adds the children as PyTorch prints them), or "Sequential()" when empty.
  std::string repr() const override;

  /// Number of modules.
  int64_t size() const { return static_cast<int64_t>(children().size()); }
  /// The module at index i (negative i counts from the end, as in Python); out of range is an error.
  std::shared_ptr<Module> at(int64_t i) const;
  std::shared_ptr<Module> operator[](int64_t i) const { return at(i); }  ///< at(i).
  /// The module at index i as an M (e.g. at<Linear>(0)); an error if it is not an M.
  template <typename M>
  std::shared_ptr<M> at(int64_t i) const {
    auto m = std::dynamic_pointer_cast<M>(at(i));
    if (!m) throw Error("Sequential: module " + std::to_string(i) + " is " + at(i)->repr() + ", not the type asked for");
    return m;
  }
};

}  // namespace normlab::nn
