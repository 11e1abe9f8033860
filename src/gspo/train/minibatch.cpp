#include "gspo/train/minibatch.h"

#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "gspo/rollout/sampler.h"
#include "gspo/train/shared_prefix.h"

namespace gspo::train {
namespace {

// train.shared_prefix: which of m's rows share a prompt (kPacked: share_groups over their real lengths; kWhole: their
// groups, when the widest reaches split_tokens), their lengths and the prompt tokens saved.
void share_prompts(const rollout::RolloutBatch& b, Micro& m, SharePrompts share, int64_t split_tokens) {
  const size_t n = m.rows.size();
  const auto prompt = m.mask.narrow(1, 0, b.prompt_len).sum(1), all = m.mask.sum(1);  // (on the host)
  const auto pa = prompt.accessor<int64_t, 1>(), aa = all.accessor<int64_t, 1>();
  std::vector<int64_t> group(n), plen(n), rlen(n);
  for (size_t i = 0; i < n; ++i) {
    const auto k = static_cast<int64_t>(i);
    group[i] = m.rows[i] / b.group_size, plen[i] = pa[k], rlen[i] = aa[k] - pa[k];
  }
  const bool whole = share == SharePrompts::kWhole && widest_group(group, plen, rlen) >= split_tokens;
  auto packs = whole ? group : share_groups(group, plen, rlen);
  std::set<int64_t> seen;
  int64_t saved = 0;
  for (size_t i = 0; i < n; ++i)
    if (!seen.insert(packs[i]).second) saved += plen[i];
  if (saved == 0) return;  // no two rows share: the pass runs unshared
  m.shape.prompt_group = std::move(packs);
  m.shape.prompt_len = std::move(plen);
  m.shape.response_len = std::move(rlen);
  m.shape.whole_groups = whole;
  m.prompt_tokens_saved = saved;
}

}  // namespace

Micro slice_rows(const rollout::RolloutBatch& b, const std::vector<int64_t>& rows, const at::Tensor& advantages,
                 SharePrompts share, int64_t split_tokens) {
  Micro m;
  m.rows = rows;
  int64_t r = 1;
  for (int64_t row : rows) r = std::max(r, b.response_lengths[row]);
  auto idx = torch::tensor(rows, torch::kLong);
  const int64_t P = b.prompt_len;
  m.ids = b.input_ids.index_select(0, idx).narrow(1, 0, P + r).contiguous();
  m.mask = b.attention_mask.index_select(0, idx).narrow(1, 0, P + r).contiguous();
  m.loss_mask = b.loss_mask.index_select(0, idx).narrow(1, 0, r).contiguous();
  m.behaviour_lp = b.behaviour_logprobs.index_select(0, idx).narrow(1, 0, r).contiguous();
  m.advantages = advantages.index_select(0, idx);
  if (b.routes.defined()) m.rollout_routes = b.routes.index_select(0, idx).narrow(1, 0, P + r).contiguous();
  m.real_tokens = m.mask.sum().item<int64_t>();  // (on the host: the batch lives there)
  std::vector<int64_t> real;  // (row, j) of each response token, row-major: a response is a prefix of its columns
  for (size_t i = 0; i < rows.size(); ++i)
    for (int64_t j = 0; j < b.response_lengths[rows[i]]; ++j) real.push_back(static_cast<int64_t>(i)), real.push_back(j);
  m.shape.real_index = torch::tensor(real, torch::kLong).view({-1, 2});
  auto per_row = m.mask.sum(1);
  m.shape.width = std::max<int64_t>(1, per_row.numel() ? per_row.max().item<int64_t>() : 1);
  if (share != SharePrompts::kOff && rows.size() > 1) share_prompts(b, m, share, split_tokens);
  return m;
}

void Micro::to(c10::Device d) {
  ids = ids.to(d);
  mask = mask.to(d);
  loss_mask = loss_mask.to(d);
  behaviour_lp = behaviour_lp.to(d);
  advantages = advantages.to(d);
  if (rollout_routes.defined()) rollout_routes = rollout_routes.to(d);
  if (shape.real_index.defined()) shape.real_index = shape.real_index.to(d);
}

std::vector<int64_t> minibatch_sizes(int64_t rows, int64_t num_minibatches) {
  const int64_t nmb = std::max<int64_t>(1, std::min(num_minibatches, rows));
  std::vector<int64_t> sizes;
  for (int64_t k = 0; k < nmb; ++k) sizes.push_back(rows / nmb + (k < rows % nmb ? 1 : 0));
  return sizes;
}

std::vector<std::vector<int64_t>> plan_minibatches(const std::vector<int64_t>& rows, int64_t nmb, at::Generator& gen) {
  const int64_t n = static_cast<int64_t>(rows.size());
  auto perm = torch::randperm(n, gen, torch::kLong);
  auto pa = perm.accessor<int64_t, 1>();
  std::vector<std::vector<int64_t>> plan;
  int64_t start = 0;
  for (const int64_t size : minibatch_sizes(n, nmb)) {
    std::vector<int64_t> mb;
    for (int64_t i = start; i < start + size; ++i) mb.push_back(rows[pa[i]]);
    start += size;
    plan.push_back(std::move(mb));
  }
  return plan;
}

std::vector<std::vector<int64_t>> plan_group_minibatches(const std::vector<int64_t>& rows, int64_t group_size,
                                                         int64_t nmb, at::Generator& gen) {
  std::vector<std::vector<int64_t>> groups;  // in the order of their first rows
  std::map<int64_t, size_t> index;
  for (int64_t r : rows) {
    const auto [it, fresh] = index.emplace(r / group_size, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(r);
  }
  const auto perm = torch::randperm(static_cast<int64_t>(groups.size()), gen, torch::kLong);
  const auto pa = perm.accessor<int64_t, 1>();
  std::vector<std::vector<int64_t>> plan;
  int64_t start = 0;
  for (const int64_t size : minibatch_sizes(static_cast<int64_t>(groups.size()), nmb)) {
    std::vector<int64_t> mb;
    for (int64_t i = start; i < start + size; ++i) {
      const auto& g = groups[static_cast<size_t>(pa[i])];
      mb.insert(mb.end(), g.begin(), g.end());
    }
    start += size;
    plan.push_back(std::move(mb));
  }
  return plan;
}

std::vector<std::vector<int64_t>> split_micro(const std::vector<int64_t>& rows, int64_t micro_size) {
  const size_t n = rows.size();
  const size_t ms = micro_size > 0 ? static_cast<size_t>(micro_size) : std::max<size_t>(1, n);
  std::vector<std::vector<int64_t>> parts;
  for (size_t i = 0; i < n; i += ms) parts.emplace_back(rows.begin() + i, rows.begin() + std::min(n, i + ms));
  return parts;
}

int64_t padded_tokens(const std::vector<int64_t>& rows, const std::vector<int64_t>& lengths, int64_t prompt_len) {
  int64_t r = 1;
  for (int64_t row : rows) r = std::max(r, lengths[row]);
  return static_cast<int64_t>(rows.size()) * (prompt_len + r);
}

std::vector<std::vector<int64_t>> split_micro_tokens(const std::vector<int64_t>& rows,
                                                     const std::vector<int64_t>& lengths, int64_t prompt_len,
                                                     int64_t max_rows, int64_t max_tokens) {
  auto len = [&](int64_t row) { return std::max<int64_t>(1, lengths[row]); };
  std::vector<int64_t> order = rows;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return len(a) > len(b); });
  // Cut the sorted order into runs: best[i] is the least cost of order[0, i), a run order[j, i) costing its padded
  // size (i - j) x (prompt_len + len(order[j])) plus a fixed charge per forward/backward pass. The run's width only
  // grows as j moves left, so the scan stops at the first run over the budget.
  const size_t n = order.size();
  const int64_t charge = std::max<int64_t>(1, max_tokens / 16);
  std::vector<int64_t> best(n + 1, std::numeric_limits<int64_t>::max()), cut(n + 1, 0);
  best[0] = 0;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = i; j-- > 0;) {
      const auto count = static_cast<int64_t>(i - j);
      const int64_t slots = count * (prompt_len + len(order[j]));
      if (count > 1 && (slots > max_tokens || (max_rows > 0 && count > max_rows))) break;
      const int64_t cost = best[j] + slots + charge;
      if (cost < best[i]) best[i] = cost, cut[i] = static_cast<int64_t>(j);
    }
  }
  std::vector<std::vector<int64_t>> parts;
  for (size_t i = n; i > 0; i = static_cast<size_t>(cut[i]))
    parts.emplace_back(order.begin() + cut[i], order.begin() + static_cast<std::ptrdiff_t>(i));
  std::reverse(parts.begin(), parts.end());
  return parts;
}

