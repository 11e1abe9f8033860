#include <nlohmann/json.hpp>

#include <torch/torch.h>

#include <cmath>
#include <iostream>

#include "gspo/cli/commands.h"
#include "gspo/core/device.h"
#include "gspo/core/error.h"
#include "gspo/io/model_load.h"
#include "gspo/model/policy.h"
#include "gspo/model/reward_model.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::cli {
namespace {

// "2" or "128001 128008 128009": every id that ends a response.
std::string eos_list(const model::Manifest& m) {
  std::string out;
  for (const int64_t id : m.eos_token_ids) out += (out.empty() ? "" : " ") + std::to_string(id);
  return out;
}

std::string routing_line(const model::Policy& policy) {
  if (!policy.has_routing()) return "none (no routing-change metric or algorithm.routing_replay; re-export for them)";
  const std::string api = "route_api " + std::to_string(policy.route_api());
  if (policy.moe_layers().empty()) return api + ", dense (no MoE layers)";
  std::string layers;
  for (int64_t i : policy.moe_layers()) layers += (layers.empty() ? "" : ",") + std::to_string(i);
  const int64_t capture = rollout::Sampler::capture_rows(policy);
  return api + ", MoE layers " + layers + " (moe_routing_change_frac, algorithm.routing_replay" +
         (policy.can_record_routes() ? ", the rollout's experts recorded" : "") + "; checked); CUDA decode " +
         (capture > 0 ? "captured as graphs up to " + std::to_string(capture) + " rows a step (moe_capture_rows)"
                      : "eager (no moe_capture_rows: an export whose MoE routing syncs the host)");
}

// A reward model (docs/model-contract.md, "Reward models"): its manifest, its tokenizer, and the contract's one check
// that can fail silently: a row's score is the same alone and right-padded beside a longer row.
int inspect_reward_model(const InspectArgs& a) {
  io::ModelLoad what;  // the one loader's reward-model head, as the model reward loads it (in float32 here)
  what.file = a.model;
  what.head = io::ModelLoad::Head::kReward;
  what.device = core::resolve_device(a.device, "--device");
  what.frozen = true;
  what.dtype = c10::kFloat;
  what.tokenizer = false;  // (its type is read from the export below)
  auto loaded = io::load_model(what);
  model::RewardModel& rm = *loaded.reward;
  const auto& m = rm.manifest();
  std::string tok_type = "none";
  if (!rm.tokenizer_json().empty()) {
    auto tok = tokenizer::from_spec(rm.tokenizer_json(), a.model);
    tok_type = nlohmann::json::parse(rm.tokenizer_json()).value("type", "?");
  }
  const int64_t n = std::min<int64_t>(16, m.max_seq_len), V = m.vocab_size;
  auto longer = (torch::arange(n, torch::kLong) * 7 + 3) % V;
  auto shorter = longer.narrow(0, 0, n / 2).clone();
  auto ids = torch::full({2, n}, m.pad_token_id, torch::kLong);
  ids[0].copy_(longer);
  ids[1].narrow(0, 0, n / 2).copy_(shorter);
  auto mask = torch::zeros({2, n}, torch::kLong);
  mask[0].fill_(1);
  mask[1].narrow(0, 0, n / 2).fill_(1);
  const auto dev = rm.device();
  const auto both = rm.score(ids.to(dev), mask.to(dev)).cpu();
  const auto alone = rm.score(shorter.view({1, -1}).to(dev), torch::ones({1, n / 2}, torch::kLong).to(dev)).cpu();
  const double diff = (both[1] - alone[0]).abs().item<double>();
  const bool ok = std::isfinite(diff) && diff <= 1e-4 * std::max(1.0, alone.abs().max().item<double>());
  if (!torch::isfinite(both).all().item<bool>() || !torch::isfinite(alone).all().item<bool>())
    throw ModelContractError(a.model + ": the reward model's scores are not finite (" + std::to_string(both[0].item<float>()) +
                             "): its weights hold NaN or inf, or overflow in its dtype");
  if (!ok)
    throw ModelContractError(a.model + ": a row's score changes when it is padded beside a longer row (|diff| " +
                             std::to_string(diff) + "): the score is not read at the last real token");
  nlohmann::json j{{"path", a.model},        {"kind", "reward_model"},     {"reward_api", m.reward_api},
                   {"architecture", m.architecture}, {"parameters", rm.num_parameters()}, {"layers", m.num_layers},
                   {"hidden_size", m.hidden_size}, {"vocab_size", m.vocab_size}, {"max_seq_len", m.max_seq_len},
                   {"dtype", m.dtype},        {"pad_token_id", m.pad_token_id}, {"tokenizer", tok_type},
                   {"padding_max_abs_diff", diff}, {"contract", "ok"}};
  if (a.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "reward model " << a.model << "\n"
            << "architecture " << m.architecture << " (reward_api " << m.reward_api << "; a score head read at each "
            << "row's last real token)\n"
            << "parameters   " << rm.num_parameters() << "\n"
            << "layers       " << m.num_layers << "  hidden " << m.hidden_size << "\n"
            << "vocab        " << m.vocab_size << "  max_seq_len " << m.max_seq_len << "  dtype " << m.dtype << "\n"
            << "pad id       " << m.pad_token_id << "\n"
            << "tokenizer    " << tok_type << "\n"
            << "contract     ok (a row alone vs padded beside a longer one: |diff| " << diff << ")\n"
            << "use          reward.kind model (or a component \"model:W\") with reward.model_path " << a.model << "\n";
  return 0;
}

}  // namespace


int inspect(const InspectArgs& a) {
  if (model::is_reward_model(a.model)) return inspect_reward_model(a);
  io::ModelLoad what;
  what.file = a.model;
  what.device = core::resolve_device(a.device, "--device");
  what.merge = a.adapter;
  what.tokenizer = false;  // (its type is read from the export below)
  auto loaded = io::load_model(what);
  auto& policy = *loaded.policy;
  const auto& adapter = loaded.merged;
  const double diff = loaded.contract_diff;
  const auto& m = policy.manifest();
  std::string tok_type = "none";
  if (!policy.tokenizer_json().empty()) {
    auto tok = tokenizer::from_spec(policy.tokenizer_json(), a.model);
    tok_type = nlohmann::json::parse(policy.tokenizer_json()).value("type", "?");
  }
  nlohmann::json j{{"path", a.model},          {"architecture", m.architecture}, {"parameters", policy.num_parameters()},
                   {"layers", m.num_layers},   {"hidden_size", m.hidden_size},   {"heads", m.num_heads},
                   {"kv_heads", m.num_kv_heads}, {"head_dim", m.head_dim},       {"vocab_size", m.vocab_size},
                   {"max_seq_len", m.max_seq_len}, {"dtype", m.dtype},           {"bos_token_id", m.bos_token_id},
                   {"eos_token_id", m.eos_token_id}, {"eos_token_ids", m.eos_token_ids},
                   {"pad_token_id", m.pad_token_id}, {"tokenizer", tok_type},
                   {"methods", policy.methods()}, {"kv_cache_max_abs_diff", diff}, {"contract", "ok"},
                   {"layer_api", policy.has_layers() ? 1 : 0}, {"slot_api", policy.slot_api()},
                   {"route_api", policy.route_api()}, {"moe_layers", policy.moe_layers()}};
  if (adapter)
    j["adapter"] = {{"path", a.adapter}, {"rank", adapter->rank}, {"alpha", adapter->alpha},
                    {"weights", adapter->names.size()}, {"targets", adapter->targets}, {"experts", adapter->experts}};
  if (a.json) {
    std::cout << j.dump() << "\n";
    return 0;
  }
  std::cout << "model        " << a.model << "\n"
            << "architecture " << m.architecture << " (contract v" << m.contract_version << ")\n"
            << "parameters   " << policy.num_parameters() << "\n"
            << "layers       " << m.num_layers << "  hidden " << m.hidden_size << "  heads " << m.num_heads
            << " (kv " << m.num_kv_heads << ", head_dim " << m.head_dim << ")\n"
            << "vocab        " << m.vocab_size << "  max_seq_len " << m.max_seq_len << "  dtype " << m.dtype << "\n"
            << "special ids  bos " << m.bos_token_id << "  eos " << eos_list(m) << "  pad " << m.pad_token_id << "\n"
            << "tokenizer    " << tok_type << "\n"
            << "methods      ";
  for (const auto& name : policy.methods()) std::cout << name << " ";
  std::cout << "\nper-layer    "
            << (policy.has_layers() ? "layer_api 1, " + std::to_string(policy.num_layers()) +
                                          " layers (activation checkpointing and the chunked head available; "
                                          "composition checked against forward)"
                                    : std::string("none (training runs through forward; re-export for "
                                                  "activation checkpointing and the chunked head)"))
            << "\nslots        "
            << (policy.slot_api() >= 3
                    ? "slot_api 3 (continuous batching under rollout.kv_cache_mb, append_slots, and a sequence-major "
                      "cache: each row's decode reads only its live keys, through the flash kernel on CUDA in bf16/fp16; "
                      "checked against forward)"
                : policy.has_append() ? "slot_api 2 (continuous batching under rollout.kv_cache_mb, and append_slots: "
                                      "tokens written into a running row; checked against forward)"
                : policy.has_slots()  ? "slot_api 1 (continuous batching under rollout.kv_cache_mb; checked against "
                                        "forward; re-export for append_slots)"
                                      : "none (under rollout.kv_cache_mb the sampler runs static batches; re-export for "
                                        "continuous batching)")
            << "\nrouting      " << routing_line(policy)
            << "\ncontract     ok (KV-cache decode vs forward: max |diff| " << diff << ")\n";
  if (adapter) {
    std::string targets;
    for (const auto& t : adapter->targets) targets += (targets.empty() ? "" : " ") + t;
    std::cout << "adapter      " << a.adapter << ": LoRA rank " << adapter->rank << ", alpha " << adapter->alpha
              << ", " << adapter->names.size() << " weights (" << targets << (adapter->experts ? ", experts" : "")
              << "), trained on this base; merged before the checks above\n";
  }
  return 0;
}

}  // namespace gspo::cli
