#include "gspo/train/shared_prefix.h"

#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace gspo::train {

namespace {

at::Tensor upload(const std::vector<int64_t>& v, c10::Device device) {
  return torch::tensor(v, torch::TensorOptions().dtype(torch::kLong)).to(device);
}

// Rows by group, groups in the order of their first rows.
std::vector<std::vector<int64_t>> members_of(const std::vector<int64_t>& group) {
  std::unordered_map<int64_t, size_t> index;
  std::vector<std::vector<int64_t>> members;
  for (size_t r = 0; r < group.size(); ++r) {
    const auto [it, fresh] = index.emplace(group[r], members.size());
    if (fresh) members.emplace_back();
    members[it->second].push_back(static_cast<int64_t>(r));
  }
  return members;
}

void check_lengths(const std::vector<std::vector<int64_t>>& members, const std::vector<int64_t>& plen,
                   const std::vector<int64_t>& rlen, int64_t width) {
  for (const auto& m : members)
    for (int64_t r : m) {
      const auto u = static_cast<size_t>(r);
      if (plen[u] < 1 || rlen[u] < 0 || plen[u] + rlen[u] > width)
        throw std::invalid_argument("pack_rows: row " + std::to_string(r) + " has " + std::to_string(plen[u]) +
                                    " prompt and " + std::to_string(rlen[u]) + " response tokens in " +
                                    std::to_string(width) + " columns");
      if (plen[u] != plen[static_cast<size_t>(m.front())])
        throw std::invalid_argument("pack_rows: row " + std::to_string(r) + " claims the prompt of row " +
                                    std::to_string(m.front()) + " but has " + std::to_string(plen[u]) +
                                    " prompt tokens, not " + std::to_string(plen[static_cast<size_t>(m.front())]));
    }
}

void check_sizes(const char* who, const std::vector<int64_t>& group, const std::vector<int64_t>& plen,
                 const std::vector<int64_t>& rlen) {
  if (plen.size() != group.size() || rlen.size() != group.size())
    throw std::invalid_argument(std::string(who) + ": " + std::to_string(group.size()) + " rows, " +
                                std::to_string(plen.size()) + " prompt lengths, " + std::to_string(rlen.size()) +
                                " response lengths");
}

// What pack_rows and pack_whole begin with: the rows by group, checked against `width`, and a layout knowing each
// row's group's first row.
PackedRows start_packing(const char* who, const std::vector<int64_t>& group, const std::vector<int64_t>& plen,
                         const std::vector<int64_t>& rlen, int64_t width, std::vector<std::vector<int64_t>>& members) {
  check_sizes(who, group, plen, rlen);
  members = members_of(group);
  check_lengths(members, plen, rlen, width);
  PackedRows p;
  p.rows = static_cast<int64_t>(group.size());
  p.width = width;
  p.first.resize(group.size());
  for (const auto& m : members)
    for (int64_t r : m) p.first[static_cast<size_t>(r)] = m.front();
  return p;
}

}  // namespace

std::vector<int64_t> share_groups(const std::vector<int64_t>& group, const std::vector<int64_t>& plen,
                                  const std::vector<int64_t>& rlen) {
  const size_t n = group.size();
  check_sizes("share_groups", group, plen, rlen);
  struct Pack {
    int64_t id, tokens, unshared;  // (p + sum r)^2 against sum (p + r)^2 as p + sum r and sum (p + r)^2
  };
  std::map<int64_t, Pack> open;  // per group, its current pack
  std::vector<int64_t> out(n);
  int64_t next = 0;
  for (size_t r = 0; r < n; ++r) {
    const int64_t own = plen[r] + rlen[r];
    auto it = open.find(group[r]);
    if (it != open.end()) {
      Pack& p = it->second;
      const int64_t tokens = p.tokens + rlen[r], unshared = p.unshared + own * own;
      if (tokens * tokens <= unshared) {
        p.tokens = tokens, p.unshared = unshared;
        out[r] = p.id;
        continue;
      }
    }
    open[group[r]] = {next, own, own * own};
    out[r] = next++;
  }
  return out;
}