int64_t shared_padded_tokens(const std::vector<int64_t>& rows, const std::vector<int64_t>& lengths, int64_t prompt_len,
                             int64_t group_size) {
  const size_t n = rows.size();
  std::vector<int64_t> group(n), plen(n, prompt_len), rlen(n);
  for (size_t i = 0; i < n; ++i) group[i] = rows[i] / group_size, rlen[i] = std::max<int64_t>(1, lengths[rows[i]]);
  const auto packs = share_groups(group, plen, rlen);
  std::map<int64_t, int64_t> width;  // per pack: prompt_len + its responses
  for (size_t i = 0; i < n; ++i) width.emplace(packs[i], prompt_len).first->second += rlen[i];
  int64_t widest = 0;
  for (const auto& [pack, w] : width) widest = std::max(widest, w);
  return static_cast<int64_t>(width.size()) * widest;
}

namespace {

// plan_micro's shared cut: rows by group (longest response first within one), parts filled in that order while the
// part's shared_padded_tokens stays within max_tokens (0: no budget) and its rows within max_rows (0: no limit).
std::vector<std::vector<int64_t>> split_micro_shared(const std::vector<int64_t>& rows,
                                                     const std::vector<int64_t>& lengths, int64_t prompt_len,
                                                     int64_t group_size, int64_t max_rows, int64_t max_tokens) {
  std::vector<int64_t> order = rows;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const int64_t ga = a / group_size, gb = b / group_size;
    return ga != gb ? ga < gb : lengths[a] > lengths[b];
  });
  std::vector<std::vector<int64_t>> parts;
  std::vector<int64_t> part;
  for (int64_t r : order) {
    part.push_back(r);
    const bool over = (max_rows > 0 && static_cast<int64_t>(part.size()) > max_rows) ||
                      (max_tokens > 0 && shared_padded_tokens(part, lengths, prompt_len, group_size) > max_tokens);
    if (over && part.size() > 1) {
      part.pop_back();
      parts.push_back(std::move(part));
      part = {r};
    }
  }
  if (!part.empty()) parts.push_back(std::move(part));
  return parts;
}

}  // namespace

std::vector<std::vector<int64_t>> plan_micro(const std::vector<int64_t>& rows, const std::vector<int64_t>& lengths,
                                             int64_t prompt_len, int64_t micro_size, int64_t micro_tokens,
                                             int64_t share_group) {
  if (share_group > 0) return split_micro_shared(rows, lengths, prompt_len, share_group, micro_size, micro_tokens);
  if (micro_tokens <= 0) return split_micro(rows, micro_size);
  return split_micro_tokens(rows, lengths, prompt_len, micro_size, micro_tokens);
}

}  // namespace gspo::train
