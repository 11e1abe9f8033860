#include "gspo/train/schedule.h"

#include <algorithm>
#include <cmath>

namespace gspo::train {

double learning_rate(int64_t step, int64_t total, double base, int64_t warmup, config::Schedule schedule,
                     double min_ratio) {
  if (step < warmup) return base * static_cast<double>(step + 1) / static_cast<double>(warmup);
  if (schedule != config::Schedule::kCosine || total <= warmup) return base;
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(total - warmup));
  return base * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + std::cos(M_PI * progress)));
}

}  // namespace gspo::train