PackedRows pack_rows(const std::vector<int64_t>& group, const std::vector<int64_t>& plen,
                     const std::vector<int64_t>& rlen, int64_t width, c10::Device device) {
  const auto n = static_cast<int64_t>(group.size());
  std::vector<std::vector<int64_t>> members;
  PackedRows p = start_packing("pack_rows", group, plen, rlen, width, members);
  int64_t L = 1;
  for (const auto& m : members) {
    int64_t len = plen[static_cast<size_t>(m.front())];
    for (int64_t r : m) len += rlen[static_cast<size_t>(r)];
    L = std::max(L, len);
    p.packed_tokens += len;
  }
  for (size_t r = 0; r < group.size(); ++r) p.unshared_tokens += plen[r] + rlen[r];
  const auto B = static_cast<int64_t>(members.size());
  std::vector<int64_t> source(static_cast<size_t>(B * L), 0), segment(static_cast<size_t>(B * L), -1);
  std::vector<int64_t> target(static_cast<size_t>(n * width), 0);
  for (int64_t b = 0; b < B; ++b) {
    const auto& m = members[static_cast<size_t>(b)];
    const int64_t first = m.front(), prompt = plen[static_cast<size_t>(first)];
    int64_t at = b * L;
    for (int64_t c = 0; c < prompt; ++c, ++at) {
      source[static_cast<size_t>(at)] = first * width + c;
      segment[static_cast<size_t>(at)] = 0;
      for (int64_t r : m) target[static_cast<size_t>(r * width + c)] = at;
    }
    for (size_t k = 0; k < m.size(); ++k)
      for (int64_t j = 0; j < rlen[static_cast<size_t>(m[k])]; ++j, ++at) {
        source[static_cast<size_t>(at)] = m[k] * width + prompt + j;
        segment[static_cast<size_t>(at)] = static_cast<int64_t>(k) + 1;
        target[static_cast<size_t>(m[k] * width + prompt + j)] = at;
      }
  }
  std::vector<int64_t> predict;
  for (int64_t r = 0; r < n; ++r)  // response token j of row r: predicted by the position before it (j = 0: the prompt's last)
    for (int64_t j = 0; j < rlen[static_cast<size_t>(r)]; ++j)
      predict.push_back(target[static_cast<size_t>(r * width + plen[static_cast<size_t>(r)] + j - 1)]);
  p.source = upload(source, device);
  p.target = upload(target, device);
  p.segment = upload(segment, device).view({B, L});
  p.predict = upload(predict, device);
  return p;
}

PackedRows pack_whole(const std::vector<int64_t>& group, const std::vector<int64_t>& plen,
                      const std::vector<int64_t>& rlen, int64_t width, c10::Device device) {
  const auto n = static_cast<int64_t>(group.size());
  std::vector<std::vector<int64_t>> members;
  PackedRows p = start_packing("pack_whole", group, plen, rlen, width, members);
  p.prompts = static_cast<int64_t>(members.size());
  p.prompt_width = 1;
  p.response_width = 1;
  for (const auto& m : members) p.prompt_width = std::max(p.prompt_width, plen[static_cast<size_t>(m.front())]);
  for (int64_t r : rlen) p.response_width = std::max(p.response_width, r);
  const int64_t K = p.prompts, P = p.prompt_width, R = p.response_width, F = K * P + n * R;
  std::vector<int64_t> source(static_cast<size_t>(F), 0), segment(static_cast<size_t>(F), -1);
  std::vector<int64_t> target(static_cast<size_t>(n * width), 0), of(static_cast<size_t>(n)), prompt(members.size());
  for (int64_t k = 0; k < K; ++k) {
    const auto& m = members[static_cast<size_t>(k)];
    const int64_t first = m.front(), len = plen[static_cast<size_t>(first)];
    prompt[static_cast<size_t>(k)] = len;
    p.packed_tokens += len;
    for (int64_t r : m) of[static_cast<size_t>(r)] = k;
    for (int64_t c = 0; c < len; ++c) {
      source[static_cast<size_t>(k * P + c)] = first * width + c;
      segment[static_cast<size_t>(k * P + c)] = 0;
      for (int64_t r : m) target[static_cast<size_t>(r * width + c)] = k * P + c;
    }
  }
  std::vector<int64_t> predict;
  for (int64_t r = 0; r < n; ++r) {
    const auto u = static_cast<size_t>(r);
    p.unshared_tokens += plen[u] + rlen[u];
    p.packed_tokens += rlen[u];
    for (int64_t j = 0; j < rlen[u]; ++j) {
      const int64_t at = K * P + r * R + j;
      source[static_cast<size_t>(at)] = r * width + plen[u] + j;
      segment[static_cast<size_t>(at)] = 1;
      target[static_cast<size_t>(r * width + plen[u] + j)] = at;
    }
    for (int64_t j = 0; j < rlen[u]; ++j)  // token j: predicted by the position before it (j = 0: the prompt's last)
      predict.push_back(target[static_cast<size_t>(r * width + plen[u] + j - 1)]);
  }
  p.source = upload(source, device);
  p.target = upload(target, device);
  p.segment = upload(segment, device).view({1, F});
  p.predict = upload(predict, device);
  p.group = upload(of, device);
  p.prompt_tokens = upload(prompt, device);
  return p;
}

