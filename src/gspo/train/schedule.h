// Learning rate at an optimizer step: linear warmup from 0, then constant or cosine decay.
#pragma once
#include <cstdint>
#include "gspo/config/choices.h"

namespace gspo::train {

// step counts optimizer steps from 0; total = optimizer steps of the whole run.
double learning_rate(int64_t step, int64_t total, double base, int64_t warmup, config::Schedule schedule,
                     double min_ratio);

}  // namespace gspo::train
