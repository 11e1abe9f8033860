// `gspo train` as one object: the launcher's environment read once, the training device resolved from model.device
// (cuda means cuda:LOCAL_RANK in a multi-process run), the process group opened, and the Trainer built on them.
#pragma once
#include <memory>
#include <string>

#include "gspo/config/options.h"
#include "gspo/parallel/launch_env.h"
#include "gspo/train/trainer.h"

namespace gspo::parallel { class Comm; }
namespace gspo::train { class RolloutWorker; }

namespace gspo::cli {

class TrainJob {
 public:
  // Throws what the Trainer throws (ConfigError, DataError, ...) and DistributedError from the rendezvous.
  TrainJob(const config::Config& cfg, const std::string& resume, const parallel::LaunchEnv& env);
  TrainJob(const config::Config& cfg, const std::string& resume);  // the process environment's layout
  ~TrainJob();
  train::TrainSummary run();

 private:
  std::unique_ptr<parallel::Comm> comm_;   // the whole job
  std::unique_ptr<parallel::Comm> group_;  // distributed.rollout_ranks > 0: this rank's kind (trainers or rollout)
  std::unique_ptr<train::Trainer> trainer_;
  std::unique_ptr<train::RolloutWorker> worker_;  // a rollout rank
};

// model.device for training: cpu, cuda:N, auto; cuda (or auto on a CUDA machine) means cuda:LOCAL_RANK when
// several processes run.
c10::Device train_device(const config::Config& cfg, const parallel::LaunchEnv& env);

}  // namespace gspo::cli
