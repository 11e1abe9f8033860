// The training loop: rollout -> reward -> advantages -> mini-batch updates -> metrics -> checkpoint, repeated
// for train.max_steps rollout steps (../shared/docs/gspo-algorithm.md section 5, beside a development checkout;
// docs/algorithm.md, "One step").
#pragma once
#include <memory>
#include <string>

#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include "gspo/config/options.h"
#include "gspo/parallel/launch_env.h"

namespace gspo::parallel { class Comm; }

namespace gspo::train {

struct TrainSummary {
  int64_t first_step = 0, last_step = 0;   // rollout steps run in this invocation: (first_step, last_step]
  double reward_start = 0, reward_end = 0; // mean reward over the first / last 10% of this invocation's steps
  double accuracy_start = 0, accuracy_end = 0;
  double seconds = 0;
  int64_t skipped_updates = 0;
  int64_t dropped_prompts = 0;             // dataset rows left out at load as too long (data.overlong_prompts)
  int64_t heldout_problems = 0;            // data.holdout problems never trained on (0 = none)
  double heldout_accuracy = 0;             // greedy accuracy on them at the end (rank 0)
  double train_greedy_accuracy = 0;        // greedy accuracy on as many training problems, for comparison
  // Validation (eval.every > 0): the "val/<set>/<metric>" figures of the first and last validation of this
  // invocation, and their steps; empty when none ran.
  nlohmann::ordered_json validation_first, validation_last;
  int64_t validation_first_step = 0, validation_last_step = 0;
  // Asynchronous training (distributed.rollout_ranks > 0): over this invocation's steps.
  bool async = false;
  double lag_mean = 0;          // version lag per trained row
  int64_t lag_max = 0, max_staleness = 0;
  double trainer_idle = 0;      // trainer 0's seconds waiting for batches over its step seconds
  double rollout_idle = 0;      // the rollout ranks' waiting over their seconds per batch
  // Partial rollouts (async.partial_rollout): over this invocation's steps.
  bool partial = false;
  double spanned = 0;           // share of trained rows whose tokens several versions sampled
  double carried = 0;           // rows carried past a step, mean per step
  // Multi-turn rollouts (tools.list set): over this invocation's steps, every rank's calls.
  bool tools = false;
  int64_t tool_calls = 0, tool_errors = 0, tool_timeouts = 0;
  bool interrupted = false;
  bool is_main = true;                     // rank 0 (or a single process): the one that wrote metrics and checkpoints
  std::string last_checkpoint;  // "" when none was written
  std::string metrics_path;
};

// The end-of-run summary a person reads (report.cpp).
std::string summary_text(const TrainSummary& s);

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
