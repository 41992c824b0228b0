// Everything of the optim library in one include: the Optimizer base, SGD, learning-rate schedules.
#pragma once
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/sgd.h"
