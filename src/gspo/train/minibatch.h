// Splitting a scored rollout into mini-batches (one optimizer step each) and micro-batches (one forward/backward
// each, gradients accumulated).
#pragma once
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

#include "gspo/algo/mismatch.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/routing.h"

namespace gspo::rollout { struct RolloutBatch; }

namespace gspo::train {

// A set of rollout rows with their columns trimmed to the longest response among them.
struct Micro {
  std::vector<int64_t> rows;  // indices into the RolloutBatch
  at::Tensor ids, mask;       // [n, P + r] int64
  at::Tensor loss_mask;       // [n, r] float32: the trained tokens (RolloutBatch::loss_mask); what every loss counts
  at::Tensor behaviour_lp;    // [n, r] float32
  at::Tensor advantages;      // [n] float32
  at::Tensor old_lp;          // [n, r] float32 log pi_old (recomputed or = behaviour_lp)
  at::Tensor ref_lp;          // [n, r] float32 log pi_ref, only with a KL term
  // distill.objective forward_kl / jsd (teacher_term.h): the teacher's top-k at each response position, and the
  // trained tokens of the rows it scored (loss_mask, 0 on a row it could not score).
  at::Tensor teacher_ids;     // [n, r, k] int64
  at::Tensor teacher_lp;      // [n, r, k] float32
  at::Tensor teacher_mask;    // [n, r] float32
  algo::IsWeights is;         // mismatch correction weights (algorithm.is_correction), filled with old_lp
  RouteRecord routes;         // MoE: the experts of the old-log-prob pass (routing replay, moe_routing_change_frac)
  // algorithm.routing_replay rollout: the rollout's experts of the rows ([n, P + r, L, k], RolloutBatch::routes), and
  // as the per-layer passes replay them (routing.h: rollout_record), made on the device by the old-log-prob pass.
  at::Tensor rollout_routes;
  RouteRecord sampled;
  int64_t real_tokens = 0;    // prompt + response tokens (mask sum), for throughput
  KnownShape shape;           // the rows' shapes, computed on the host: the log-prob passes read none from the device
                              // (with shared prompts, shape.prompt_group: which rows pack together)
  int64_t prompt_tokens_saved = 0;  // shared prompts: real prompt tokens each pass over these rows does not recompute
  bool idle = false;          // lockstep engines (ZeRO-3): a pass that only keeps this rank in step with the others
  void to(c10::Device device);  // moves every tensor (old_lp/ref_lp are filled on the model's device later)
};

// How a micro-batch's rows of one group (row / group_size) share their prompt (train.shared_prefix, shared_prefix.h).
enum class SharePrompts {
  kOff,     // every row runs its own prompt
  kPacked,  // packed rows under a tree mask, as share_groups decides (shape.prompt_group: the packs)
  kWhole,   // each group's prompt once, through Policy::shared_layer (shape.prompt_group: the groups, whole_groups)
};

// `share` (train.shared_prefix): shape.prompt_group, prompt_len and response_len as `share` says, and the prompt
// tokens saved; left empty when no two rows share (the pass runs unshared). kWhole runs split only when some group's
// prompt + responses among `rows` reach `split_tokens` (train.shared_prefix_split_tokens; 0: always), else as kPacked.
Micro slice_rows(const rollout::RolloutBatch& b, const std::vector<int64_t>& rows, const at::Tensor& advantages,
                 SharePrompts share = SharePrompts::kOff, int64_t split_tokens = 0);

// Shuffles `rows` with `gen` and cuts them into mini-batches of minibatch_sizes(rows.size(), num_minibatches).
std::vector<std::vector<int64_t>> plan_minibatches(const std::vector<int64_t>& rows, int64_t num_minibatches,
                                                   at::Generator& gen);
// algorithm.minibatch_groups: the groups of `rows` (row / group_size) shuffled with `gen` and cut into mini-batches of
// minibatch_sizes(groups, num_minibatches) groups, each group's rows together in the order given.
std::vector<std::vector<int64_t>> plan_group_minibatches(const std::vector<int64_t>& rows, int64_t group_size,
                                                         int64_t num_minibatches, at::Generator& gen);
// The sizes of `num_minibatches` nearly equal mini-batches of `rows` rows (fewer when there are fewer rows; sizes
// differ by at most one, the larger first; one of 0 rows when there are none).
std::vector<int64_t> minibatch_sizes(int64_t rows, int64_t num_minibatches);

// Consecutive parts of at most `micro_size` rows (0 = one part holding every row); none for no rows.
std::vector<std::vector<int64_t>> split_micro(const std::vector<int64_t>& rows, int64_t micro_size);

// Parts whose padded size, rows x (prompt_len + longest response among them) as slice_rows cuts them, stays within
// `max_tokens`, and of at most `max_rows` rows (0 = no row limit). Rows are sorted longest response first (ties in
// the order given) and the order is cut into runs that minimise the padded slots summed over the parts plus
// max_tokens / 16 slots per part (a pass has a fixed cost: a run is split only when that saves more padding than
// the charge). A row that alone exceeds the budget forms a part by itself. Every row appears exactly once.
// `response_lengths` is indexed by row (RolloutBatch::response_lengths); a length below 1 counts as 1 (slice_rows
// keeps one column). O(n x rows per part) time, O(n) memory.
std::vector<std::vector<int64_t>> split_micro_tokens(const std::vector<int64_t>& rows,
                                                     const std::vector<int64_t>& response_lengths, int64_t prompt_len,
                                                     int64_t max_rows, int64_t max_tokens);

// The micro-batches of `rows` under algorithm.micro_batch_size and algorithm.micro_batch_tokens: split_micro when
// the token budget is 0 (off), else split_micro_tokens with both limits. `share_group` > 0 (train.shared_prefix, the
// group size): the rows ordered by group (longest response first within one) and cut in that order, under the budget
// as shared_padded_tokens counts a part, so a group's rows stay together and its prompt counts once.
std::vector<std::vector<int64_t>> plan_micro(const std::vector<int64_t>& rows,
                                             const std::vector<int64_t>& response_lengths, int64_t prompt_len,
                                             int64_t micro_size, int64_t micro_tokens, int64_t share_group = 0);

// Padded size of a part whose rows share prompts (groups of `group_size`, packed as share_groups decides with every
// prompt prompt_len long): packs x the longest pack's prompt_len + its responses (each max(1, length)).
int64_t shared_padded_tokens(const std::vector<int64_t>& rows, const std::vector<int64_t>& response_lengths,
                             int64_t prompt_len, int64_t group_size);

// Padded size of a part as slice_rows cuts it: rows x (prompt_len + max(1, longest response)).
int64_t padded_tokens(const std::vector<int64_t>& rows, const std::vector<int64_t>& response_lengths,
                      int64_t prompt_len);

// One optimizer step's share of the rollout on this rank.
struct MiniBatch {
  std::vector<Micro> micros;  // this rank's rows of the mini-batch, one forward/backward each
  int64_t global_rows = 0;    // rows of the mini-batch over all ranks (the loss weights' denominator)
};

}  // namespace gspo::train
