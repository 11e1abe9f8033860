#include "gspo/io/checkpoint_check.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/torch.h>

#include <exception>

#include "gspo/core/error.h"
#include "gspo/io/adapter_file.h"
#include "gspo/io/checkpoint.h"
#include "gspo/core/fs.h"

namespace gspo::io {
using core::exists;
using core::list_dir;
namespace {

std::string archive_damage(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader reader(path);
    for (const auto& name : reader.getAllRecords()) reader.getRecord(name);
    return "";
  } catch (const c10::Error& e) {
    return "'" + path + "' does not read back (" + std::string(e.what_without_backtrace()).substr(0, 160) + ")";
  } catch (const std::exception& e) {
    return "'" + path + "' does not read back (" + std::string(e.what()).substr(0, 160) + ")";
  }
}

}  // namespace

std::string checkpoint_damage(const std::string& dir) {
  try {
    read_meta(dir);
  } catch (const Error& e) {
    return e.what();
  }
  if (!exists(policy_file(dir)) && !exists(adapter_file(dir)))
    return "'" + policy_file(dir) + "' (or, training adapters, '" + adapter_file(dir) + "') is missing";
  if (exists(adapter_file(dir))) {  // the adapters' description, read as a resume reads it
    try {
      read_adapter_meta(dir);
    } catch (const Error& e) {
      return e.what();
    }
  }
  for (const auto& name : list_dir(dir)) {
    if (name.size() < 3 || name.compare(name.size() - 3, 3, ".pt") != 0) continue;
    auto problem = archive_damage(dir + "/" + name);
    if (!problem.empty()) return problem;
  }
  return "";
}

void require_finite(const at::Tensor& t, const std::string& file, const std::string& what) {
  if (!t.defined() || !t.is_floating_point() || torch::isfinite(t).all().item<bool>()) return;
  const int64_t bad = t.numel() - torch::isfinite(t).sum().item<int64_t>();
  throw IoError("checkpoint file '" + file + "': " + what + " holds " + std::to_string(bad) + " non-finite " +
                (bad == 1 ? "value" : "values") + " (NaN or Inf) of " + std::to_string(t.numel()) +
                ": the checkpoint is damaged (a resume would train on NaN); resume from an earlier one");
}

void require_step_count(int64_t step, const std::string& file, const std::string& what) {
  if (step >= 0) return;
  throw IoError("checkpoint file '" + file + "': " + what + " is " + std::to_string(step) +
                ", not a step count: the checkpoint is damaged; resume from an earlier one");
}

void wrong_state_bits(const std::string& where, const std::string& whose, int64_t written) {
  const std::string bits = std::to_string(written);
  throw ConfigError(where + " holds " + whose + "AdamW moments of optimizer.state_bits " + bits +
                    "; resume it with state_bits " + bits + " (a resume does not convert the moments' precision)");
}

std::string moment_name(size_t k, size_t n) {
  static const char* const k32[] = {"exp_avg", "exp_avg_sq"};
  static const char* const k8[] = {"exp_avg codes", "exp_avg absmax", "exp_avg_sq codes", "exp_avg_sq absmax"};
  if (n == 2 && k < 2) return k32[k];
  if (n == 4 && k < 4) return k8[k];
  return "moment tensor " + std::to_string(k);
}

IntactCheckpoint latest_intact_checkpoint(const std::string& run_dir) {
  IntactCheckpoint out;
  for (const auto& dir : complete_checkpoints_newest_first(run_dir)) {
    auto problem = checkpoint_damage(dir);
    if (problem.empty()) {
      out.dir = dir;
      break;
    }
    out.damaged.emplace_back(dir, problem);
  }
  return out;
}

}  // namespace gspo::io
