// The models of the experiments: MLPs (Linear -> norm -> activation in every hidden layer) and
// convolutional networks described by a layer string, each ending in a plain Linear for the logits
// (never normalized). Norms and activations come from the registry.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "experiments/config/model_spec.h"
#include "experiments/models/built_model.h"
#include "nn/sequential.h"

namespace normlab::experiments {

// Throws normlab::Error for an unknown norm or activation, widths that do not fit the norm, an
// image shape that does not match the inputs, or a layer string that cannot be built (naming the
// token, what it expected and the activation shape it met).
void validate(const ModelSpec& spec);
// Builds the model with PyTorch's default initialization drawn from gen. A CNN starts with
// nn::Unflatten-like reshaping of the (N, C H W) rows to (N, C, H, W).
Model build_model(const ModelSpec& spec, autograd::Generator& gen);
// "784-256-256-10" (mlp); "1x28x28-conv32k3p1-norm-act-maxpool2-conv64k3p1-norm-act-maxpool2-10" (cnn).
std::string describe(const ModelSpec& spec);
// What a checkpoint records to rebuild the model: arch, sizes or layer string, image shape, norm
// (and its options), activation.
std::map<std::string, std::string> checkpoint_metadata(const ModelSpec& spec);
// The spec that checkpoint_metadata recorded (arch, inputs, outputs, hidden or layers and
// image_shape, norm, norm.num_groups, activation); errors name `file` and the missing or bad key.
ModelSpec model_spec_from_metadata(const std::map<std::string, std::string>& metadata, const std::string& file);
// A checkpoint's model and tensors checked before they are loaded: the spec builds a model (else
// the error names `file`), the "model" field describes that model (an edited one is refused,
// naming a tensor whose shape would differ and both shapes), and every value is finite (NaN or
// infinite weights name the tensor).
void check_checkpoint_tensors(const std::map<std::string, std::string>& metadata, const ModelSpec& spec,
                              const autograd::NamedTensors& tensors, const std::string& file);
// Every value of every tensor finite; else an error naming `file`, the tensor and the element.
void check_finite_tensors(const autograd::NamedTensors& tensors, const std::string& file);

}  // namespace normlab::experiments
