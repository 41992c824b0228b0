// The two kinds of character language model behind one interface: nn::GPT (--arch gpt) and
// nn::CharLSTM (--arch lstm on --dataset text): their settings, construction, forward, decoding one
// sequence for generation, and the checkpoint metadata that rebuilds them.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "experiments/config/model_spec.h"
#include "nn/char_lstm.h"
#include "nn/gpt.h"

namespace normlab::experiments {

class CharModel {
 public:
  // Builds the spec's model (nanoGPT's init for the GPT, PyTorch's defaults for the LSTM).
  CharModel(const CharModelSpec& spec, autograd::Generator& gen);
  // ids (B, T) flat row-major -> logits (B, T, V).
  autograd::Tensor forward(const std::vector<int64_t>& ids, const autograd::Shape& shape);
  nn::Module& module() { return *module_; }
  const nn::Module& module() const { return *module_; }
  const CharModelSpec& spec() const { return spec_; }
  // For reports: "GPT, 4 layers, 4 heads, width 128, block size 64, norm layer (pre-norm)" or
  // "CharLSTM, embedding 64, 1 layer of 256 units, window 64".
  std::string describe() const;
  nn::GPT* gpt() const { return gpt_.get(); }
  nn::CharLSTM* lstm() const { return lstm_.get(); }

 private:
  CharModelSpec spec_;
  std::shared_ptr<nn::GPT> gpt_;
  std::shared_ptr<nn::CharLSTM> lstm_;
  std::shared_ptr<nn::Module> module_;
};

// The next-character logits of one growing sequence, for generation: the GPT through
// nn::GPTDecoder's cache of keys and values (the context cropped to block_size as nanoGPT does),
// the LSTM carrying its (h, c) from call to call. The model must stay alive; it is put in eval mode.
class CharDecoder {
 public:
  explicit CharDecoder(CharModel& m);
  // Appends ids (n >= 1) and returns the logits (V) of the next character.
  std::vector<float> feed(const std::vector<int64_t>& ids);

 private:
  CharModel& m_;
  std::unique_ptr<nn::GPTDecoder> gpt_;
  autograd::Tensor h_, c_;  // the LSTM's state (num_layers, 1, H); undefined at first (zeros)
};

// The metadata that rebuilds the model (all strings): "arch" (gpt | lstm), "task":
// "language-model", "vocab_size", "block_size"; arch gpt: "n_layer", "n_head", "width", "norm"
// (layer | rms | batch | none), "position" (pre | post); arch lstm: "embed_dim", "hidden_size",
// "num_layers", "norm" (none).
std::map<std::string, std::string> char_model_metadata(const CharModelSpec& s);
// Back from a checkpoint's metadata; errors name `path` and the missing or malformed key.
CharModelSpec read_char_model_metadata(const std::map<std::string, std::string>& md, const std::string& path);

// The sizes of `s` (read from a checkpoint's metadata) against the checkpoint's tensors, before a
// model is built: a GPT's vocab_size, width and block_size against transformer.wte/wpe's shapes,
// n_layer against the blocks transformer.h.<i> the file holds, n_head dividing width; an LSTM's
// vocab_size and embed_dim against embedding.weight, hidden_size against lstm.weight_hh_l0,
// num_layers against the lstm.weight_ih_l<k> it holds. An edited size would otherwise build a
// model of any size before the weights are found not to fit. Errors name `path`, the key, the
// tensor and both values.
void check_char_model_sizes(const CharModelSpec& s, const autograd::NamedTensors& tensors, const std::string& path);

// A language model checkpoint's metadata fraction `key`: a number in (0, 1) (the validation
// fraction of a split that has one); errors name `path`, the key and the value.
double lm_metadata_fraction(const std::map<std::string, std::string>& md, const std::string& path,
                            const std::string& key);

// A language model checkpoint's metadata value `key`: a whole number of at least 1, or any text.
// A missing key or a bad number is an error naming the file (`path`) and the key.
int64_t lm_metadata_size(const std::map<std::string, std::string>& md, const std::string& path, const std::string& key);
std::string lm_metadata_text(const std::map<std::string, std::string>& md, const std::string& path,
                             const std::string& key);

}  // namespace normlab::experiments
