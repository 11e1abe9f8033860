// `gspo train`: load and validate the config, run the Trainer, print the summary.
#pragma once
#include <string>
#include <vector>

namespace gspo::cli {

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string resume;  // "", "auto" or a checkpoint directory
};

// Returns 0, or kExitInterrupted when stopped by a signal after checkpointing.
int train(const TrainArgs& a);

}  // namespace gspo::cli