int64_t widest_group(const std::vector<int64_t>& group, const std::vector<int64_t>& plen,
                     const std::vector<int64_t>& rlen) {
  check_sizes("widest_group", group, plen, rlen);
  int64_t widest = 0;
  for (const auto& m : members_of(group)) {
    int64_t width = plen[static_cast<size_t>(m.front())];
    for (int64_t r : m) width += rlen[static_cast<size_t>(r)];
    widest = std::max(widest, width);
  }
  return widest;
}

std::pair<at::Tensor, at::Tensor> split_prompts(const PackedRows& packed, const at::Tensor& flat) {
  const int64_t K = packed.prompts, P = packed.prompt_width, n = packed.rows, R = packed.response_width;
  const auto all = flat.select(0, 0);
  return {all.narrow(0, 0, K * P).unflatten(0, {K, P}), all.narrow(0, K * P, n * R).unflatten(0, {n, R})};
}

at::Tensor join_prompts(const at::Tensor& prompts, const at::Tensor& responses) {
  return torch::cat({prompts.flatten(0, 1), responses.flatten(0, 1)}, 0).unsqueeze(0);
}

void check_shared_prompts(const PackedRows& packed, const at::Tensor& ids, const std::vector<int64_t>& prompt_len) {
  const auto& first = packed.first;
  const auto device = ids.device();
  const auto col = torch::arange(packed.width, ids.options()).unsqueeze(0);
  const auto in_prompt = col < upload(prompt_len, device).unsqueeze(1);
  const auto differs = ((ids != ids.index_select(0, upload(first, device))) & in_prompt).any(1).cpu();
  const auto* d = differs.data_ptr<bool>();
  for (size_t r = 0; r < first.size(); ++r)
    if (d[r])
      throw std::logic_error("shared prefix: row " + std::to_string(r) + " is in the group of row " +
                             std::to_string(first[r]) + " but its prompt tokens differ");
}

at::Tensor tree_mask(const PackedRows& packed) {
  const auto& seg = packed.segment;  // [B, L]
  const int64_t L = seg.size(1);
  const auto q = seg.unsqueeze(2), k = seg.unsqueeze(1);  // [B, L, 1], [B, 1, L]
  const auto qi = torch::arange(L, seg.options()).view({1, L, 1}), ki = torch::arange(L, seg.options()).view({1, 1, L});
  const auto allowed = ((ki <= qi) & (k >= 0) & ((k == 0) | (k == q))) | (ki == qi);
  return allowed.unsqueeze(1);
}

at::Tensor to_packed(const PackedRows& packed, const at::Tensor& aligned) {
  const int64_t B = packed.segment.size(0), L = packed.segment.size(1);
  auto shape = aligned.sizes().vec();
  std::vector<int64_t> flat{packed.rows * packed.width}, out{B, L};
  flat.insert(flat.end(), shape.begin() + 2, shape.end());
  out.insert(out.end(), shape.begin() + 2, shape.end());
  return aligned.reshape(flat).index_select(0, packed.source).view(out);
}

at::Tensor to_aligned(const PackedRows& packed, const at::Tensor& values) {
  const int64_t B = packed.segment.size(0), L = packed.segment.size(1);
  auto shape = values.sizes().vec();
  std::vector<int64_t> flat{B * L}, out{packed.rows, packed.width};
  flat.insert(flat.end(), shape.begin() + 2, shape.end());
  out.insert(out.end(), shape.begin() + 2, shape.end());
  return values.reshape(flat).index_select(0, packed.target).view(out);
}

}  // namespace gspo::train
