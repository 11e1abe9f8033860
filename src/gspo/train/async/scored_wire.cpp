#include "gspo/train/async/scored_wire.h"

#include <torch/serialize/archive.h>
#include <torch/torch.h>

#include <cstring>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/rollout/batch_merge.h"

namespace gspo::train {
namespace {

// Lists of lists travel flat, with their lengths.
template <class T>
void flatten(const std::vector<std::vector<T>>& rows, std::vector<T>& flat, std::vector<int64_t>& lengths) {
  for (const auto& r : rows) {
    flat.insert(flat.end(), r.begin(), r.end());
    lengths.push_back(static_cast<int64_t>(r.size()));
  }
}

template <class T>
std::vector<std::vector<T>> unflatten(const std::vector<T>& flat, const std::vector<int64_t>& lengths) {
  std::vector<std::vector<T>> rows;
  size_t at = 0;
  for (int64_t n : lengths) {
    if (n < 0 || at + static_cast<size_t>(n) > flat.size()) throw DistributedError("a batch share's lists are cut");
    rows.emplace_back(flat.begin() + at, flat.begin() + at + n);
    at += static_cast<size_t>(n);
  }
  return rows;
}

}  // namespace

at::Tensor pack_share(const Share& s) {
  const auto& b = s.scored.batch;
  torch::serialize::OutputArchive a;
  a.write("batch", c10::IValue(s.batch));
  a.write("input_ids", b.input_ids);
  a.write("attention_mask", b.attention_mask);
  a.write("response_mask", b.response_mask);
  a.write("loss_mask", b.loss_mask);
  a.write("behaviour_logprobs", b.behaviour_logprobs);
  if (b.routes.defined()) a.write("routes", b.routes);  // (R3: the experts the rollout rank ran, 1-2 B an id)
  a.write("prompt_len", c10::IValue(b.prompt_len));
  a.write("group_size", c10::IValue(b.group_size));
  a.write("response_lengths", c10::IValue(b.response_lengths));
  std::vector<int64_t> finish;
  for (auto f : b.finish) finish.push_back(static_cast<int64_t>(f));
  a.write("finish", c10::IValue(finish));
  std::vector<int64_t> ids, id_lengths;
  flatten(b.response_ids, ids, id_lengths);
  a.write("response_ids", c10::IValue(ids));
  a.write("response_id_lengths", c10::IValue(id_lengths));
  c10::List<std::string> text;
  for (const auto& t : b.response_text) text.push_back(t);
  a.write("response_text", c10::IValue(text));
  a.write("rewards", c10::IValue(s.scored.rewards));
  a.write("correct", c10::IValue(s.scored.correct));
  a.write("penalty", c10::IValue(s.scored.penalty));
  std::vector<double> comps;
  std::vector<int64_t> comp_lengths;
  flatten(s.scored.components, comps, comp_lengths);
  a.write("components", c10::IValue(comps));
  a.write("component_lengths", c10::IValue(comp_lengths));
  a.write("versions", c10::IValue(s.scored.versions));
  a.write("sources", c10::IValue(s.scored.sources));
  auto examples = s.scored.examples;  // (a Scored made without them: unknown, -1)
  examples.resize(s.scored.rewards.size(), -1);
  a.write("examples", c10::IValue(examples));
  a.write("metrics", c10::IValue(s.metrics));
  std::ostringstream out;
  a.save_to(out);
  const std::string bytes = out.str();
  auto t = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  std::memcpy(t.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return t;
}

Share unpack_share(const at::Tensor& bytes) {
  const auto t = bytes.to(torch::kCPU).contiguous();
  std::istringstream in(std::string(reinterpret_cast<const char*>(t.data_ptr<uint8_t>()), static_cast<size_t>(t.numel())));
  Share s;
  auto& b = s.scored.batch;
  try {
    torch::serialize::InputArchive a;
    a.load_from(in);
    c10::IValue v;
    auto ints = [&](const char* key) { a.read(key, v); return v.toIntVector(); };
    auto doubles = [&](const char* key) { a.read(key, v); return v.toDoubleVector(); };
    a.read("batch", v), s.batch = v.toInt();
    a.read("input_ids", b.input_ids);
    a.read("attention_mask", b.attention_mask);
    a.read("response_mask", b.response_mask);
    a.read("loss_mask", b.loss_mask);
    a.read("behaviour_logprobs", b.behaviour_logprobs);
    a.try_read("routes", b.routes);
    a.read("prompt_len", v), b.prompt_len = v.toInt();
    a.read("group_size", v), b.group_size = v.toInt();
    b.response_lengths = ints("response_lengths");
    for (auto f : ints("finish")) b.finish.push_back(static_cast<rollout::Finish>(f));
    b.response_ids = unflatten(ints("response_ids"), ints("response_id_lengths"));
    a.read("response_text", v);
    for (const auto& x : v.toListRef()) b.response_text.push_back(x.toStringRef());
    s.scored.rewards = doubles("rewards");
    s.scored.correct = doubles("correct");
    s.scored.penalty = doubles("penalty");
    s.scored.components = unflatten(doubles("components"), ints("component_lengths"));
    s.scored.versions = ints("versions");
    s.scored.sources = doubles("sources");
    s.scored.examples = ints("examples");
    s.metrics = doubles("metrics");
  } catch (const gspo::Error&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError(std::string("a batch share from a rollout rank cannot be read: ") + e.what());
  }
  const size_t n = b.finish.size();
  if (b.response_lengths.size() != n || b.response_ids.size() != n || b.response_text.size() != n ||
      s.scored.rewards.size() != n || s.scored.correct.size() != n || s.scored.penalty.size() != n ||
      s.scored.components.size() != n || s.scored.versions.size() != n || s.scored.sources.size() != n ||
      s.scored.examples.size() != n ||
      (b.input_ids.defined() && b.input_ids.size(0) != static_cast<int64_t>(n)))
    throw DistributedError("a batch share from a rollout rank has per-row lists of different lengths");
  if (b.routes.defined() && (b.routes.dim() != 4 || !b.input_ids.defined() || b.routes.size(0) != b.input_ids.size(0) ||
                             b.routes.size(1) != b.input_ids.size(1)))
    throw DistributedError("a batch share from a rollout rank has routes of shape " + c10::str(b.routes.sizes()) +
                           " for rows of " + (b.input_ids.defined() ? c10::str(b.input_ids.sizes()) : "no ids"));
  return s;
}

Scored slice_groups(const Scored& s, int64_t first, int64_t count, int64_t pad_id) {
  const auto& b = s.batch;
  const int64_t G = b.group_size, P = b.prompt_len;
  std::vector<rollout::GroupRef> refs;
  for (int64_t g = first; g < first + count; ++g) refs.push_back({0, g});
  Scored out;
  out.batch = rollout::merge_groups({&b}, refs, pad_id);
  // Cut the padding no row of these groups uses: prompt columns on the left, response columns on the right.
  const int64_t rows = count * G;
  const auto prompt_cols = out.batch.attention_mask.narrow(1, 0, P).sum(1);
  const int64_t P2 = rows > 0 ? prompt_cols.max().item<int64_t>() : 0;
  int64_t R2 = 0;
  for (int64_t r = 0; r < rows; ++r) R2 = std::max(R2, out.batch.response_lengths[r]);
  auto cut = [&](const at::Tensor& t) { return t.narrow(1, P - P2, P2 + R2).contiguous(); };
  out.batch.input_ids = cut(out.batch.input_ids);
  out.batch.attention_mask = cut(out.batch.attention_mask);
  out.batch.response_mask = out.batch.response_mask.narrow(1, 0, R2).contiguous();
  out.batch.loss_mask = out.batch.loss_mask.narrow(1, 0, R2).contiguous();
  out.batch.behaviour_logprobs = out.batch.behaviour_logprobs.narrow(1, 0, R2).contiguous();
  if (out.batch.routes.defined()) out.batch.routes = cut(out.batch.routes);
  out.batch.prompt_len = P2;
  const auto from = static_cast<size_t>(first * G), to = static_cast<size_t>((first + count) * G);
  out.rewards.assign(s.rewards.begin() + from, s.rewards.begin() + to);
  out.correct.assign(s.correct.begin() + from, s.correct.begin() + to);
  out.penalty.assign(s.penalty.begin() + from, s.penalty.begin() + to);
  out.components.assign(s.components.begin() + from, s.components.begin() + to);
  out.versions.assign(s.versions.begin() + from, s.versions.begin() + to);
  out.sources.assign(s.sources.begin() + from, s.sources.begin() + to);
  if (s.examples.size() >= to) out.examples.assign(s.examples.begin() + from, s.examples.begin() + to);
  return out;
}

Scored join_groups(std::vector<Scored> pieces, int64_t pad_id) {
  if (pieces.empty()) throw std::invalid_argument("join_groups: no pieces");
  if (pieces.size() == 1) return std::move(pieces.front());
  std::vector<const rollout::RolloutBatch*> batches;
  std::vector<rollout::GroupRef> refs;
  Scored out;
  for (size_t k = 0; k < pieces.size(); ++k) {
    const auto& p = pieces[k];
    batches.push_back(&p.batch);
    for (int64_t g = 0; g < p.batch.num_rows() / p.batch.group_size; ++g) refs.push_back({static_cast<int64_t>(k), g});
    out.rewards.insert(out.rewards.end(), p.rewards.begin(), p.rewards.end());
    out.correct.insert(out.correct.end(), p.correct.begin(), p.correct.end());
    out.penalty.insert(out.penalty.end(), p.penalty.begin(), p.penalty.end());
    out.components.insert(out.components.end(), p.components.begin(), p.components.end());
    out.versions.insert(out.versions.end(), p.versions.begin(), p.versions.end());
    out.sources.insert(out.sources.end(), p.sources.begin(), p.sources.end());
    out.examples.insert(out.examples.end(), p.examples.begin(), p.examples.end());
    out.examples.resize(out.rewards.size(), -1);
  }
  out.batch = rollout::merge_groups(batches, refs, pad_id);
  return out;
}

}  // namespace gspo::train
