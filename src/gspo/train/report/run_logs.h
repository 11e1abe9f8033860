// The files a run writes in train.output_dir besides its checkpoints, rank 0 alone: metrics.jsonl (one line a step),
// config.yaml (the resolved config), TensorBoard events (logging.tensorboard), validation.jsonl (eval.every > 0) and
// the rollouts (rollout_log.h). Opened at start-up, after a resume point is known: what later steps wrote is dropped,
// since they run again.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "gspo/config/options.h"
#include "gspo/io/metrics_log.h"
#include "gspo/io/tensorboard.h"

namespace gspo::train {

class RolloutLog;

struct RunLogs {
  std::unique_ptr<io::MetricsLog> metrics;
  std::unique_ptr<io::EventWriter> tensorboard;  // logging.tensorboard
  std::unique_ptr<io::MetricsLog> validation;    // RUN/validation.jsonl (eval.every > 0)

  // Rank 0: the logs opened after rollout step `step` (the resume point; 0 = a fresh run), `rollouts` (null: none)
  // truncated likewise; with `validation_due` validation.jsonl too.
  void open(const config::Config& cfg, const std::string& config_yaml, int64_t step, bool validation_due,
            RolloutLog* rollouts);
  // A step's metrics line into metrics.jsonl and the TensorBoard events (when open).
  void append(const std::string& line);
};

}  // namespace gspo::train
