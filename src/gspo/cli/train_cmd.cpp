#include "gspo/cli/train_cmd.h"

#include <iostream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/interrupt.h"
#include "gspo/core/log.h"
#include "gspo/train/state.h"
#include "gspo/train/trainer.h"

namespace gspo::cli {

int train(const TrainArgs& a) {
  auto cfg = config::load(a.config, a.overrides);
  log::set_level(cfg.logging.level);
  interrupt::Guard guard;
  train::Trainer trainer(cfg, a.resume);
  auto summary = trainer.run();
  std::cout << train::summary_text(summary);
  return summary.interrupted ? kExitInterrupted : 0;
}

}  // namespace gspo::cli
