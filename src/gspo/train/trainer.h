// The training loop: rollout -> reward -> advantages -> mini-batch updates -> metrics -> checkpoint, repeated
// for train.max_steps rollout steps (../shared/docs/gspo-algorithm.md section 5, beside a development checkout;
// docs/algorithm.md, "One step").
#pragma once
#include <memory>
#include <string>

#include <c10/core/Device.h>

#include "gspo/config/options.h"
#include "gspo/parallel/launch_env.h"
#include "gspo/train/report/summary.h"

namespace gspo::parallel { class Comm; }

namespace gspo::train {

// Where a training process runs, decided by its caller (cli/train_job.h): the launcher's rank layout, the device of
// the model, and the process group over the ranks (world size 1: a local group whose collectives are identities).
struct Placement {
  parallel::LaunchEnv env;
  c10::Device device = c10::kCPU;
  parallel::Comm* comm = nullptr;  // not owned; outlives the Trainer
  // Asynchronous training (distributed.rollout_ranks > 0): `comm` is then the trainers' group (or the rollout ranks'),
  // and `link` the whole job's, over which batches and weights travel. Null otherwise.
  parallel::Comm* link = nullptr;
};

class Trainer {
 public:
  // `resume`: "" (fresh run; refuses a run directory that already holds a run), "auto" (newest checkpoint in
  // train.output_dir, or fresh when none) or a checkpoint directory. Loads models and data; throws on bad input.
  Trainer(const config::Config& cfg, const std::string& resume, const Placement& where);
  ~Trainer();
  // Runs to train.max_steps. Polls gspo::interrupt between steps: on a request it checkpoints and returns with
  // interrupted = true. Throws TrainingError on a non-finite loss/gradient when train.on_nonfinite = stop.
  TrainSummary run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gspo::train
