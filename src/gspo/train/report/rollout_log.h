// Rollouts written during training (logging.rollouts_every, #67 item 1): what the policy wrote, readable while the run
// goes. At the first rollout step, every N-th and the last, RUN/rollouts/step_NNNNNNNN.jsonl holds the step's first
// logging.rollouts_rows rows (whole groups, in global row order: each row once, whatever the world size), one JSON
// object a row: step, row, group, prompt, response, reward (with the soft overlong penalty), each reward component's,
// correct, advantage, tokens (the policy's own), inserted tokens (tool output), how it ended (eos, stop, length,
// max_turns), the policy version that sampled it and its staleness, and every response token's behaviour log-prob
// (0 on inserted tokens). Rank 0 writes each file atomically; past logging.rollouts_max_mb the oldest step files are
// removed (the first step's is kept), and a resume drops the files of steps after the checkpoint (they run again).
#pragma once
#include <c10/core/Device.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gspo/config/options.h"

namespace gspo::tokenizer { class Tokenizer; }
namespace gspo::parallel { class Comm; }
namespace gspo::algo { struct Advantages; }

namespace gspo::train {

struct Scored;

class RolloutLog {
 public:
  // `device`: where `comm`'s collectives take their tensors (the training device).
  RolloutLog(const config::Config& cfg, const tokenizer::Tokenizer& tok, parallel::Comm& comm, c10::Device device);

  // Whether rollout step `step` (counted from 1, as metrics.jsonl's "step") writes its rollouts.
  bool due(int64_t step) const;
  // Collective when due(step). This rank's rows of the step (global rows from `first_row`) as JSON lines, gathered
  // to rank 0, which writes the step's file.
  void write(int64_t step, const Scored& s, const algo::Advantages& adv, int64_t first_row);
  // Rank 0, at start-up: removes the files of steps after `step` (a resume runs them again).
  void truncate_after(int64_t step) const;

  // RUN/rollouts/step_NNNNNNNN.jsonl
  static std::string file_name(int64_t step);

 private:
  std::string rows_json(int64_t step, const Scored& s, const algo::Advantages& adv, int64_t first_row) const;
  void keep_under_cap() const;

  const config::Config& cfg_;
  const tokenizer::Tokenizer& tok_;
  parallel::Comm& comm_;
  c10::Device device_;
  std::string dir_;
};

}  // namespace gspo::train
