// Everything of the autograd library in one include: tensors, ops, the engine, gradcheck.
#pragma once
#include "autograd/allocator.h"
#include "autograd/elementwise.h"
#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/loss.h"
#include "autograd/matmul.h"
#include "autograd/reduce.h"
#include "autograd/shape_ops.h"
#include "autograd/tensor.h"
