"""The layers of normlab.nn, with torch.nn's names, constructor arguments and defaults: each holds a
C++ module (normlab._normlab._nn) whose forward, parameters and buffers it exposes. Their weights are
drawn from the generator normlab.manual_seed seeds. A layer's tensors are read as attributes
(`linear.weight`, `bn.running_mean`); new values are copied in (load_state_dict, or copy_ under
no_grad), since the C++ module keeps its own tensors."""
import numpy as np

from .._normlab import Tensor, _nn, tensor
from .module import Module

__all__ = ["Linear", "Conv2d", "MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "BatchNorm1d", "BatchNorm2d",
           "SyncBatchNorm", "NoisyBatchNorm1d", "NoisyBatchNorm2d", "LayerNorm", "GroupNorm", "InstanceNorm2d",
           "RMSNorm", "Embedding", "ReLU", "Tanh", "Sigmoid", "GELU", "Identity", "Dropout", "Flatten", "LSTM", "LayerNormLSTM", "BatchNormLSTM", "TransformerBlock", "GPT"]


def _build(who, make, *args, **kwargs):
    """The C++ module make(...) builds; its argument errors as ValueError (as torch.nn's are)."""
    try:
        return make(*args, **kwargs)
    except RuntimeError as e:
        message = str(e)
        raise ValueError(message if message.startswith(who) else f"{who}: {message}") from None


class _NativeModule(Module):
    """A Module whose forward, parameters and buffers are a C++ module's."""

    def __init__(self, native):
        super().__init__()
        self.__dict__["_native"] = native

    def forward(self, input):
        return self._native.forward(input)

    def __call__(self, *args, **kwargs):
        if not self.__dict__["_forward_hooks"]:
            return self.forward(*args, **kwargs)
        return Module.__call__(self, *args, **kwargs)

    def _tensor_named(self, name):
        for n, t in self._native.named_parameters() + self._native.named_buffers():
            if n == name:
                return t
        return None

    def __getattr__(self, name):
        native = self.__dict__.get("_native")
        if native is not None and not name.startswith("_"):
            t = self._tensor_named(name)
            if t is not None:
                return t
        return Module.__getattr__(self, name)

    def __setattr__(self, name, value):
        native = self.__dict__.get("_native")
        if native is not None and self._tensor_named(name) is not None:
            raise AttributeError(f"{type(self).__name__}.{name} is kept by the C++ module: copy new values in "
                                 f"(load_state_dict, or `with normlab.no_grad(): m.{name}.copy_(values)`)")
        Module.__setattr__(self, name, value)

    def _own_parameters(self):
        return self._native.named_parameters()

    def _own_buffers(self, persistent_only=False):
        return self._native.named_buffers()

    def _state_items(self):
        return self._native.state_dict()

    def train(self, mode=True):
        Module.train(self, mode)
        self._native.train(mode)
        return self

    def _convert(self, dtype):
        self._native.to(dtype)

    def __repr__(self):
        return self._native.str()


class Linear(_NativeModule):
    """y = x W^T + b; weight (out_features, in_features) and bias drawn from U(-1/sqrt(in), 1/sqrt(in))."""

    def __init__(self, in_features, out_features, bias=True, dtype=None):
        super().__init__(_build("Linear", _nn.linear, in_features, out_features, bias, dtype))
        self.in_features, self.out_features = in_features, out_features


class Conv2d(_NativeModule):
    """2-D convolution: x (N, C, H, W) -> (N, out_channels, OH, OW)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, dtype=None):
        super().__init__(_build("Conv2d", _nn.conv2d, in_channels, out_channels, kernel_size, stride, padding,
                                dilation, groups, bias, dtype))
        self.in_channels, self.out_channels = in_channels, out_channels


class MaxPool2d(_NativeModule):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1):
        super().__init__(_build("MaxPool2d", _nn.max_pool2d, kernel_size, stride, padding, dilation))


class AvgPool2d(_NativeModule):
    def __init__(self, kernel_size, stride=None, padding=0, count_include_pad=True):
        super().__init__(_build("AvgPool2d", _nn.avg_pool2d, kernel_size, stride, padding, count_include_pad))


class AdaptiveAvgPool2d(_NativeModule):
    def __init__(self, output_size):
        super().__init__(_build("AdaptiveAvgPool2d", _nn.adaptive_avg_pool2d, output_size))


class BatchNorm1d(_NativeModule):
    """Batch normalization of x (N, C) or (N, C, L) over the batch (and L): batch statistics in
    training, the running ones (momentum 0.1; None: a cumulative average) in eval."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, dtype=None):
        super().__init__(_build("BatchNorm1d", _nn.batch_norm, 1, num_features, eps, momentum, affine,
                                track_running_stats, dtype))
        self.num_features = num_features
        self._args = dict(eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats)


