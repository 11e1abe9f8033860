// Rollouts written during training (logging.rollouts_every, #67 item 1): what the policy wrote, readable while the run
// goes. At the first rollout step, every N-th and the last, RUN/rollouts/step_NNNNNNNN.jsonl holds the step's first
// logging.rollouts_rows rows (whole groups, in global row order: each row once, whatever the world size), one JSON
// object a row: step, row, group, prompt, response, reward (with the soft overlong penalty), each reward component's,
// correct, advantage, tokens (the policy's own), inserted tokens (tool output), how it ended (eos, stop, length,
// max_turns), the policy version that sampled it and its staleness, the prompt's and the response's token ids, each
// response token's text (pieces), its behaviour log-prob (the sampler's) and, recomputed by the trainer at the
// step-start weights, its log-prob and the entropy of its distribution (trainer_logprobs, entropy; 0 on inserted
// tokens). Validation's
// samples (gspo eval's samples.jsonl lines) go to RUN/validation_samples/step_NNNNNNNN.jsonl. Rank 0 writes each file
// atomically; past logging.rollouts_max_mb (each folder on its own) the oldest step files are removed (the first
// step's is kept), and a resume drops the files of steps after the checkpoint (they run again).
#pragma once
#include <ATen/core/Tensor.h>
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

  // The trainer's view of the rows a step's file takes (the step computes it at the step-start weights, the
  // sampling temperature): per response token the log-prob of the sampled token and the entropy of the distribution,
  // [rows_here(), R] float32 on the CPU, 0 on inserted tokens; undefined = not computed.
  struct TrainerView {
    at::Tensor logprobs, entropy;
    at::Tensor teacher_logprobs;  // distill.teacher set: the teacher's log-probs of the same tokens
  };

  // Whether rollout step `step` (counted from 1, as metrics.jsonl's "step") writes its rollouts.
  bool due(int64_t step) const;
  // How many of this rank's rows (global rows from `first_row`, `rows` of them) the step's file takes: whole groups
  // of the first logging.rollouts_rows rows of the step.
  int64_t rows_here(int64_t rows, int64_t group_size, int64_t first_row) const;
  // Collective when due(step). This rank's rows of the step (global rows from `first_row`) as JSON lines, gathered
  // to rank 0, which writes the step's file.
  void write(int64_t step, const Scored& s, const algo::Advantages& adv, int64_t first_row, const TrainerView& view);
  // Collective: a validation's samples (each rank's gspo-eval sample lines) gathered to rank 0, which writes them to
  // RUN/validation_samples/step_NNNNNNNN.jsonl (after rollout step `step`; 0 = before training).
  void write_validation(int64_t step, const std::string& lines);
  // Rank 0, at start-up: removes the files of steps after `step` (a resume runs them again).
  void truncate_after(int64_t step) const;

  // RUN/rollouts/step_NNNNNNNN.jsonl
  static std::string file_name(int64_t step);

 private:
  std::string rows_json(int64_t step, const Scored& s, const algo::Advantages& adv, int64_t first_row,
                        const TrainerView& view) const;
  void keep_under_cap(const std::string& dir) const;

  const config::Config& cfg_;
  const tokenizer::Tokenizer& tok_;
  parallel::Comm& comm_;
  c10::Device device_;
  std::string dir_, validation_dir_;
};

}  // namespace gspo::train
