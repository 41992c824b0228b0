// A model as the archs build it (archs.h: model.h's MLPs and CNNs, recurrent.h's LSTM): the
// network, where its hidden layers' activations can be observed, and its weight matrices.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/sequential.h"

namespace normlab::experiments {

// Where a hidden layer's activations can be observed: after its Linear or Conv2d ("pre"), after
// its norm ("post"; without a norm the layer's output is both), after its activation ("act").
struct Probe {
  std::shared_ptr<nn::Module> module;
  int layer;                       // hidden layer, from 0
  std::vector<std::string> where;  // the labels its output is recorded under, in order
};

// A built model, with what the experiments observe in it.
struct Model {
  std::shared_ptr<nn::Sequential> net;
  std::vector<Probe> probes;  // in forward order
  // The weight of every Linear and Conv2d, in order (the output layer last), with its state_dict name.
  std::vector<std::pair<std::string, autograd::Tensor>> weights;
};

}  // namespace normlab::experiments
