#include "gspo/io/tensor_checks.h"

#include <torch/torch.h>

#include "gspo/core/error.h"

namespace gspo::io {

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

}  // namespace gspo::io
