// Everything of the nn library in one include: modules (convolution and pooling too), norms,
// activations, losses, init,
// and safetensors checkpoints (the functional norms are autograd ops: autograd/norm.h).
#pragma once
#include "nn/activation.h"
#include "nn/batchnorm.h"
#include "nn/bn_lstm.h"
#include "nn/checkpoint.h"
#include "nn/conv.h"
#include "nn/dropout.h"
#include "nn/flatten.h"
#include "nn/groupnorm.h"
#include "nn/init.h"
#include "nn/instancenorm.h"
#include "nn/layernorm.h"
#include "nn/linear.h"
#include "nn/ln_lstm.h"
#include "nn/loss.h"
#include "nn/lstm.h"
#include "nn/module.h"
#include "nn/pooling.h"
#include "nn/rmsnorm.h"
#include "nn/sequential.h"
