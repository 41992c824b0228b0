// Everything of the optim library in one include: the Optimizer base, SGD, Adam and AdamW,
// learning-rate schedules, optimizer checkpoints.
#pragma once
#include "optim/adam.h"
#include "optim/checkpoint.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"
