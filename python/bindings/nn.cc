// normlab._normlab._nn: the C++ modules behind normlab.nn (python/normlab/nn/), built with
// PyTorch's constructor arguments and defaults, their weights drawn from the default generator;
// a module's forward, parameters, buffers, state_dict, train/eval and dtype; safetensors files.
// The forward passes run without the GIL.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nn/nn.h"
#include "nn/noisy_batchnorm.h"
#include "nn/syncbatchnorm.h"
#include "serialize/safetensors.h"
#include "python/bindings/bindings.h"
#include "python/bindings/convert.h"

namespace normlab::python {

namespace {

using nn::Module;
using ModulePtr = std::shared_ptr<Module>;

// A kernel size, stride or padding given as an int or a pair (h, w).
nn::Size2d size2d(const py::object& o, const char* what) {
  const bool single = py::isinstance<py::int_>(o);
  const std::vector<int64_t> v = int_list(o, what);
  if (single) return nn::Size2d(v[0]);
  if (v.size() != 2) throw py::type_error(std::string(what) + " must be an int or a pair of ints, got " + std::string(py::repr(o)));
  return nn::Size2d(v[0], v[1]);
}

// normalized_shape given as an int or a sequence of ints.
Shape shape_arg(const py::object& o) { return int_list(o, "normalized_shape"); }

// The module in dtype (a module built in float32 and converted, as model.double() does).
ModulePtr in_dtype(ModulePtr m, const py::object& dtype) {
  const DType d = parse_dtype(dtype, DType::Float32);
  if (d != DType::Float32) m->to(d);
  return m;
}

// PyTorch's (output, (h_n, c_n)) of an LSTM module; hx = None or (h0, c0).
template <typename L>
py::tuple lstm_forward(L& lstm, const Tensor& x, const py::object& hx) {
  Tensor h0, c0;
  if (!hx.is_none()) {
    const bool pair = (py::isinstance<py::tuple>(hx) || py::isinstance<py::list>(hx)) && py::len(hx) == 2 &&
                      py::isinstance<Tensor>(hx[py::int_(0)]) && py::isinstance<Tensor>(hx[py::int_(1)]);
    if (!pair)
      throw py::type_error(lstm.repr() + ": hx must be a pair (h_0, c_0) of Tensors, got " + std::string(py::repr(hx)));
    h0 = hx[py::int_(0)].cast<Tensor>(), c0 = hx[py::int_(1)].cast<Tensor>();
  }
  nn::LSTMOutput out;
  {
    py::gil_scoped_release release;
    out = lstm.forward_with_state(x, h0, c0);
  }
  return py::make_tuple(out.output, py::make_tuple(out.h_n, out.c_n));
}

}  // namespace

void bind_nn(py::module_& parent) {
  py::module_ m = parent.def_submodule("_nn", "normlab's C++ modules (use them through normlab.nn)");
  auto& gen = default_generator();

  py::class_<Module, ModulePtr>(m, "NativeModule", "A C++ module (normlab::nn::Module).")
      .def("forward", [](Module& self, const Tensor& x) {
        py::gil_scoped_release release;
        return self(x);
      }, py::arg("input"))
      .def("train", [](Module& self, bool on) { self.train(on); }, py::arg("mode") = true)
      .def_property_readonly("training", &Module::is_training)
      .def("named_parameters", &Module::named_parameters)
      .def("named_buffers", &Module::named_buffers)
      .def("state_dict", &Module::state_dict)
      .def("load_state_dict", &Module::load_state_dict, py::arg("state"))
      .def("zero_grad", &Module::zero_grad)
      .def("to", [](Module& self, const py::object& dtype) { self.to(parse_dtype(dtype, DType::Float32)); })
      .def("repr", &Module::repr)
      .def("str", &Module::str)
      .def("save", [](const Module& self, const std::string& path) { nn::save_module(path, self); }, py::arg("path"))
      .def("load", [](Module& self, const std::string& path) { nn::load_module(path, self); }, py::arg("path"));

  // The LSTMs' forward with states.
  py::class_<nn::LSTM, Module, std::shared_ptr<nn::LSTM>>(m, "LSTM")
      .def("forward_with_state", &lstm_forward<nn::LSTM>, py::arg("input"), py::arg("hx") = py::none());
  py::class_<nn::LayerNormLSTM, Module, std::shared_ptr<nn::LayerNormLSTM>>(m, "LayerNormLSTM")
      .def("forward_with_state", &lstm_forward<nn::LayerNormLSTM>, py::arg("input"), py::arg("hx") = py::none());
  py::class_<nn::BatchNormLSTM, Module, std::shared_ptr<nn::BatchNormLSTM>>(m, "BatchNormLSTM")
      .def("forward_with_state", &lstm_forward<nn::BatchNormLSTM>, py::arg("input"), py::arg("hx") = py::none());

  // Layers with PyTorch's arguments.
  m.def("linear", [&gen](int64_t in, int64_t out, bool bias, const py::object& dtype) {
    return in_dtype(std::make_shared<nn::Linear>(in, out, gen, bias), dtype);
  }, py::arg("in_features"), py::arg("out_features"), py::arg("bias") = true, py::arg("dtype") = py::none());
  m.def("conv2d", [&gen](int64_t in, int64_t out, const py::object& k, const py::object& stride,
                         const py::object& padding, const py::object& dilation, int64_t groups, bool bias,
                         const py::object& dtype) {
    nn::Conv2dOptions o;
    o.stride = size2d(stride, "stride"), o.padding = size2d(padding, "padding");
    o.dilation = size2d(dilation, "dilation"), o.groups = groups, o.bias = bias;
    return in_dtype(std::make_shared<nn::Conv2d>(in, out, size2d(k, "kernel_size"), gen, o), dtype);
  }, py::arg("in_channels"), py::arg("out_channels"), py::arg("kernel_size"), py::arg("stride") = 1,
     py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("bias") = true,
     py::arg("dtype") = py::none());
  m.def("max_pool2d", [](const py::object& k, const py::object& stride, const py::object& padding,
                         const py::object& dilation) -> ModulePtr {
    std::optional<nn::Size2d> s;
    if (!stride.is_none()) s = size2d(stride, "stride");
    return std::make_shared<nn::MaxPool2d>(size2d(k, "kernel_size"), s, size2d(padding, "padding"),
                                           size2d(dilation, "dilation"));
  }, py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0, py::arg("dilation") = 1);
  m.def("avg_pool2d", [](const py::object& k, const py::object& stride, const py::object& padding,
                         bool count_include_pad) -> ModulePtr {
    std::optional<nn::Size2d> s;
    if (!stride.is_none()) s = size2d(stride, "stride");
    return std::make_shared<nn::AvgPool2d>(size2d(k, "kernel_size"), s, size2d(padding, "padding"), count_include_pad);
  }, py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
     py::arg("count_include_pad") = true);
  m.def("adaptive_avg_pool2d", [](const py::object& size) -> ModulePtr {
    return std::make_shared<nn::AdaptiveAvgPool2d>(size2d(size, "output_size"));
  }, py::arg("output_size"));

  // The norms.
  m.def("batch_norm", [](int64_t dims, int64_t n, double eps, const std::optional<double>& momentum, bool affine,
                         bool track, const py::object& dtype) -> ModulePtr {
    const DType d = parse_dtype(dtype, DType::Float32);
    if (dims == 1) return std::make_shared<nn::BatchNorm1d>(n, eps, momentum, affine, track, d);
    return std::make_shared<nn::BatchNorm2d>(n, eps, momentum, affine, track, d);
  }, py::arg("dims"), py::arg("num_features"), py::arg("eps") = 1e-5, py::arg("momentum") = 0.1,
     py::arg("affine") = true, py::arg("track_running_stats") = true, py::arg("dtype") = py::none());
  m.def("sync_batch_norm", [](int64_t n, double eps, const std::optional<double>& momentum, bool affine, bool track,
                              const py::object& dtype) -> ModulePtr {
    return std::make_shared<nn::SyncBatchNorm>(n, eps, momentum, affine, track, parse_dtype(dtype, DType::Float32));
  }, py::arg("num_features"), py::arg("eps") = 1e-5, py::arg("momentum") = 0.1, py::arg("affine") = true,
     py::arg("track_running_stats") = true, py::arg("dtype") = py::none());
  m.def("noisy_batch_norm", [&gen](bool image, int64_t n, const py::object& seed, double scale_lo, double scale_hi,
                                   double shift_lo, double shift_hi, const py::object& dtype) -> ModulePtr {
    nn::NoiseOptions noise;
    noise.scale_lo = scale_lo, noise.scale_hi = scale_hi, noise.shift_lo = shift_lo, noise.shift_hi = shift_hi;
    const uint64_t s = seed.is_none() ? gen.next_u64() : seed.cast<uint64_t>();
    return std::make_shared<nn::NoisyBatchNorm>(n, image, s, noise, parse_dtype(dtype, DType::Float32));
  }, py::arg("image"), py::arg("num_features"), py::arg("seed") = py::none(), py::arg("scale_lo") = 0.5,
     py::arg("scale_hi") = 2.0, py::arg("shift_lo") = -0.5, py::arg("shift_hi") = 1.5, py::arg("dtype") = py::none());
  m.def("layer_norm", [](const py::object& shape, double eps, bool affine, bool bias, const py::object& dtype) -> ModulePtr {
    return std::make_shared<nn::LayerNorm>(shape_arg(shape), eps, affine, bias, parse_dtype(dtype, DType::Float32));
  }, py::arg("normalized_shape"), py::arg("eps") = 1e-5, py::arg("elementwise_affine") = true, py::arg("bias") = true,
     py::arg("dtype") = py::none());
  m.def("group_norm", [](int64_t groups, int64_t channels, double eps, bool affine, const py::object& dtype) -> ModulePtr {
    return std::make_shared<nn::GroupNorm>(groups, channels, eps, affine, parse_dtype(dtype, DType::Float32));
  }, py::arg("num_groups"), py::arg("num_channels"), py::arg("eps") = 1e-5, py::arg("affine") = true,
     py::arg("dtype") = py::none());
  m.def("instance_norm2d", [](int64_t n, double eps, double momentum, bool affine, bool track,
                              const py::object& dtype) -> ModulePtr {
    return std::make_shared<nn::InstanceNorm2d>(n, eps, momentum, affine, track, parse_dtype(dtype, DType::Float32));
  }, py::arg("num_features"), py::arg("eps") = 1e-5, py::arg("momentum") = 0.1, py::arg("affine") = false,
     py::arg("track_running_stats") = false, py::arg("dtype") = py::none());
  m.def("rms_norm", [](const py::object& shape, const std::optional<double>& eps, bool affine,
                       const py::object& dtype) -> ModulePtr {
    return std::make_shared<nn::RMSNorm>(shape_arg(shape), eps, affine, parse_dtype(dtype, DType::Float32));
  }, py::arg("normalized_shape"), py::arg("eps") = py::none(), py::arg("elementwise_affine") = true,
     py::arg("dtype") = py::none());

  // Embedding, activations, dropout, flatten.
  m.def("embedding", [&gen](int64_t n, int64_t dim, const py::object& dtype) -> ModulePtr {
    return std::make_shared<nn::Embedding>(n, dim, gen, parse_dtype(dtype, DType::Float32));
  }, py::arg("num_embeddings"), py::arg("embedding_dim"), py::arg("dtype") = py::none());
  m.def("relu", []() -> ModulePtr { return std::make_shared<nn::ReLU>(); });
  m.def("tanh", []() -> ModulePtr { return std::make_shared<nn::Tanh>(); });
  m.def("sigmoid", []() -> ModulePtr { return std::make_shared<nn::Sigmoid>(); });
  m.def("gelu", []() -> ModulePtr { return std::make_shared<nn::GELU>(); });
  m.def("identity", []() -> ModulePtr { return std::make_shared<nn::Identity>(); });
  m.def("dropout", [&gen](double p) -> ModulePtr { return std::make_shared<nn::Dropout>(p, gen.next_u64()); },
        py::arg("p") = 0.5);
  m.def("flatten", [](int64_t start, int64_t end) -> ModulePtr { return std::make_shared<nn::Flatten>(start, end); },
        py::arg("start_dim") = 1, py::arg("end_dim") = -1);

  // The recurrent and transformer models.
  m.def("lstm", [&gen](int64_t in, int64_t hidden, int64_t layers, bool bias, bool batch_first, const py::object& dtype) {
    nn::LSTMOptions o;
    o.num_layers = layers, o.bias = bias, o.batch_first = batch_first, o.dtype = parse_dtype(dtype, DType::Float32);
    return std::make_shared<nn::LSTM>(in, hidden, gen, o);
  }, py::arg("input_size"), py::arg("hidden_size"), py::arg("num_layers") = 1, py::arg("bias") = true,
     py::arg("batch_first") = false, py::arg("dtype") = py::none());
  m.def("layer_norm_lstm", [&gen](int64_t in, int64_t hidden, int64_t layers, bool batch_first, double eps,
                                  const py::object& dtype) {
    nn::LayerNormLSTMOptions o;
    o.num_layers = layers, o.batch_first = batch_first, o.eps = eps, o.dtype = parse_dtype(dtype, DType::Float32);
    return std::make_shared<nn::LayerNormLSTM>(in, hidden, gen, o);
  }, py::arg("input_size"), py::arg("hidden_size"), py::arg("num_layers") = 1, py::arg("batch_first") = false,
     py::arg("eps") = 1e-5, py::arg("dtype") = py::none());
  m.def("batch_norm_lstm", [&gen](int64_t in, int64_t hidden, int64_t layers, bool batch_first, int64_t max_steps,
                                  bool shared, double momentum, double eps, double gamma_init, const py::object& dtype) {
    nn::BatchNormLSTMOptions o;
    o.num_layers = layers, o.batch_first = batch_first, o.max_steps = max_steps, o.shared_statistics = shared;
    o.momentum = momentum, o.eps = eps, o.gamma_init = gamma_init, o.dtype = parse_dtype(dtype, DType::Float32);
    return std::make_shared<nn::BatchNormLSTM>(in, hidden, gen, o);
  }, py::arg("input_size"), py::arg("hidden_size"), py::arg("num_layers") = 1, py::arg("batch_first") = false,
     py::arg("max_steps") = 100, py::arg("shared_statistics") = false, py::arg("momentum") = 0.1,
     py::arg("eps") = 1e-5, py::arg("gamma_init") = 0.1, py::arg("dtype") = py::none());
  m.def("transformer_block", [&gen](int64_t width, int64_t heads, const std::string& norm, const std::string& position,
                                    int64_t n_layer, const py::object& dtype) -> ModulePtr {
    return std::make_shared<nn::TransformerBlock>(width, heads, nn::parse_block_norm(norm),
                                                  nn::parse_norm_position(position), gen, n_layer,
                                                  parse_dtype(dtype, DType::Float32));
  }, py::arg("width"), py::arg("n_head"), py::arg("norm") = "layer", py::arg("position") = "pre",
     py::arg("n_layer") = 1, py::arg("dtype") = py::none());
  m.def("gpt", [&gen](int64_t vocab, int64_t block, int64_t layers, int64_t heads, int64_t width,
                      const std::string& norm, const std::string& position, const py::object& dtype) -> ModulePtr {
    nn::GPTConfig c;
    c.vocab_size = vocab, c.block_size = block, c.n_layer = layers, c.n_head = heads, c.width = width;
    c.norm = nn::parse_block_norm(norm), c.position = nn::parse_norm_position(position);
    return std::make_shared<nn::GPT>(c, gen, parse_dtype(dtype, DType::Float32));
  }, py::arg("vocab_size"), py::arg("block_size"), py::arg("n_layer"), py::arg("n_head"), py::arg("width"),
     py::arg("norm") = "layer", py::arg("position") = "pre", py::arg("dtype") = py::none());

  // safetensors files of named tensors (the command's checkpoints hold a module's state_dict).
  m.def("save_file", [](const NamedTensors& tensors, const std::string& path,
                        const std::map<std::string, std::string>& metadata) {
    serialize::save_safetensors(path, tensors, metadata);
  }, py::arg("tensors"), py::arg("path"), py::arg("metadata") = std::map<std::string, std::string>{});
  m.def("load_file", [](const std::string& path) {
    auto f = serialize::load_safetensors(path);
    return py::make_tuple(f.tensors, f.metadata);
  }, py::arg("path"));
}

}  // namespace normlab::python
