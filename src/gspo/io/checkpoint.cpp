#include "gspo/io/checkpoint.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <unistd.h>

#include <cstdio>

#include "gspo/core/error.h"
#include "gspo/core/resources.h"
#include "gspo/io/fs.h"
#include "gspo/model/policy.h"

namespace gspo::io {
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

std::string save_checkpoint(const std::string& run_dir, const CheckpointMeta& meta, const model::Policy& policy,
                            const OptimizerWriter& write_optimizer, const std::vector<at::Tensor>& rng_states,
                            const std::string& config_yaml, int64_t keep_last) {
  const std::string root = run_dir + "/checkpoints";
  ensure_dir(root);
  const std::string final_dir = root + "/" + step_name(meta.step);
  const std::string tmp = root + "/.tmp-" + step_name(meta.step) + "-" + std::to_string(::getpid());
  remove_all(tmp);
  ensure_dir(tmp);
  policy.save(tmp + "/policy.pt");
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
  if (exists(final_dir)) {
    const std::string old = final_dir + ".old";
    remove_all(old);
    std::rename(final_dir.c_str(), old.c_str());
    if (std::rename(tmp.c_str(), final_dir.c_str()) != 0) throw IoError("cannot rename '" + tmp + "' to '" + final_dir + "'");
    remove_all(old);
  } else if (std::rename(tmp.c_str(), final_dir.c_str()) != 0) {
    throw IoError("cannot rename '" + tmp + "' to '" + final_dir + "': " + std::strerror(errno));
  }
  sync_dir(root);
  auto all = complete_checkpoints(root);
  for (size_t i = 0; i + static_cast<size_t>(keep_last) < all.size(); ++i) remove_all(root + "/" + all[i]);
  return final_dir;
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
    m.step = j.at("step");
    m.optimizer_steps = j.at("optimizer_steps");
    m.data_epoch = j.at("data_epoch");
    m.data_position = j.at("data_position");
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw IoError("checkpoint state '" + path + "' is damaged: " + e.what());
  }
}

void save_optimizer(const std::string& dir, torch::optim::Optimizer& optimizer) {
  torch_io("cannot write optimizer state in '" + dir + "'", [&] { torch::save(optimizer, dir + "/optimizer.pt"); });
}

void save_tensors(const std::string& path, const std::vector<at::Tensor>& tensors, const std::string& what) {
  torch_io("cannot write " + what + " to '" + path + "'", [&] { torch::save(tensors, path); });
}

std::vector<at::Tensor> load_tensors(const std::string& path, const std::string& what) {
  std::vector<at::Tensor> out;
  torch_io("cannot read " + what + " from '" + path + "'", [&] { torch::load(out, path); });
  return out;
}

void load_optimizer(const std::string& dir, torch::optim::Optimizer& optimizer) {
  torch_io("cannot read optimizer state from '" + dir + "'", [&] { torch::load(optimizer, dir + "/optimizer.pt"); });
}

std::vector<at::Tensor> load_rng(const std::string& dir) { return load_tensors(dir + "/rng.pt", "RNG state"); }

}  // namespace gspo::io
