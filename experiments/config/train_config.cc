// What a run is (train_config.h).
#include "experiments/config/train_config.h"

namespace normlab::experiments {

std::string task_name(data::Task task) { return task == data::Task::Regression ? "regression" : "classification"; }

}  // namespace normlab::experiments
