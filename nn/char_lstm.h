// CharLSTM: a character-level LSTM language model, Embedding -> LSTM (batch_first) -> Linear to the
// vocabulary, with its state carried across calls for generation.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/embedding.h"
#include "nn/linear.h"
#include "nn/lstm.h"
#include "nn/module.h"

namespace normlab::nn {

/// CharLSTM's sizes.
struct CharLSTMConfig {
  int64_t vocab_size = 0;   ///< V, token ids in [0, V)
  int64_t embed_dim = 0;    ///< E
  int64_t hidden_size = 0;  ///< H
  int64_t num_layers = 1;  ///< L, stacked LSTM layers
};

/// Logits and the LSTM's last states (CharLSTM::forward_with_state).
struct CharLSTMOutput {
  Tensor logits;    ///< (B, T, V)
  /// The LSTM's last h, (num_layers, B, H).
  Tensor h_n, c_n;  ///< the LSTM's last c, (num_layers, B, H)
};

/// A character language model: an Embedding, an LSTM and a Linear head.
/// ids (B, T) -> logits (B, T, V):
///   x = embedding(ids)            (B, T, E), Embedding(V, E)
///   h = lstm(x)                   (B, T, H), LSTM(E, H, num_layers, batch_first=True)
///   logits = head(h)              Linear(H, V)
/// state_dict names: embedding.weight, lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0,
/// lstm.bias_hh_l0, ..., head.weight, head.bias: those of the PyTorch module
///   class CharLSTM(nn.Module): embedding = nn.Embedding(V, E); lstm = nn.LSTM(E, H, L, batch_first=True);
///                              head = nn.Linear(H, V)
/// with PyTorch's default inits (embedding N(0, 1), LSTM and Linear U(-1/sqrt(fan), 1/sqrt(fan))).
/// No sequence length limit (the positions are the recurrence); generation feeds the last states back.
class CharLSTM : public Module {
 public:
  /// Throws normlab::Error for a size < 1, naming the field.
  CharLSTM(const CharLSTMConfig& config, Generator& gen, DType dtype = DType::Float32);

  /// ids (flat, row-major) of shape (B, T) -> logits (B, T, V). A token id outside [0, vocab_size) is
  /// an error naming it and its position.
  Tensor forward(const std::vector<int64_t>& ids, const Shape& shape);
  /// The same with the ids in a (B, T) tensor of whole numbers.
  Tensor forward(const Tensor& ids) override;
  /// The logits and the last states, from the initial states h0, c0 (num_layers, B, H) (undefined:
  /// zeros): feeding a sequence in pieces, each piece with the previous piece's h_n, c_n, gives the
  /// logits of feeding it whole.
  CharLSTMOutput forward_with_state(const std::vector<int64_t>& ids, const Shape& shape, const Tensor& h0 = Tensor(),
                                    const Tensor& c0 = Tensor());
  /// "CharLSTM" (str() lists the children).
  std::string repr() const override { return "CharLSTM"; }

  const CharLSTMConfig& config() const { return config_; }  ///< The sizes given.

 private:
  CharLSTMConfig config_;
  std::shared_ptr<Embedding> embedding_;
  std::shared_ptr<LSTM> lstm_;
  std::shared_ptr<Linear> head_;
};

}  // namespace normlab::nn
