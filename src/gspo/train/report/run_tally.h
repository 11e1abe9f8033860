// What the training loop keeps across its steps for the end-of-run summary (summary.h) and for the warnings that count
// steps in a row: a batch of equal rewards, tool calls that mostly failed, rows the reward model or judge could not
// score, rows the distillation teacher could not score. Each is said on its first step and every 20th in a row, so a persistent problem is noticed without a line
// every step.
#pragma once
#include <cstdint>
#include <vector>

#include "gspo/train/metrics/metrics.h"
#include "gspo/train/report/summary.h"

namespace gspo::train {

class RunTally {
 public:
  // `main`: this rank says the warnings (rank 0).
  explicit RunTally(bool main) : main_(main) {}
  // After rollout step `step`: its figures into the windows and sums, the tool counts into `sum`, and the warnings.
  void add(const StepMetrics& m, int64_t step, TrainSummary& sum);
  // At the end: the reward and accuracy windows (first and last 10% of the steps) and the async and partial lines.
  void into(TrainSummary& sum) const;

 private:
  struct Async {  // sums over this invocation's steps (distributed.rollout_ranks > 0 or async.partial_rollout)
    double lag = 0, rows = 0, wait_s = 0, step_s = 0, rollout_wait = 0, rollout_total = 0;
    double spanned = 0, spanned_rows = 0, carried = 0, steps = 0;
    int64_t lag_max = 0;
  };
  void add_async(const StepMetrics& m);
  void warn_flat(const StepMetrics& m, int64_t step);
  void warn_tool_errors(const StepMetrics& m);
  void warn_scoring_failures(const StepMetrics& m);
  void warn_teacher_failures(const StepMetrics& m);

  bool main_;
  std::vector<double> rewards_, accs_;
  int64_t flat_steps_ = 0;      // consecutive steps whose rewards were all equal
  int64_t tool_steps_ = 0;      // consecutive steps at least half of whose tool calls failed
  int64_t unscored_steps_ = 0;  // consecutive steps at least half of whose rows the reward model or judge failed
  int64_t untaught_steps_ = 0;  // consecutive steps with rows the distillation teacher could not score
  std::vector<double> distill_kl_;
  Async async_;
};

}  // namespace gspo::train
