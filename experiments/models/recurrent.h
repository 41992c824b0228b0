// The lstm arch's model: each image read as a sequence of its rows (Fashion-MNIST: 28 steps of 28
// pixels), an LSTM whose --norm picks the cell (none: nn::LSTM; layer: the LayerNorm LSTM of Ba,
// Kiros and Hinton; batch: the recurrent BatchNorm LSTM of Cooijmans et al., statistics per step;
// batch-shared: the same with one set of statistics for every step), its last hidden state to the
// classifier Linear.
#pragma once
#include "experiments/config/model_spec.h"
#include "experiments/models/built_model.h"

namespace normlab::experiments {

// The norms an LSTM cell can have, for messages: "none, layer, batch or batch-shared".
const char* lstm_norm_names();

// Builds (gen and m given) or only checks (both null) the lstm arch's model of spec:
//   Unflatten(1, (H, W)) -> LSTM(W, hidden, num_layers) batch_first -> LastStep -> Linear(hidden, outputs)
// for images (1, H, W), with hidden = spec.hidden (every layer as wide: --hidden 128,128 is two
// layers of 128). Errors name the flag: more than one channel, unequal widths, a norm no LSTM cell has.
void build_lstm(const ModelSpec& spec, autograd::Generator* gen, Model* m);

// The names of its weight matrices in Model::weights' order, as the reports title them: "LSTM layer
// k input-to-hidden" (weight_ih_l{k-1}) and "LSTM layer k hidden-to-hidden" (weight_hh_l{k-1}) for
// every layer, then "output Linear".
std::vector<std::string> lstm_weight_names(const ModelSpec& spec);

}  // namespace normlab::experiments
