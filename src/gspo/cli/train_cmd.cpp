#include "gspo/cli/train_cmd.h"

#include <iostream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/interrupt.h"
#include "gspo/core/log.h"
#include "gspo/parallel/launch_env.h"
#include "gspo/cli/train_job.h"

namespace gspo::cli {

int train(const TrainArgs& a) {
  auto cfg = config::load(a.config, a.overrides);
  const auto env = parallel::read_launch_env();
  // Ranks other than 0 of a multi-process run keep quiet unless something is wrong (rank 0 reports the job).
  log::set_level_from_config(config::name_of(cfg.logging.level), env.rank > 0 ? "warn" : "");
  interrupt::Guard guard;
  TrainJob job(cfg, a.resume, env);
  auto summary = job.run();
  if (summary.is_main) std::cout << train::summary_text(summary);
  return summary.interrupted ? kExitInterrupted : 0;
}

}  // namespace gspo::cli
