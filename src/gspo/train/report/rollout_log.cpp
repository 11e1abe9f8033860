#include "gspo/train/report/rollout_log.h"

#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "gspo/algo/advantage.h"
#include "gspo/core/fs.h"
#include "gspo/core/log.h"
#include "gspo/parallel/comm.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/sources/rollout_source.h"

namespace gspo::train {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// A float written short (4 significant digits; log-probs and rewards are read by people and plots, not resumed from).
double short_float(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return std::strtod(buf, nullptr);
}

// Every rank's `text`, in rank order, on rank 0 (empty elsewhere): lengths first, then the bytes padded to the longest.
std::string gather_text(parallel::Comm& comm, c10::Device device, const std::string& text) {
  if (comm.world_size() == 1) return text;
  auto len = torch::tensor({static_cast<int64_t>(text.size())}, torch::kLong).to(device);
  const auto lens = comm.all_gather(len).cpu();
  const int64_t longest = std::max<int64_t>(lens.max().item<int64_t>(), 1);
  auto bytes = torch::zeros({longest}, torch::kUInt8);
  std::copy(text.begin(), text.end(), bytes.data_ptr<uint8_t>());
  const auto all = comm.all_gather(bytes.to(device)).cpu().contiguous();
  if (!comm.is_main()) return "";
  std::string out;
  const auto* p = all.data_ptr<uint8_t>();
  for (int64_t r = 0; r < comm.world_size(); ++r)
    out.append(reinterpret_cast<const char*>(p + r * longest), static_cast<size_t>(lens[r].item<int64_t>()));
  return out;
}

int64_t step_of(const std::string& name) {  // step_00000050.jsonl -> 50; -1 for other names
  if (name.rfind("step_", 0) != 0 || name.size() < 11 || name.substr(name.size() - 6) != ".jsonl") return -1;
  try {
    return std::stoll(name.substr(5, name.size() - 11));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

RolloutLog::RolloutLog(const config::Config& cfg, const tokenizer::Tokenizer& tok, parallel::Comm& comm,
                       c10::Device device)
    : cfg_(cfg), tok_(tok), comm_(comm), device_(device), dir_(cfg.train.output_dir + "/rollouts"),
      validation_dir_(cfg.train.output_dir + "/validation_samples") {
  if (comm_.is_main()) core::ensure_dir(dir_);
}

std::string RolloutLog::file_name(int64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "step_%08lld.jsonl", static_cast<long long>(step));
  return buf;
}

bool RolloutLog::due(int64_t step) const {
  const int64_t n = cfg_.logging.rollouts_every;
  return n > 0 && (step == 1 || step % n == 0 || step == cfg_.train.max_steps);
}

int64_t RolloutLog::rows_here(int64_t rows, int64_t group_size, int64_t first_row) const {
  const int64_t G = std::max<int64_t>(group_size, 1);
  const int64_t cap = std::max<int64_t>(cfg_.logging.rollouts_rows / G, 1) * G;  // whole groups, at least one
  return std::clamp<int64_t>(cap - first_row, 0, rows);
}

std::string RolloutLog::rows_json(int64_t step, const Scored& s, const algo::Advantages& adv, int64_t first_row,
                                  const TrainerView& view) const {
  const auto& b = s.batch;
  const int64_t G = b.group_size, P = b.prompt_len;
  const int64_t keep = rows_here(b.num_rows(), G, first_row);
  if (keep == 0) return "";
  const bool trainer = view.logprobs.defined() && view.logprobs.size(0) >= keep;
  const auto tlp = trainer ? view.logprobs.to(torch::kFloat).contiguous() : at::Tensor();
  const auto ent = trainer && view.entropy.defined() ? view.entropy.to(torch::kFloat).contiguous() : at::Tensor();
  const auto teach = trainer && view.teacher_logprobs.defined() ? view.teacher_logprobs.to(torch::kFloat).contiguous()
                                                                 : at::Tensor();
  const auto ids = b.input_ids.narrow(0, 0, keep).cpu(), mask = b.attention_mask.narrow(0, 0, keep).cpu();
  const auto own = b.loss_mask.narrow(0, 0, keep).cpu().to(torch::kFloat).contiguous();
  const auto lp = b.behaviour_logprobs.narrow(0, 0, keep).cpu().to(torch::kFloat).contiguous();
  const auto a = adv.values.narrow(0, 0, keep).cpu().to(torch::kDouble).contiguous();
  const auto trained = b.trained_tokens();
  const int64_t R = own.size(1);
  std::string out;
  for (int64_t r = 0; r < keep; ++r) {
    std::vector<int64_t> prompt;
    for (int64_t t = 0; t < P; ++t)
      if (mask[r][t].item<int64_t>() != 0) prompt.push_back(ids[r][t].item<int64_t>());
    const int64_t n = b.response_lengths[r];
    std::vector<double> logprobs, trainer_lp, entropy, teacher_lp;
    std::vector<int64_t> response_ids;
    std::vector<std::string> pieces;  // each response token's text (special tokens written; a partial UTF-8 character
                                      // of a byte token becomes U+FFFD in the JSON)
    for (int64_t t = 0; t < std::min(n, R); ++t) {
      response_ids.push_back(ids[r][P + t].item<int64_t>());
      pieces.push_back(tok_.token_bytes(response_ids.back(), true));
      logprobs.push_back(short_float(lp[r][t].item<float>()));
      if (tlp.defined()) trainer_lp.push_back(short_float(tlp[r][t].item<float>()));
      if (ent.defined()) entropy.push_back(short_float(ent[r][t].item<float>()));
      if (teach.defined()) teacher_lp.push_back(short_float(teach[r][t].item<float>()));  // (NaN: null)
    }
    const int64_t row = first_row + r, version = s.versions.empty() ? step - 1 : s.versions[r];
    nlohmann::ordered_json j{{"step", step}, {"row", row}, {"group", row / G},
                             {"prompt", tok_.decode(prompt, true)}, {"response", b.response_text[r]},
                             {"reward", short_float(s.rewards[r])}};
    if (!s.components.empty() && !s.components[r].empty()) {
      std::vector<double> c;
      for (double v : s.components[r]) c.push_back(short_float(v));
      j["components"] = c;
    }
    j["correct"] = s.correct[r] > 0.5;
    j["advantage"] = short_float(a[r].item<double>());
    j["tokens"] = trained[r];
    j["inserted_tokens"] = n - trained[r];
    j["finish"] = rollout::finish_name(b.finish[r]);
    j["version"] = version;
    j["staleness"] = step - 1 - version;
    j["prompt_ids"] = prompt;
    j["response_ids"] = response_ids;
    j["pieces"] = pieces;
    j["logprobs"] = logprobs;
    if (tlp.defined()) j["trainer_logprobs"] = trainer_lp;
    if (ent.defined()) j["entropy"] = entropy;
    if (teach.defined()) j["teacher_logprobs"] = teacher_lp;
    out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  return out;
}

void RolloutLog::write(int64_t step, const Scored& s, const algo::Advantages& adv, int64_t first_row,
                       const TrainerView& view) {
  const std::string all = gather_text(comm_, device_, rows_json(step, s, adv, first_row, view));
  if (!comm_.is_main()) return;
  core::atomic_write(dir_ + "/" + file_name(step), all);
  keep_under_cap(dir_);
}

void RolloutLog::write_validation(int64_t step, const std::string& lines) {
  const std::string all = gather_text(comm_, device_, lines);
  if (!comm_.is_main()) return;
  core::ensure_dir(validation_dir_);
  core::atomic_write(validation_dir_ + "/" + file_name(step), all);
  keep_under_cap(validation_dir_);
}

// Past logging.rollouts_max_mb (each folder on its own): the oldest step files go, the first step's stays (what the
// run began from).
void RolloutLog::keep_under_cap(const std::string& dir) const {
  std::vector<std::pair<int64_t, std::string>> files;
  double total = 0;
  for (const auto& name : core::list_dir(dir)) {
    const int64_t step = step_of(name);
    if (step < 0) continue;
    const std::string path = dir + "/" + name;
    files.emplace_back(step, path);
    total += static_cast<double>(std::filesystem::file_size(path));
  }
  std::sort(files.begin(), files.end());
  const double cap = cfg_.logging.rollouts_max_mb * kMiB;
  for (size_t i = 1; i + 1 < files.size() && total > cap; ++i) {  // never the first nor the newest
    total -= static_cast<double>(std::filesystem::file_size(files[i].second));
    std::filesystem::remove(files[i].second);
  }
}

void RolloutLog::truncate_after(int64_t step) const {
  for (const auto& dir : {dir_, validation_dir_}) {
    int64_t dropped = 0;
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec)) continue;
    for (const auto& name : core::list_dir(dir)) {
      if (step_of(name) > step) {
        std::filesystem::remove(dir + "/" + name);
        ++dropped;
      }
    }
    if (dropped > 0) log::info("{}: dropped {} file(s) of steps after the checkpoint; they run again", dir, dropped);
  }
}

}  // namespace gspo::train