class BatchNorm2d(_NativeModule):
    """Batch normalization of x (N, C, H, W) per channel over N, H and W."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, dtype=None):
        super().__init__(_build("BatchNorm2d", _nn.batch_norm, 2, num_features, eps, momentum, affine,
                                track_running_stats, dtype))
        self.num_features = num_features
        self._args = dict(eps=eps, momentum=momentum, affine=affine, track_running_stats=track_running_stats)


class SyncBatchNorm(_NativeModule):
    """BatchNorm over every rank's part of the batch (torch.nn.SyncBatchNorm): in training, the mean
    and variance are those of the whole batch of a data-parallel job started with mpirun (MPI; see
    normlab.distributed), combined in rank order, and the input gradient is summed over the ranks;
    the weight's and bias's gradients stay each rank's own (average them over the ranks, as
    DistributedDataParallel does). In a single process, and in eval mode, it is BatchNorm. x (N, C, *).
    Every rank must call forward and backward together. process_group: only None (the job's current
    group)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, dtype=None):
        if process_group is not None:
            raise ValueError("SyncBatchNorm: normlab synchronizes over the job's current group: process_group must "
                             "be None")
        super().__init__(_build("SyncBatchNorm", _nn.sync_batch_norm, num_features, eps, momentum, affine,
                                track_running_stats, dtype))
        self.num_features = num_features

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every BatchNorm1d/BatchNorm2d in it replaced by a SyncBatchNorm with the same
        arguments, parameters and running statistics (torch.nn.SyncBatchNorm.convert_sync_batchnorm)."""
        if isinstance(module, (BatchNorm1d, BatchNorm2d)):
            tensors = dict(module._native.named_parameters() + module._native.named_buffers())
            like = tensors.get("weight", tensors.get("running_mean"))
            sync = cls(module.num_features, module._args["eps"], module._args["momentum"], module._args["affine"],
                       module._args["track_running_stats"], process_group,
                       dtype=None if like is None else like.dtype)
            sync.load_state_dict(module.state_dict())
            sync.train(module.training)
            return sync
        for name, child in list(module._modules.items()) if "_modules" in module.__dict__ else []:
            if child is not None:
                converted = cls.convert_sync_batchnorm(child, process_group)
                if converted is not child:
                    module._modules[name] = converted
        return module


class _NoisyBatchNorm(_NativeModule):
    def __init__(self, who, image, num_features, scale, shift, seed, dtype):
        try:
            (slo, shi), (mlo, mhi) = scale, shift
        except (TypeError, ValueError):
            raise TypeError(f"{who}: scale and shift must be pairs (low, high), got {scale!r} and {shift!r}") from None
        super().__init__(_build(who, _nn.noisy_batch_norm, image, num_features, seed, float(slo), float(shi),
                                float(mlo), float(mhi), dtype))
        self.num_features = num_features


class NoisyBatchNorm1d(_NoisyBatchNorm):
    """BatchNorm1d whose output is made unstable on purpose (Santurkar et al. 2018's control): in
    training, per unit c, s_c * BN(x)_c + m_c with s_c ~ U[scale) and m_c ~ U[shift) drawn anew at
    every forward (from seed and the step count, a buffer: restoring the state repeats the noise);
    in eval, E[s] * BN(x) + E[m]. seed None: drawn from normlab.manual_seed's generator."""

    def __init__(self, num_features, scale=(0.5, 2.0), shift=(-0.5, 1.5), seed=None, dtype=None):
        super().__init__("NoisyBatchNorm1d", False, num_features, scale, shift, seed, dtype)


class NoisyBatchNorm2d(_NoisyBatchNorm):
    """NoisyBatchNorm1d for x (N, C, H, W): one scale and shift per channel."""

    def __init__(self, num_features, scale=(0.5, 2.0), shift=(-0.5, 1.5), seed=None, dtype=None):
        super().__init__("NoisyBatchNorm2d", True, num_features, scale, shift, seed, dtype)


class LayerNorm(_NativeModule):
    """Normalizes each sample over its last dims (normalized_shape), then weight * x + bias."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, dtype=None):
        super().__init__(_build("LayerNorm", _nn.layer_norm, normalized_shape, eps, elementwise_affine, bias, dtype))
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps


class GroupNorm(_NativeModule):
    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, dtype=None):
        super().__init__(_build("GroupNorm", _nn.group_norm, num_groups, num_channels, eps, affine, dtype))


class InstanceNorm2d(_NativeModule):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, dtype=None):
        super().__init__(_build("InstanceNorm2d", _nn.instance_norm2d, num_features, eps, momentum, affine,
                                track_running_stats, dtype))


class RMSNorm(_NativeModule):
    """x / sqrt(mean(x^2) + eps) * weight over the last dims (eps None: the dtype's machine epsilon)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, dtype=None):
        super().__init__(_build("RMSNorm", _nn.rms_norm, normalized_shape, eps, elementwise_affine, dtype))


def _ids(x):
    """Token ids as a tensor: a Tensor as it is, an array or list of whole numbers as float64."""
    if isinstance(x, Tensor):
        return x
    a = np.asarray(x)
    if a.dtype.kind not in "iu":
        raise TypeError(f"expected token ids as an integer array or a Tensor, got dtype {a.dtype}")
    return tensor(a, dtype="float64")


class Embedding(_NativeModule):
    """A table of num_embeddings vectors of embedding_dim, drawn from N(0, 1): ids (*) -> (*, embedding_dim)."""

    def __init__(self, num_embeddings, embedding_dim, dtype=None):
        super().__init__(_build("Embedding", _nn.embedding, num_embeddings, embedding_dim, dtype))
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim

    def forward(self, input):
        return self._native.forward(_ids(input))


class ReLU(_NativeModule):
    def __init__(self):
        super().__init__(_nn.relu())


class Tanh(_NativeModule):
    def __init__(self):
        super().__init__(_nn.tanh())


class Sigmoid(_NativeModule):
    def __init__(self):
        super().__init__(_nn.sigmoid())


class GELU(_NativeModule):
    def __init__(self):
        super().__init__(_nn.gelu())


class Identity(_NativeModule):
    def __init__(self, *args, **kwargs):
        super().__init__(_nn.identity())


class Dropout(_NativeModule):
    """Zeroes each element with probability p in training and scales the rest by 1 / (1 - p); its
    mask stream is seeded from the default generator."""

    def __init__(self, p=0.5):
        super().__init__(_build("Dropout", _nn.dropout, p))


class Flatten(_NativeModule):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__(_nn.flatten(start_dim, end_dim))


class _LSTMBase(_NativeModule):
    def forward(self, input, hx=None):
        """input (T, B, input_size), or (B, T, input_size) with batch_first -> (output, (h_n, c_n));
        hx = (h_0, c_0), each (num_layers, B, hidden_size), or None for zeros."""
        return self._native.forward_with_state(input, hx)


class LSTM(_LSTMBase):
    """torch.nn.LSTM (its gates i, f, g, o; weights from U(-1/sqrt(H), 1/sqrt(H)))."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dtype=None):
        super().__init__(_build("LSTM", _nn.lstm, input_size, hidden_size, num_layers, bias, batch_first, dtype))
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers


class LayerNormLSTM(_LSTMBase):
    """An LSTM with LayerNorm on the gates' input and recurrent parts and on the cell (Ba et al. 2016)."""

    def __init__(self, input_size, hidden_size, num_layers=1, batch_first=False, eps=1e-5, dtype=None):
        super().__init__(_build("LayerNormLSTM", _nn.layer_norm_lstm, input_size, hidden_size, num_layers,
                                batch_first, eps, dtype))


class BatchNormLSTM(_LSTMBase):
    """The recurrent batch-normalized LSTM (Cooijmans et al. 2017): per-step statistics for max_steps
    steps (or shared ones), BN gains starting at gamma_init."""

    def __init__(self, input_size, hidden_size, num_layers=1, batch_first=False, max_steps=100,
                 shared_statistics=False, momentum=0.1, eps=1e-5, gamma_init=0.1, dtype=None):
        super().__init__(_build("BatchNormLSTM", _nn.batch_norm_lstm, input_size, hidden_size, num_layers,
                                batch_first, max_steps, shared_statistics, momentum, eps, gamma_init, dtype))


class TransformerBlock(_NativeModule):
    """A GPT-2 block: x + attn(norm(x)), then x + mlp(norm(x)) (position "pre"; "post" normalizes after
    each residual sum). norm: "layer", "rms", "batch", "noisybatch" or "none"."""

    def __init__(self, width, n_head, norm="layer", position="pre", n_layer=1, dtype=None):
        super().__init__(_build("TransformerBlock", _nn.transformer_block, width, n_head, norm, position, n_layer,
                                dtype))


class GPT(_NativeModule):
    """nanoGPT's model: token and position embeddings, n_layer blocks, a final norm and the head
    (transformer.wte, .wpe, .h.<l>, .ln_f, lm_head). forward(ids (B, T)) -> logits (B, T, vocab_size)."""

    def __init__(self, vocab_size, block_size, n_layer, n_head, width, norm="layer", position="pre", dtype=None):
        super().__init__(_build("GPT", _nn.gpt, vocab_size, block_size, n_layer, n_head, width, norm, position,
                                dtype))
        self.vocab_size, self.block_size = vocab_size, block_size

    def forward(self, idx):
        return self._native.forward(_ids(idx))
