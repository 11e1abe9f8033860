#include "gspo/cli/plan_cmd.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "gspo/config/load.h"
#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/plan/memory.h"
#include "gspo/plan/model_shape.h"
#include "gspo/io/model_ref.h"
#include "gspo/reward/scorers/scorer_table.h"

namespace gspo::cli {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

std::string fmt_mb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", bytes / kMiB);
  return buf;
}

nlohmann::json terms_json(const std::vector<plan::Term>& ts) {
  auto out = nlohmann::json::array();
  for (const auto& t : ts) out.push_back({{"name", t.name}, {"mb", t.bytes / kMiB}, {"formula", t.formula}});
  return out;
}

nlohmann::json to_json(const plan::MemoryPlan& p, const PlanArgs& a, const config::Config& cfg) {
  const auto& s = p.shape;
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& ph : p.phases) phases[ph.name] = {{"peak_mb", ph.peak_bytes / kMiB}, {"terms", terms_json(ph.terms)}};
  return {{"model", {{"source", s.source}, {"architecture", s.architecture}, {"layers", s.num_layers},
                     {"hidden_size", s.hidden_size}, {"vocab_size", s.vocab_size}, {"moe_layers", s.moe_layers.size()},
                     {"num_experts", s.num_experts}}},
          {"parameters", p.parameters},
          {"world_size", a.world_size},
          {"zero_stage", cfg.distributed.zero_stage},
          {"dtype", cfg.model.dtype == config::Dtype::kBFloat16 ? "bfloat16" : "float32"},
          {"rows_per_rank", p.rows_per_rank},
          {"columns", p.columns},
          {"micro_rows", p.micro_rows},
          {"micro_tokens", p.micro_tokens},
          {"kv_rows", p.kv_rows},
          {"resident", terms_json(p.resident)},
          {"resident_mb", p.resident_bytes / kMiB},
          {"phases", phases},
          {"peak_phase", p.peak_phase},
          {"peak_mb", p.peak_bytes / kMiB},
          {"device_gb", a.device_gb},
          {"fits", p.peak_bytes <= a.device_gb * 1024 * kMiB},
          {"host", terms_json(p.host)},
          {"host_mb", p.host_bytes / kMiB},
          {"transfer_mb_per_step", {{"device_to_host", p.d2h_bytes / kMiB}, {"host_to_device", p.h2d_bytes / kMiB}}},
          {"not_available", terms_json(p.not_built)},
          {"notes", p.notes}};
}

void print_terms(const std::vector<plan::Term>& ts) {
  for (const auto& t : ts) {
    char line[96];
    std::snprintf(line, sizeof line, "  %-44s %9s MiB  ", t.name.c_str(), fmt_mb(t.bytes).c_str());
    std::cout << line << t.formula << "\n";
  }
}

// `who`: "" for every rank, else the kind of rank the plan is for ("training ranks (2 of 4)").
void print_table(const plan::MemoryPlan& p, const PlanArgs& a, const config::Config& cfg, const std::string& who) {
  const auto& s = p.shape;
  if (!who.empty()) std::cout << "=== " << who << " ===\n";
  std::cout << "model       " << s.source << ": " << s.architecture << ", " << p.parameters << " parameters, "
            << s.num_layers << " layers, hidden " << s.hidden_size << ", vocab " << s.vocab_size;
  if (!s.moe_layers.empty())
    std::cout << ", " << s.moe_layers.size() << " MoE layers x " << s.num_experts << " experts (top "
              << s.experts_per_token << ")";
  std::cout << "\nrun         " << (who.empty() ? std::to_string(a.world_size) + " rank(s)" : who) << ", zero_stage "
            << cfg.distributed.zero_stage << ", " << (cfg.model.dtype == config::Dtype::kBFloat16 ? "bfloat16" : "float32")
            << "; per rank " << p.rows_per_rank << " rows of " << p.columns << " columns";
  if (p.micro_rows > 0) std::cout << "; micro-batch " << p.micro_rows << " rows = " << p.micro_tokens << " tokens";
  if (p.kv_rows > 0) std::cout << "; KV cache for " << p.kv_rows << " rows";
  std::cout << "\n\n";
  std::cout << "resident (every phase)" << std::string(10, ' ') << fmt_mb(p.resident_bytes) << " MiB\n";
  print_terms(p.resident);
  for (const auto& ph : p.phases) {
    std::cout << "\nphase " << ph.name << ": peak " << fmt_mb(ph.peak_bytes) << " MiB = "
              << (ph.on_resident ? "resident" : "runtime") << " +\n";
    print_terms(ph.terms);
  }
  const double device = a.device_gb * 1024 * kMiB;
  std::cout << "\npeak per rank: " << fmt_mb(p.peak_bytes) << " MiB in the " << p.peak_phase << " phase; ";
  if (p.peak_bytes <= device)
    std::cout << "fits " << a.device_gb << " GiB (" << fmt_mb(device - p.peak_bytes) << " MiB to spare)\n";
  else
    std::cout << "does NOT fit " << a.device_gb << " GiB: " << fmt_mb(p.peak_bytes - device) << " MiB over\n";
  if (!p.host.empty()) {
    std::cout << "\nhost memory per rank (distributed.optimizer_offload)  " << fmt_mb(p.host_bytes) << " MiB\n";
    print_terms(p.host);
    std::cout << "transfer per optimizer step: " << fmt_mb(p.d2h_bytes) << " MiB device to host, " << fmt_mb(p.h2d_bytes)
              << " MiB host to device\n";
  }
  if (!p.not_built.empty()) {
    std::cout << "\nnot available in gspo yet (what it would save per rank):\n";
    print_terms(p.not_built);
  }
  for (const auto& n : p.notes) std::cout << "note: " << n << "\n";
}

}  // namespace

