// The lstm arch's model (recurrent.h): rows in, the last hidden state out to the classifier.
#include "experiments/models/recurrent.h"

#include <algorithm>

#include "autograd/shape_ops.h"
#include "base/error.h"
#include "experiments/models/size_limits.h"
#include "nn/bn_lstm.h"
#include "nn/flatten.h"
#include "nn/linear.h"
#include "nn/ln_lstm.h"
#include "nn/lstm.h"

namespace normlab::experiments {

namespace {

// The output of the last step: (B, T, H) -> (B, H). PyTorch writes it output[:, -1].
class LastStep : public nn::Module {
 public:
  autograd::Tensor forward(const autograd::Tensor& x) override { return autograd::select(x, 1, x.size(1) - 1); }
  std::string repr() const override { return "LastStep()"; }
};

std::shared_ptr<nn::Module> make_cell(const std::string& norm, int64_t inputs, int64_t hidden, int64_t layers,
                                      int64_t steps, autograd::Generator& gen) {
  // noisybatch: the recurrent BatchNorm LSTM with NoisyBatchNorm's noise on its three BatchNorms,
  // seeded from the model's generator (a copy: the weights are those of "batch").
  if (norm == "noisybatch")
    return std::make_shared<nn::BatchNormLSTM>(
        inputs, hidden, gen,
        nn::BatchNormLSTMOptions{.num_layers = layers, .batch_first = true, .max_steps = steps,
                                 .noise = nn::NoiseOptions{}, .noise_seed = autograd::Generator(gen).next_u64()});
  if (norm == "layer")
    return std::make_shared<nn::LayerNormLSTM>(inputs, hidden, gen,
                                               nn::LayerNormLSTMOptions{.num_layers = layers, .batch_first = true});
  if (norm == "batch" || norm == "batch-shared")
    return std::make_shared<nn::BatchNormLSTM>(
        inputs, hidden, gen,
        nn::BatchNormLSTMOptions{.num_layers = layers, .batch_first = true, .max_steps = steps,
                                 .shared_statistics = norm == "batch-shared"});
  return std::make_shared<nn::LSTM>(inputs, hidden, gen, nn::LSTMOptions{.num_layers = layers, .batch_first = true});
}

}  // namespace

const char* lstm_norm_names() { return "none, layer, batch, batch-shared or noisybatch"; }

void build_lstm(const ModelSpec& s, autograd::Generator* gen, Model* m) {
  if (s.norm != "none" && s.norm != "layer" && s.norm != "batch" && s.norm != "batch-shared" && s.norm != "noisybatch")
    throw Error("--arch lstm: --norm " + s.norm + " is not a norm of an LSTM cell (expected " + lstm_norm_names() +
                ": none is PyTorch's nn.LSTM, layer the LayerNorm LSTM, batch the recurrent BatchNorm LSTM with "
                "statistics per time step, batch-shared the same with one set of statistics for all steps, noisybatch "
                "the recurrent BatchNorm LSTM with a random scale and shift after each BatchNorm at every step)");
  if (s.image.size() != 3 || s.image[0] != 1)
    throw Error("--arch lstm reads each image as a sequence of its rows, so it needs images of 1 channel (C,H,W = "
                "1,H,W), got --image-shape " + shape_text(s.image));
  if (s.hidden.empty() || std::any_of(s.hidden.begin(), s.hidden.end(), [&](int64_t h) { return h != s.hidden[0]; }))
    throw Error("--arch lstm: every layer of an LSTM has the same width: give --hidden 128 (one layer) or 128,128 "
                "(two), got --hidden " + shape_text(s.hidden));
  const int64_t steps = s.image[1], features = s.image[2], hidden = s.hidden[0];
  const int64_t layers = static_cast<int64_t>(s.hidden.size());
  check_lstm_size(features, hidden, layers, steps);
  if (!m) return;
  m->net->add(std::make_shared<nn::Unflatten>(1, autograd::Shape{steps, features}));
  auto cell = m->net->add(make_cell(s.norm, features, hidden, layers, steps, *gen));
  for (const auto& [name, t] : cell->named_parameters())
    if (name.rfind("weight_", 0) == 0) m->weights.emplace_back("1." + name, t);
  auto last = m->net->add(std::make_shared<LastStep>());
  m->probes.push_back({last, 0, {"act"}});
  auto head = std::make_shared<nn::Linear>(hidden, s.outputs, *gen);
  m->weights.emplace_back("3.weight", head->weight());
  m->net->add(head);
}

std::vector<std::string> lstm_weight_names(const ModelSpec& s) {
  std::vector<std::string> names;
  for (size_t k = 1; k <= s.hidden.size(); ++k)
    for (const char* w : {" input-to-hidden", " hidden-to-hidden"}) names.push_back("LSTM layer " + std::to_string(k) + w);
  names.push_back("output Linear");
  return names;
}

}  // namespace normlab::experiments
