#include "gspo/reward/model_scoring.h"

#include <algorithm>

namespace gspo::reward {

c10::ScalarType score_dtype(config::ScoreDtype d, c10::Device device) {
  switch (d) {
    case config::ScoreDtype::kFloat32: return c10::kFloat;
    case config::ScoreDtype::kBFloat16: return c10::kBFloat16;
    case config::ScoreDtype::kAuto: break;
  }
  return device.is_cuda() ? c10::kBFloat16 : c10::kFloat;
}

std::vector<std::vector<const Pending*>> passes_of(std::vector<Pending>& rows, int64_t budget, int64_t extra) {
  std::stable_sort(rows.begin(), rows.end(), [](const Pending& a, const Pending& b) { return a.ids.size() > b.ids.size(); });
  std::vector<std::vector<const Pending*>> passes;
  for (const auto& r : rows) {
    if (passes.empty() ||
        static_cast<int64_t>(passes.back().size() + 1) * (static_cast<int64_t>(passes.back().front()->ids.size()) + extra) >
            budget)
      passes.emplace_back();
    passes.back().push_back(&r);
  }
  return passes;
}

}  // namespace gspo::reward
