// moe_load_imbalance, computed here only (#54): per MoE layer, the largest expert's share of the layer's routing slots
// times the layer's experts (1 = balanced, E = one expert took every slot), from per-expert counts or shares of the
// last training forward; a layer with nothing counted is left out. moe_load_imbalance_max is the largest. The model's
// own shares (Policy::expert_load) feed it without expert parallelism, the group's summed counts with it.
#pragma once
#include <ATen/core/Tensor.h>

#include <vector>

#include "gspo/train/metrics/metrics.h"

namespace gspo::train {

void record_moe_load(const std::vector<at::Tensor>& per_layer, StepMetrics& m);

}  // namespace gspo::train
