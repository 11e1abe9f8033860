// What a run reports at its end (report.cpp prints it; cli/train_job.cpp and the tests read it): the figures of this
// invocation's steps, summed or windowed by RunTally (run_tally.h).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

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
  // On-policy distillation (distill.teacher): distill_kl over the first / last 10% of this invocation's steps.
  bool distill = false;
  double distill_kl_start = 0, distill_kl_end = 0;
  bool interrupted = false;
  bool is_main = true;                     // rank 0 (or a single process): the one that wrote metrics and checkpoints
  std::string last_checkpoint;  // "" when none was written
  std::string metrics_path;
};

// The end-of-run summary a person reads (report.cpp).
std::string summary_text(const TrainSummary& s);

}  // namespace gspo::train
