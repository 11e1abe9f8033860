// Test-only injected bugs (docs/report.md "Injected bugs"):
// GSPO_FAULT=lr_x10|temperature_2|advantage_sign|clip_x10|teacher_nan
// makes a run wrong on purpose, so that tests can show `gspo gate` catching it (tests/report/test_gate.sh). Read once,
// here, when a process assembles (assembly.h); the run's config.yaml and metrics still say what the config says, as a
// real bug would leave them. Never for training: a loud warning names the fault at start-up. Unset or empty = none.
#pragma once
#include <string>

#include "gspo/config/options.h"
#include "gspo/rollout/sampling.h"

namespace gspo::train {

struct Fault {
  std::string name;            // "" = none
  double lr_scale = 1;         // lr_x10: the optimizer takes 10x optimizer.lr
  double clip_scale = 1;       // clip_x10: the clip range 10x wider on each side
  double temperature = 0;      // temperature_2: the sampler draws at 2.0 (the trainer's log-probs stay at the config's)
  double advantage_sign = 1;   // advantage_sign: -1 flips every advantage before the loss
  bool teacher_nan = false;    // teacher_nan: the distillation teacher's log-probs of each micro-batch's first row are NaN
};

// GSPO_FAULT read and checked. Throws ConfigError naming the value and the valid names.
Fault read_fault();

// The fault's config changes, made on the process's copy: optimizer.lr and the resolved clip range. Warns when active.
void apply_fault(const Fault& f, config::Config& cfg, bool main);
// The fault's sampler change: the temperature it draws at.
void apply_fault(const Fault& f, rollout::SamplingParams& sp);

}  // namespace gspo::train
