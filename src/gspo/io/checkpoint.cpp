#include "gspo/io/checkpoint.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "gspo/core/error.h"
#include "gspo/core/resources.h"
#include "gspo/core/file_sink.h"
#include "gspo/core/fs.h"
#include "gspo/io/tensor_checks.h"

namespace gspo::io {
using core::atomic_write;
using core::ensure_dir;
using core::exists;
using core::list_dir;
using core::process_gone;
using core::read_text;
using core::remove_all;
using core::sync_dir;
namespace {
constexpr const char* kPrefix = "step_";

std::string step_name(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%08lld", kPrefix, static_cast<long long>(step));
  return buf;
}

std::vector<std::string> complete_checkpoints(const std::string& root) {
  std::vector<std::string> out;
  for (const auto& name : list_dir(root))
    if (name.rfind(kPrefix, 0) == 0 && exists(root + "/" + name + "/state.json")) out.push_back(name);
  return out;  // sorted; zero-padded names sort by step
}

template <class F>
void torch_io(const std::string& what, F&& f) {
  try {
    f();
  } catch (const c10::Error& e) {
    throw IoError(what + ": " + e.what_without_backtrace());
  }
}
}  // namespace

std::string save_checkpoint(const std::string& run_dir, const CheckpointMeta& meta, const ModelWriter& write_model,
                            const OptimizerWriter& write_optimizer, const std::vector<at::Tensor>& rng_states,
                            const std::string& config_yaml, int64_t keep_last) {
  const std::string root = run_dir + "/checkpoints";
  ensure_dir(root);
  const std::string final_dir = root + "/" + step_name(meta.step);
  const std::string tmp = root + "/.tmp-" + step_name(meta.step) + "-" + std::to_string(::getpid());
  remove_all(tmp);
  ensure_dir(tmp);
  try {
    write_model(tmp);
    write_optimizer(tmp);
    save_tensors(tmp + "/rng.pt", rng_states, "RNG state");
    atomic_write(tmp + "/config.yaml", config_yaml);
    nlohmann::json j{{"step", meta.step},
                     {"optimizer_steps", meta.optimizer_steps},
                     {"data_epoch", meta.data_epoch},
                     {"data_position", meta.data_position},
                     {"torch_version", core::torch_version()}};
    atomic_write(tmp + "/state.json", j.dump(1) + "\n");  // written last: marks the checkpoint complete
    sync_dir(tmp);
  } catch (...) {
    remove_all(tmp);  // a half-written checkpoint is never left behind; earlier ones were not touched
    throw;
  }
  if (exists(final_dir)) {
    // Only after resuming past a damaged checkpoint of this step: keep it for inspection, out of the step_ names.
    std::string aside = root + "/damaged-" + step_name(meta.step);
    for (int k = 1; exists(aside); ++k) aside = root + "/damaged-" + step_name(meta.step) + "." + std::to_string(k);
    if (std::rename(final_dir.c_str(), aside.c_str()) != 0)
      throw IoError("cannot move '" + final_dir + "' aside to '" + aside + "': " + std::strerror(errno));
    if (std::rename(tmp.c_str(), final_dir.c_str()) != 0)
      throw IoError("cannot rename '" + tmp + "' to '" + final_dir + "': " + std::strerror(errno));
  } else if (std::rename(tmp.c_str(), final_dir.c_str()) != 0) {
    throw IoError("cannot rename '" + tmp + "' to '" + final_dir + "': " + std::strerror(errno));
  }
  sync_dir(root);
  auto all = complete_checkpoints(root);
  for (size_t i = 0; i + static_cast<size_t>(keep_last) < all.size(); ++i) remove_all(root + "/" + all[i]);
  return final_dir;
}

std::vector<std::string> remove_leftovers(const std::string& run_dir) {
  const std::string root = run_dir + "/checkpoints";
  std::vector<std::string> removed;
  if (!exists(root)) return removed;
  for (const auto& name : list_dir(root)) {
    const std::string path = root + "/" + name;
    bool stale = false;
    if (name.rfind(".tmp-", 0) == 0) {
      stale = process_gone(name.substr(name.find_last_of('-') + 1));
    } else if (name.rfind(kPrefix, 0) == 0) {
      stale = !exists(path + "/state.json");
    }
    if (stale) {
      remove_all(path);
      removed.push_back(path);
    }
  }
  return removed;
}

std::vector<std::string> complete_checkpoints_newest_first(const std::string& run_dir) {
  auto all = complete_checkpoints(run_dir + "/checkpoints");
  std::vector<std::string> out;
  for (auto it = all.rbegin(); it != all.rend(); ++it) out.push_back(run_dir + "/checkpoints/" + *it);
  return out;
}

std::optional<std::string> latest_checkpoint(const std::string& run_dir) {
  auto all = complete_checkpoints(run_dir + "/checkpoints");
  if (all.empty()) return std::nullopt;
  return run_dir + "/checkpoints/" + all.back();
}

CheckpointMeta read_meta(const std::string& dir) {
  const std::string path = dir + "/state.json";
  if (!exists(path)) throw IoError("'" + dir + "' is not a complete checkpoint (no state.json)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text(path));
    CheckpointMeta m;
    for (auto [key, field] : {std::pair<const char*, int64_t*>{"step", &m.step}, {"optimizer_steps", &m.optimizer_steps},
                              {"data_epoch", &m.data_epoch}, {"data_position", &m.data_position}}) {
      const auto& v = j.at(key);
      if (!v.is_number_integer() || v.get<int64_t>() < 0)
        throw IoError("checkpoint state '" + path + "' is damaged: '" + key + "' must be a non-negative integer (got " +
                      v.dump().substr(0, 40) + ")");
      *field = v.get<int64_t>();
    }
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw IoError("checkpoint state '" + path + "' is damaged: " + e.what());
  }
}

void save_optimizer(const std::string& dir, torch::optim::Optimizer& optimizer) {
  core::FileSink sink(dir + "/optimizer.pt");
  torch_io("cannot write optimizer state in '" + dir + "'", [&] { torch::save(optimizer, sink.writer()); });
  sink.finish();
}

void save_tensors(const std::string& path, const std::vector<at::Tensor>& tensors, const std::string& what) {
  core::FileSink sink(path);
  torch_io("cannot write " + what + " to '" + path + "'", [&] { torch::save(tensors, sink.writer()); });
  sink.finish();
}

std::vector<at::Tensor> load_tensors(const std::string& path, const std::string& what) {
  std::vector<at::Tensor> out;
  torch_io("cannot read " + what + " from '" + path + "'", [&] { torch::load(out, path); });
  return out;
}

void load_optimizer(const std::string& dir, torch::optim::Optimizer& optimizer) {
  const std::string file = dir + "/optimizer.pt";
  if (!exists(file)) throw IoError("checkpoint '" + dir + "' lacks optimizer.pt (the AdamW moments)");
  torch_io("cannot read optimizer state from '" + dir + "'", [&] { torch::load(optimizer, file); });
  // Every parameter's AdamW state, in the order of the parameter groups (what "parameter i" counts).
  size_t i = 0;
  for (const auto& group : optimizer.param_groups())
    for (const auto& p : group.params()) {
      const std::string what = "parameter " + std::to_string(i++) + "'s ";
      const auto it = optimizer.state().find(p.unsafeGetTensorImpl());
      if (it == optimizer.state().end()) continue;
      const auto* st = dynamic_cast<const torch::optim::AdamWParamState*>(it->second.get());
      if (!st) continue;
      require_step_count(st->step(), file, what + "step");
      require_finite(st->exp_avg(), file, what + "exp_avg");
      require_finite(st->exp_avg_sq(), file, what + "exp_avg_sq");
      require_finite(st->max_exp_avg_sq(), file, what + "max_exp_avg_sq");
    }
}

std::vector<at::Tensor> load_rng(const std::string& dir) { return load_tensors(dir + "/rng.pt", "RNG state"); }

}  // namespace gspo::io
