#include "gspo/train/setup/fault.h"

#include <cstdlib>

#include "gspo/core/error.h"
#include "gspo/core/log.h"

namespace gspo::train {

Fault read_fault() {
  const char* env = std::getenv("GSPO_FAULT");
  Fault f;
  f.name = env ? env : "";
  if (f.name.empty()) return f;
  if (f.name == "lr_x10") f.lr_scale = 10;
  else if (f.name == "clip_x10") f.clip_scale = 10;
  else if (f.name == "temperature_2") f.temperature = 2.0;
  else if (f.name == "advantage_sign") f.advantage_sign = -1;
  else if (f.name == "teacher_nan") f.teacher_nan = true;
  else
    throw ConfigError("GSPO_FAULT='" + f.name + "' is not a test fault: lr_x10, temperature_2, advantage_sign, "
                      "clip_x10 or teacher_nan (unset it to train normally)");
  return f;
}

void apply_fault(const Fault& f, config::Config& cfg, bool main) {
  if (f.name.empty()) return;
  if (main)
    log::warn("GSPO_FAULT={}: this run has a bug injected on purpose (a test of gspo gate); unset GSPO_FAULT to "
              "train for real", f.name);
  cfg.optimizer.lr *= f.lr_scale;
  if (f.clip_scale != 1) {
    auto& a = cfg.algorithm;
    const auto d = config::default_clip(a.loss);
    a.clip_low = (a.clip_low < 0 ? d.low : a.clip_low) * f.clip_scale;
    a.clip_high = (a.clip_high < 0 ? d.high : a.clip_high) * f.clip_scale;
  }
}

void apply_fault(const Fault& f, rollout::SamplingParams& sp) {
  if (f.temperature > 0) sp.temperature = f.temperature;
}

}  // namespace gspo::train
