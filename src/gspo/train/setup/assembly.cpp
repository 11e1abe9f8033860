#include "gspo/train/setup/assembly.h"

#include <torch/torch.h>

#include "gspo/config/validate.h"
#include "gspo/core/cpu_bf16.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/data/dataset.h"
#include "gspo/env/episode.h"
#include "gspo/io/checkpoint.h"
#include "gspo/model/lora.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/grad_sync.h"
#include "gspo/reward/code/competition.h"
#include "gspo/reward/factory.h"
#include "gspo/rollout/sampler.h"
#include "gspo/rollout/sampling_config.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/setup/expert_setup.h"
#include "gspo/train/setup/teacher.h"
#include "gspo/train/sources/partial_source.h"
#include "gspo/train/sources/training_data.h"

namespace gspo::train {
namespace {

// Every rank starts from rank 0's weights; a fingerprint comparison afterwards proves it.
// `broadcast` false (ZeRO-3: every rank read the same file, and 4 bytes x parameters from rank 0 to every rank
// would be start-up's largest cost at scale): only the check that they agree.
// `as_loaded` (expert parallelism: each rank keeps other experts): the fingerprint taken before they were freed.
void sync_initial_weights(model::Policy& policy, parallel::Comm& comm, double bucket_bytes, bool broadcast,
                          const std::array<double, 2>* as_loaded = nullptr) {
  auto params = policy.parameters();
  if (broadcast) parallel::broadcast_parameters(comm, params, bucket_bytes);
  if (comm.world_size() == 1) return;
  const auto mine = as_loaded ? *as_loaded : model::weights_fingerprint(policy);
  auto all = comm.all_gather(torch::tensor({mine[0], mine[1]}, torch::kDouble)).view({-1, 2});
  for (int64_t r = 0; r < all.size(0); ++r)
    if (all[r][0].item<double>() != mine[0] || all[r][1].item<double>() != mine[1])
      throw DistributedError("rank " + std::to_string(comm.rank()) + ": the weights differ from rank " +
                             std::to_string(r) + "'s " + (broadcast ? "after the initial broadcast" :
                             "as loaded: every rank must read the same model file"));
  log::info("{} ranks start from identical weights (fingerprint {:.17g}, {:.17g})", all.size(0), mine[0], mine[1]);
}

// bf16 weights on a CPU (model.dtype or rollout.dtype): said once, with this CPU's measured factor and what to set.
void warn_cpu_bf16(const config::Config& c, c10::Device device) {
  const bool model_bf16 = c.model.dtype == config::Dtype::kBFloat16;
  if (!device.is_cpu() || (!model_bf16 && c.rollout.dtype != config::RolloutDtype::kBFloat16)) return;
  const double slow = core::cpu_bf16_matmul_slowdown();
  if (slow < 2) return;
  log::warn("{} bfloat16 on the CPU: a bf16 matrix product runs {:.0f}x slower than float32 on this CPU (measured "
            "just now: a linear layer's forward and backward products), so {} will take most of each step; on a CPU "
            "set {}", model_bf16 ? "model.dtype" : "rollout.dtype", slow, model_bf16 ? "the update" : "sampling",
            model_bf16 ? "--set model.dtype=float32 (and keep rollout.dtype same)" : "--set rollout.dtype=same");
}

// algorithm.routing_replay needs experts to replay: a model with the routing methods and at least one MoE layer.
void check_routing_replay(const config::Config& c, const model::Policy& policy) {
  if (c.algorithm.routing_replay == config::RoutingReplay::kNone) return;
  const std::string head = config::set_at(c, "algorithm.routing_replay") + "algorithm.routing_replay " +
                           config::name_of(c.algorithm.routing_replay) + " replays MoE routing, but '" +
                           policy.path() + "' ";
  if (!policy.has_routing())
    throw ConfigError(head + "has no routing methods (route_api; docs/model-contract.md): re-export it with "
                      "scripts/export_hf.py, or set algorithm.routing_replay: none");
  if (policy.moe_layers().empty())
    throw ConfigError(head + "is dense (no MoE layers): there is no routing to replay; set algorithm.routing_replay: "
                      "none");
  if (c.algorithm.routing_replay != config::RoutingReplay::kRollout) return;
  if (!policy.can_record_routes())
    throw ConfigError(head + "cannot record the experts its rollout runs: that needs routed_feed_forward (route_api 2) "
                      "and the slot passes one layer at a time (ep_api 2, slot_api 2; docs/model-contract.md): "
                      "re-export it with scripts/export_hf.py, or set algorithm.routing_replay: old");
  // Rollout ranks ship the routes with the rows (train/async/scored_wire.cpp), partial rollouts carry them with a
  // continued row (rollout::RowSoFar), expert parallelism's rollout records the group's routing (RolloutExperts).
}

// What a role loads as its policy. A trainer: trainable, from a checkpoint's policy.pt when resuming without adapters
// (a checkpoint with adapters holds them alone: the base is model.path); ZeRO-3 cuts the weights on the host and
// moves only this rank's shards to the device (Zero3's constructor), expert parallelism frees the other ranks'
// experts on the host, then moves the rest. A rollout rank: frozen in the sampling dtype, started where the trainers
// start (model.adapter merged, or the adapters' start).
io::ModelLoad role_load(const config::Config& c, const Role& role, c10::Device device) {
  if (!role.trains) {
    auto what = policy_load(c, device, true);
    what.frozen = true;
    what.dtype = rollout::sampling_dtype(c);
    return what;
  }
  const bool cut_on_host = c.distributed.zero_stage == 3 || c.distributed.expert_parallel > 1;
  auto what = policy_load(c, cut_on_host ? c10::Device(c10::kCPU) : device, !role.checkpoint);
  if (role.checkpoint && c.model.lora_rank == 0) {
    what.file = io::policy_file(*role.checkpoint);
    what.saved_by_run = true;
  }
  return what;
}

// A frozen copy of `file` on `device` (a bf16 sampling copy, the KL reference): no contract check, no tokenizer.
model::Policy frozen_copy(const std::string& file, c10::Device device, std::optional<c10::ScalarType> dtype,
                          const std::string& merge = "") {
  io::ModelLoad what;
  what.file = file;
  what.device = device;
  what.frozen = true;
  what.dtype = dtype;
  what.merge = merge;
  what.check_contract = what.tokenizer = false;
  return std::move(*io::load_model(what).policy);
}

}  // namespace

Role Role::trainer(std::optional<std::string> checkpoint, bool main, bool progress) {
  Role r;
  r.trains = true;
  r.checkpoint = std::move(checkpoint);
  r.main = main;
  r.progress = progress;
  return r;
}

Role Role::rollout_rank(bool main, bool progress) {
  Role r;
  r.trains = false;
  r.main = main;
  r.progress = progress;
  return r;
}

io::ModelLoad policy_load(const config::Config& cfg, c10::Device device, bool start) {
  io::ModelLoad what;
  what.file = cfg.model.path;
  what.device = device;
  what.tokenizer_path = cfg.tokenizer.path;
  const std::string from = start ? cfg.model.adapter : "";
  if (cfg.model.lora_rank > 0) {
    what.lora = model::lora_spec(cfg.model, static_cast<uint64_t>(cfg.train.seed));
    what.lora_start = from;
    what.alpha_key = config::set_at(cfg, "model.lora_alpha") + "model.lora_alpha";
  } else {
    what.merge = from;
  }
  return what;
}

namespace {

// The role's policy, adapters and tokenizer (io::load_model), the chat template resolved; a trainer's adapters gate its
// policy, its bf16 sampling copy (rollout.dtype bfloat16 without rollout ranks) and its KL reference are loaded.
void load_models(Assembly& a, config::Config& cfg, const Role& role, c10::Device load_device) {
  if (role.trains && cfg.model.path.empty())
    throw ConfigError("model.path is empty: set it to a TorchScript policy (make one with scripts/make_tiny_model.py)");
  const auto what = role_load(cfg, role, load_device);
  auto loaded = io::load_model(what);
  io::resolve_chat_template(cfg, loaded);
  a.base_fingerprint = loaded.base_fingerprint;
  a.policy = std::move(loaded.policy);
  a.lora = std::move(loaded.lora);
  a.tok = std::move(loaded.tok);
  if (!role.trains) return;
  const auto& c = cfg;
  check_routing_replay(c, *a.policy);
  if (a.lora) {
    a.policy->add_gate(a.lora.get());  // (what samples with them: the merged copy, once the engine is made)
    a.lora_gates = true;
  } else if (c.rollout.dtype == config::RolloutDtype::kBFloat16 && c.distributed.rollout_ranks == 0) {
    // config validation: only with a float32 policy; beside rollout ranks the trainers sample nothing (they send bf16)
    a.sampling_copy.emplace(*a.policy, frozen_copy(what.file, a.device, torch::kBFloat16), nullptr);
  }
  if (config::reference_is_base(c)) {
    log::info("KL reference: the policy's frozen base, run with the adapters off (no second copy of the model)");
  } else if (c.algorithm.kl_coef > 0) {  // algorithm.reference_model, or where training starts: model.path + adapter
    const bool own = c.algorithm.reference_model.empty();
    a.reference.emplace(frozen_copy(own ? c.model.path : c.algorithm.reference_model, a.device, std::nullopt,
                                    own ? c.model.adapter : ""));
  }
}

// Sampling reads the whole-model methods, which cannot see gated adapters. A trainer under ZeRO-3 merges them into its
// whole hold, which a view of the policy samples; otherwise a copy loaded on the host in the sampling dtype takes the
// (cast) base's untargeted tensors and moves only its adapted weights to the device, where they are merged after each
// step (a rollout rank: after each batch whose adapters it received).
void merged_copy(Assembly& a, const config::Config& cfg, const Role& role) {
  if (role.trains && cfg.distributed.zero_stage == 3) {
    a.sampling_copy.emplace(*a.policy, a.policy->ungated_view(), nullptr);
    log::info("sampling: the whole hold gathers the sharded base and merges the adapters into it in place (no copy)");
    return;
  }
  a.sampling_copy.emplace(*a.policy, frozen_copy(cfg.model.path, c10::Device(c10::kCPU),
                                                 rollout::sampling_dtype(cfg)), a.lora.get());
  auto& copy = a.sampling_copy->model();
  const int64_t shared = a.lora->share_untargeted(copy);
  copy.move_to(a.device);
  if (role.trains)
    log::info("sampling copy: shares {} of the base's {} weights with the policy; holds the {} adapted ones, merged "
              "after each step", shared, a.policy->num_parameters(), a.policy->num_parameters() - shared);
}

// A trainer's update engine (after the weights agree on every rank), which casts or shards the policy.
std::unique_ptr<UpdateEngine> make_engine(Assembly& a, const config::Config& cfg, parallel::Comm& comm) {
  const double bucket_bytes = cfg.distributed.bucket_mb * 1024 * 1024;
  sync_initial_weights(*a.policy, comm, bucket_bytes, cfg.distributed.zero_stage != 3 && !a.experts,
                       a.experts ? &a.experts->as_loaded : nullptr);
  EngineOptions eo;  // named fields: a positional list once put bucket_bytes into keep_whole
  eo.optimizer = cfg.optimizer;
  eo.dtype = cfg.model.dtype;
  eo.zero_stage = cfg.distributed.zero_stage;
  eo.keep_whole = cfg.distributed.zero3_keep_whole;
  eo.overlap = cfg.distributed.zero3_overlap;
  eo.offload = cfg.distributed.optimizer_offload;
  eo.bucket_bytes = bucket_bytes;
  eo.device = a.device;
  eo.lora = a.lora.get();
  if (a.experts) {
    eo.experts = a.experts->shards.get();
    eo.expert_replicas = a.experts->groups.replicas.get();
  }
  return make_update_engine(*a.policy, eo, comm);
}

}  // namespace

Assembly::Assembly(config::Config& cfg, const Role& role, c10::Device dev, parallel::Comm& comm) : device(dev) {
  if (cfg.train.threads > 0) torch::set_num_threads(static_cast<int>(cfg.train.threads));
  fault = read_fault();
  apply_fault(fault, cfg, role.main);
  auto rows = data::load_dataset(cfg.data);
  reward::check_competition_rows(rows);  // a competition row's limits and checker: refused before any sampling
  verifier = reward::make_verifier(cfg, rows, device);
  torch::manual_seed(static_cast<uint64_t>(cfg.train.seed));
  if (role.trains) {
    experts = open_expert_parallel(cfg, comm);
    load_in_turns(comm, experts != nullptr, [&] {  // expert parallelism: a rank's experts kept before the next loads
      load_models(*this, cfg, role, device);
      if (!experts) return;
      keep_experts(cfg, *policy, *experts, comm.rank());
      policy->move_to(device);  // (loaded on the host: the whole model may not fit the device)
    });
    if (role.main) warn_cpu_bf16(cfg, device);
  } else {
    load_models(*this, cfg, role, device);
  }
  examples = fit_training_rows(std::move(rows), cfg, *tok, *policy, role.trains && role.main, dropped_prompts);
  sources = data::number_sources(examples);  // (every process numbers the same rows alike)
  if (role.trains && role.main && !cfg.data.mix.empty()) log::info("{}", data::describe_mix(cfg.data, examples));
  if (role.trains) engine = make_engine(*this, cfg, comm);
  std::optional<LoadedTeacher> loaded_teacher;  // (the rollout ranks sample only: the trainers score their rows)
  if (role.trains && !cfg.distill.teacher.empty()) {
    loaded_teacher.emplace(load_teacher(cfg, device, *tok, *policy));
    teacher.emplace(std::move(loaded_teacher->policy));
  }
  if (lora) merged_copy(*this, cfg, role);
  // After the update engine: the policy is on its device then (ZeRO-3 moves it), which the sampler's set-up reads.
  auto sp = rollout::sampling_params(cfg);
  sp.progress = role.progress;
  sp.record_routes = cfg.algorithm.routing_replay == config::RoutingReplay::kRollout;  // (R3: checked at load)
  apply_fault(fault, sp);
  sampler = std::make_unique<rollout::Sampler>(sampling_model(), *tok, sp);
  tools = env::make_tool_env(cfg, *tok, sampling_model());
  if (loaded_teacher && cfg.distill.chat_template != config::TeacherChat::kStudent)
    teacher_prompts = std::make_unique<TeacherPrompts>(std::move(loaded_teacher->format),
                                                       std::move(loaded_teacher->tok), examples,
                                                       env::shown_tools(tools.get()));
  if (reference) reference->set_param_dtype(policy->parameters().front().scalar_type());
}

Assembly::~Assembly() {
  if (lora_gates) policy->remove_gate(lora.get());
}

model::Policy& Assembly::eval_model(bool refresh) {
  if (!lora) return *policy;
  if (refresh) sampling_copy->refresh();
  return sampling_copy->model();
}

std::unique_ptr<RolloutSource> Assembly::local_source(const config::Config& cfg, parallel::Comm& comm) {
  SamplingCopy* copy = sampling_copy ? &*sampling_copy : nullptr;
  if (cfg.async.partial_rollout)
    return std::make_unique<PartialSource>(cfg, *policy, copy, *tok, examples, *verifier, *sampler, comm);
  return std::make_unique<InProcessSource>(cfg, *policy, copy, *tok, examples, *verifier, *sampler, comm, tools.get());
}

}  // namespace gspo::train
