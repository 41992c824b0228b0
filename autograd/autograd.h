// Everything of the autograd library in one include: tensors, ops (norms and dropout too), the
// engine, gradcheck.
#pragma once
#include "autograd/allocator.h"
#include "autograd/conv.h"
#include "autograd/dropout.h"
#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/loss.h"
#include "autograd/lstm.h"
#include "autograd/matmul.h"
#include "autograd/norm.h"
#include "autograd/pooling.h"
#include "autograd/reduce.h"
#include "autograd/shape_ops.h"
#include "autograd/sync_batch_norm.h"
#include "autograd/tensor.h"
