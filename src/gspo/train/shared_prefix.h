// Shared-prefix (tree) training, #71 (docs/algorithm.md, "Shared prompts"): the per-layer pass runs a group's prompt
// once. Rows that share a prompt (the G samples of one prompt that a micro-batch holds; any number of them, one included)
// are packed into one row: the prompt's real tokens once, then each row's response tokens. The decoder layers run over
// the packed rows under a tree mask: a prompt token attends to the prompt's tokens up to itself, a response token to
// the whole prompt and to its own response's tokens up to itself, never to another response's. Each response's positions
// continue from the prompt's end (the rotary tables are the unshared pass's, gathered), so every hidden state a
// log-prob reads is the unshared pass's up to float rounding, and the gradients of all of a group's responses meet in
// the prompt's activations, computed once. The layers are the model's own per-layer methods under an explicit mask
// (docs/model-contract.md, "Per-layer methods"). A model with the optional shared_layer method runs the split layout
// instead (pack_whole below): prompts and responses apart, each response attending to its prompt's keys.
//
// Work and memory per layer for a group of G rows of prompt P and responses R_i: the unshared pass runs G P + sum R_i
// tokens through the projections and MLP, this P + sum R_i (Qwen3-style prompt of 1,024 and G = 16 responses of 128:
// 18,432 against 3,072 tokens, 6x). Attention here is one masked SDPA over (P + sum R_i)^2 scores against
// G (P + R)^2, with a [P + sum R_i]^2 boolean mask a packed row (9.4 MB at 3,072 tokens): the saving holds while
// sum R_i stays small beside G P; long responses (G R >> P) need an attention kernel that skips the masked blocks
// (varlen flash attention with a shared-prefix layout: a GPU follow-up, docs/algorithm.md).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace gspo::train {

// How the rows of a right-aligned batch [n, W] (each row's real tokens a prefix: prompt, then response) pack.
struct PackedRows {
  at::Tensor source;  // [B * L] int64: the flat index into [n * W] each packed position was taken from (padding: 0)
  at::Tensor target;  // [n * W] int64: the packed flat index holding each right-aligned position (padding: 0)
  at::Tensor segment;  // [B, L] int64: 0 the prompt, k + 1 the response of the group's k-th row, -1 padding
  at::Tensor predict;  // [N] int64: the packed flat index predicting each real response token, row-major (row, j)
  std::vector<int64_t> first;   // per row: its group's first row (whose prompt the packed row holds)
  int64_t rows = 0, width = 0;  // n, W
  int64_t packed_tokens = 0;    // real tokens of the packed rows (the work the layers do)
  int64_t unshared_tokens = 0;  // real tokens of the rows unpacked (the work without sharing)
  // pack_whole's split layout (Policy::shared_layer): the packed layout is one row [1, K P + n Rw]: K prompts of
  // prompt_width columns, then n responses of response_width (each real tokens first). Undefined / 0 for pack_rows'.
  at::Tensor group;          // [n] int64: each row's prompt k
  at::Tensor prompt_tokens;  // [K] int64: each prompt's real tokens
  int64_t prompts = 0, prompt_width = 0, response_width = 0;
  bool split() const { return prompts > 0; }
};

// Which of a micro-batch's rows pack together: `group[r]` the rows' prompt groups (rows with equal ids have one
// prompt), `prompt_len[r]` / `response_len[r]` their real tokens. Within a group, rows in the order given join the
// group's current pack while the pack's attention stays no larger than its rows' unshared attention,
// (p + sum r_i)^2 <= sum (p + r_i)^2; a row that would break it starts a new pack. So the packed pass never does more
// attention work or holds more scores than the unshared one (its projections and MLP always less): long prompts and
// short responses pack whole (p 1,024, G 16 x 128: 3,072^2 against 16 x 1,152^2), p = r never. Returns a pack id per
// row (packs numbered by first appearance), the `group` argument pack_rows takes. std::invalid_argument for sizes
// that differ.
std::vector<int64_t> share_groups(const std::vector<int64_t>& group, const std::vector<int64_t>& prompt_len,
                                  const std::vector<int64_t>& response_len);

// `group[r]`: rows with equal ids share their prompt (the caller's claim, checked by check_shared_prompts);
// `prompt_len[r]`, `response_len[r]`: row r's real prompt and response tokens (its right-aligned columns [0, p) and
// [p, p + len)); groups keep the order of their first rows, rows their order within a group. Host work only: the
// index tensors are made on `device`. std::invalid_argument for lengths that do not fit W or a group whose rows claim
// prompts of different lengths.
PackedRows pack_rows(const std::vector<int64_t>& group, const std::vector<int64_t>& prompt_len,
                     const std::vector<int64_t>& response_len, int64_t width, c10::Device device);

// The split layout of the same rows (PackedRows::split(), for Policy::shared_layer): every group's prompt once (K
// prompts, the longest P real tokens wide), every row's response (R wide, the longest), all of a group's rows under
// its one prompt: no attention is ever larger than the unshared rows' (P^2 / 2 + G R (P + R / 2) scores against
// G (P + R)^2 / 2). source / target / predict / segment index the flat [K P + n R] layout (segment [1, K P + n R]:
// 0 a prompt token, 1 a response token, -1 padding); `first` as pack_rows'. Same arguments and errors as pack_rows.
PackedRows pack_whole(const std::vector<int64_t>& group, const std::vector<int64_t>& prompt_len,
                      const std::vector<int64_t>& response_len, int64_t width, c10::Device device);

// The widest group: the most prompt + response tokens a group's rows would hold packed into one row (its first row's
// prompt and every row's response). What decides between the split and the packed layout (the split's extra
// operations pay only past a width: train.shared_prefix_split_tokens).
int64_t widest_group(const std::vector<int64_t>& group, const std::vector<int64_t>& prompt_len,
                     const std::vector<int64_t>& response_len);

// Throws std::logic_error naming the first row whose prompt tokens differ from its group's first row's (ids: the
// right-aligned [n, W]; prompt_len as pack_rows had it); one device read.
void check_shared_prompts(const PackedRows& packed, const at::Tensor& ids, const std::vector<int64_t>& prompt_len);

// The tree mask of the packed rows: bool [B, 1, L, L] (true = may attend), each position also its own key (padding
// never fully masked: NaN-free).
at::Tensor tree_mask(const PackedRows& packed);

// A split layout's flat [1, K P + n R, ...] tensor as its prompts [K, P, ...] and responses [n, R, ...] (views), and
// the two back as one flat [1, K P + n R, ...].
std::pair<at::Tensor, at::Tensor> split_prompts(const PackedRows& packed, const at::Tensor& flat);
at::Tensor join_prompts(const at::Tensor& prompts, const at::Tensor& responses);

// A per-position tensor of the right-aligned layout [n, W, ...] in the packed layout [B, L, ...] (token ids, rotary
// tables, replayed experts), and back (recorded experts; a group's prompt positions go to each of its rows).
at::Tensor to_packed(const PackedRows& packed, const at::Tensor& aligned);
at::Tensor to_aligned(const PackedRows& packed, const at::Tensor& packed_values);

}  // namespace gspo::train
