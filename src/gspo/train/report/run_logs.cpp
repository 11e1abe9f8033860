#include "gspo/train/report/run_logs.h"

#include "gspo/core/fs.h"
#include "gspo/core/log.h"
#include "gspo/train/report/rollout_log.h"

namespace gspo::train {

void RunLogs::open(const config::Config& cfg, const std::string& config_yaml, int64_t step, bool validation_due,
                   RolloutLog* rollouts) {
  const std::string path = cfg.train.output_dir + "/metrics.jsonl";
  const auto dropped = io::MetricsLog::truncate_after(path, step);
  if (dropped.torn > 0)
    log::warn("{}: dropped {} line(s) that are not JSON (a write cut off by a crash)", path, dropped.torn);
  if (dropped.later_steps > 0) log::info("{}: dropped {} line(s) of steps after the checkpoint; they run again", path,
                                         dropped.later_steps);
  core::atomic_write(cfg.train.output_dir + "/config.yaml", config_yaml);
  metrics = std::make_unique<io::MetricsLog>(path);
  tensorboard = io::open_run_events(cfg.logging.tensorboard, cfg.train.output_dir, path, config_yaml);
  if (tensorboard) log::info("TensorBoard events: {} (tensorboard --logdir on its directory)", tensorboard->path());
  if (rollouts) rollouts->truncate_after(step);
  if (validation_due) {
    const std::string vpath = cfg.train.output_dir + "/validation.jsonl";
    io::MetricsLog::truncate_after(vpath, step);
    validation = std::make_unique<io::MetricsLog>(vpath);
  }
}

void RunLogs::append(const std::string& line) {
  if (metrics) metrics->append(line);
  if (tensorboard) tensorboard->metrics_line(line);
}

}  // namespace gspo::train
