#include "gspo/train/metrics/moe_load.h"

#include <torch/torch.h>

#include <algorithm>

namespace gspo::train {

void record_moe_load(const std::vector<at::Tensor>& per_layer, StepMetrics& m) {
  for (const auto& load : per_layer) {
    if (!load.defined() || load.numel() == 0) continue;  // a dense layer
    const auto counts = load.to(torch::kDouble);
    const double total = counts.sum().item<double>();
    if (total > 0) m.moe_load_imbalance.push_back(counts.max().item<double>() / total * static_cast<double>(load.numel()));
  }
  if (!m.moe_load_imbalance.empty())
    m.moe_load_imbalance_max = *std::max_element(m.moe_load_imbalance.begin(), m.moe_load_imbalance.end());
}

}  // namespace gspo::train