int plan(const PlanArgs& a) {
  // Numbers no machine has: NaN, inf, or past what the plan's byte arithmetic holds exactly.
  if (!(a.device_gb > 0 && a.device_gb <= 1e6))
    throw ConfigError("--device-gb must be positive, a number of GiB up to 1e6 (got " + std::to_string(a.device_gb) + ")");
  if (!std::isfinite(a.runtime_mb) || a.runtime_mb > 1e9)
    throw ConfigError("--runtime-mb must be a finite number of MiB, at most 1e9 (got " + std::to_string(a.runtime_mb) + ")");
  if (a.prompt_tokens > (int64_t{1} << 22))
    throw ConfigError("--prompt-tokens must be at most 4194304 (got " + std::to_string(a.prompt_tokens) + ")");
  if (a.world_size > (int64_t{1} << 20))
    throw ConfigError("--world-size must be at most 1048576 (got " + std::to_string(a.world_size) + ")");
  const auto cfg = config::load(a.config, a.overrides);
  if (a.hf_config.empty() && cfg.model.path.empty())
    throw ConfigError("model.path is empty: set it, or plan from a Hugging Face config.json with --hf-config");
  const auto shape = a.hf_config.empty() ? plan::read_model_shape(cfg.model.path) : plan::read_hf_config(a.hf_config);
  plan::PlanInputs in;
  in.world_size = a.world_size;
  in.prompt_tokens = a.prompt_tokens;
  in.runtime_mb = a.runtime_mb < 0 ? plan::kRuntimeMb : a.runtime_mb;
  in.device_gb = a.device_gb;
  for (const auto& row : reward::model_scorers()) {  // a model-backed reward: its weights and a scoring pass count too
    if (!config::uses_reward(cfg, row.kind)) continue;
    const std::string& path = row.path(cfg.reward);
    if (row.head == io::ModelLoad::Head::kReward) {
      in.scorers.push_back({row.kind, plan::read_reward_model_shape(path)});
      continue;
    }
    // A policy export's shape, or a config.json's (a judge planned before its export).
    const bool hf = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
    in.scorers.push_back({row.kind, hf ? plan::read_hf_config(path) : plan::read_model_shape(path)});
  }
  if (const auto& t = cfg.distill.teacher; !t.empty()) {  // distillation: the teacher's weights and pass on trainers
    const bool hf = t.size() >= 5 && t.compare(t.size() - 5, 5, ".json") == 0;
    in.teacher = hf ? plan::read_hf_config(t) : plan::read_model_shape(io::resolve_model_ref(t).model);
  }
  const auto p = plan::plan_memory(shape, cfg, in);
  const int64_t K = cfg.distributed.rollout_ranks;
  if (K == 0) {
    if (a.json) std::cout << to_json(p, a, cfg).dump(1) << "\n";
    else print_table(p, a, cfg, "");
    return 0;
  }
  // Rollout ranks (docs/async.md): the training ranks' plan, then a rollout rank's.
  const auto r = plan::plan_rollout_rank(shape, cfg, in);
  const std::string T = std::to_string(a.world_size - K), W = std::to_string(a.world_size);
  if (a.json) {
    auto j = to_json(p, a, cfg);
    j["rollout_ranks"] = K;
    j["rollout_rank"] = to_json(r, a, cfg);
    std::cout << j.dump(1) << "\n";
    return 0;
  }
  print_table(p, a, cfg, "training ranks (" + T + " of " + W + ")");
  std::cout << "\n";
  print_table(r, a, cfg, "rollout ranks (" + std::to_string(K) + " of " + W + ")");
  return 0;
}

}  // namespace gspo::cli
