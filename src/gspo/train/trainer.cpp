// Trainer setup (models, data, update engine, run directory, resume) and the step loop.
#include "gspo/rollout/sampling_config.h"
#include "gspo/train/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "gspo/config/load.h"
#include "gspo/config/validate.h"
#include "gspo/core/cpu_bf16.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/core/interrupt.h"
#include "gspo/core/log.h"
#include "gspo/data/dataset.h"
#include "gspo/data/prompt_fit.h"
#include "gspo/env/episode.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/grad_sync.h"
#include "gspo/eval/eval_sets.h"
#include "gspo/eval/validation.h"
#include "gspo/io/adapter_file.h"
#include "gspo/io/checkpoint.h"
#include "gspo/io/checkpoint_check.h"
#include "gspo/io/metrics_log.h"
#include "gspo/io/tensorboard.h"
#include "gspo/model/sampling_phase.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/reward/base/verifier.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/chat_tools.h"
#include "gspo/tokenizer/tokenizer.h"
#include "gspo/train/assembly.h"
#include "gspo/train/checkpointing.h"
#include "gspo/train/expert_setup.h"
#include "gspo/train/rollout_log.h"
#include "gspo/train/greedy_eval.h"
#include "gspo/train/rank_share.h"
#include "gspo/train/sources/sampling_copy.h"
#include "gspo/train/step.h"
#include "gspo/train/sources/partial_source.h"
#include "gspo/train/async/streamed_source.h"
#include "gspo/train/async/async_schedule.h"
#include "gspo/train/sources/training_data.h"
#include "gspo/train/engines/update_engine.h"

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

// The summary's async and partial lines: sums over this invocation's steps.
struct AsyncTally {
  double lag = 0, rows = 0, wait_s = 0, step_s = 0, rollout_wait = 0, rollout_total = 0;
  double spanned = 0, spanned_rows = 0, carried = 0, steps = 0;
  int64_t lag_max = 0;
  void add(const StepMetrics& m) {
    spanned += m.spanned_rows.sum, spanned_rows += m.spanned_rows.count;
    carried += static_cast<double>(m.carried_rows), steps += 1;
    for (double v : m.version_lag.rows) lag += v;
    rows += static_cast<double>(m.version_lag.rows.size());
    lag_max = std::max<int64_t>(lag_max, static_cast<int64_t>(m.version_lag.max()));
    wait_s += m.time_rollout_wait_s, step_s += m.time_step_s;
    rollout_wait += m.rollout_idle.sum, rollout_total += m.rollout_idle.count;
  }
  void into(TrainSummary& s) const {
    s.lag_mean = rows > 0 ? lag / rows : 0;
    s.lag_max = lag_max;
    s.trainer_idle = step_s > 0 ? wait_s / step_s : 0;
    s.rollout_idle = rollout_total > 0 ? rollout_wait / rollout_total : 0;
    s.spanned = spanned_rows > 0 ? spanned / spanned_rows : 0;
    s.carried = steps > 0 ? carried / steps : 0;
  }
};

double window_mean(const std::vector<double>& v, bool head) {
  if (v.empty()) return 0;
  const size_t n = std::max<size_t>(1, v.size() / 10);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += head ? v[i] : v[v.size() - 1 - i];
  return sum / static_cast<double>(n);
}

}  // namespace

struct Trainer::Impl : Assembly {
  config::Config cfg;
  std::string config_yaml;  // resolved config, stored with each checkpoint
  parallel::Comm& comm;
  parallel::Comm* link = nullptr;  // the whole job with the rollout ranks (distributed.rollout_ranks > 0)
  // (Assembly: the policy, its adapters (the only weights trained with model.lora_rank), the sampling copy, the
  // tokenizer, rows, verifier, sampler and tools)
  std::array<double, 2> base_fingerprint{};   // with lora: model.path's weights as loaded
  std::unique_ptr<ExpertParallel> experts;    // distributed.expert_parallel > 1: this rank's experts (a gate)
  std::optional<model::Policy> reference;  // only when algorithm.kl_coef > 0
  std::unique_ptr<RolloutSource> source;  // the step's rounds (step_runner())
  std::unique_ptr<UpdateEngine> engine;
  std::optional<Progress> progress;
  std::unique_ptr<io::MetricsLog> metrics;
  std::unique_ptr<io::EventWriter> tensorboard;  // logging.tensorboard (rank 0)
  std::unique_ptr<eval::Validation> validation;     // eval.every > 0
  std::unique_ptr<RolloutLog> rollout_log;          // logging.rollouts_every > 0
  std::unique_ptr<io::MetricsLog> validation_log;   // RUN/validation.jsonl (rank 0)
  int64_t dropped_prompts = 0;  // rows left out at load: prompt + max_new_tokens over max_seq_len
  std::vector<int64_t> carried;  // from the checkpoint resumed: groups partial rollouts carried past it

  Impl(const config::Config& c, parallel::Comm& cm) : cfg(c), config_yaml(config::to_yaml(c)), comm(cm) {}
  ~Impl() {
    if (lora && policy) policy->remove_gate(lora.get());
  }
  void load_models(const std::optional<std::string>& ckpt, c10::Device device);
  // Validation and the held-out evaluation read the trained weights: the policy, or with adapters the merged copy
  // (taking the adapters of the last step first).
  model::Policy& eval_model() {
    if (!lora) return *policy;
    sampling_copy->refresh();
    return sampling_copy->model();
  }
  // With adapters (after the update engine, which casts or shards the base): what samples with them merged.
  void make_lora_sampling_copy(c10::Device device);
  // Collective: a checkpoint of the state after progress.step (what the source carries into the next step with it).
  std::string save(Progress& p) {
    return save_checkpoint(cfg, config_yaml, *policy, *engine, p, comm, source->carried_examples(), adapter_meta());
  }
  // What a checkpoint of adapters says about them (no adapters: lora null).
  AdapterState adapter_meta() const {
    if (!lora) return {};
    io::AdapterMeta m;
    m.rank = cfg.model.lora_rank;
    m.alpha = cfg.model.lora_alpha;
    m.targets = cfg.model.lora_targets;
    m.experts = cfg.model.lora_experts;
    m.base_path = std::filesystem::absolute(cfg.model.path).lexically_normal().string();
    m.base_fingerprint = base_fingerprint;
    return {lora.get(), m};
  }
  void open_metrics();
  // Runs the validation sets on every rank; rank 0 logs them and appends them to validation.jsonl. Returns the
  // metrics-line fields.
  nlohmann::ordered_json validate(int64_t step, TrainSummary& sum);
  struct RunTally;
  void announce() const;  // the run's first line
  void record_step(StepMetrics& m, RunTally& t, TrainSummary& sum);
  void evaluate_heldout(TrainSummary& sum);
  StepRunner step_runner() {
    if (link)
      source = std::make_unique<StreamedSource>(cfg, *link, comm, *policy, *engine, progress->step, progress->cursor,
                                                lora.get());
    else
      source = local_source(cfg, comm);
    source->resume_carried(carried);
    return StepRunner({cfg, *policy, reference ? &*reference : nullptr, *verifier, *source, comm, *engine,
                       config::reference_is_base(cfg) ? lora.get() : nullptr,
                       experts ? &experts->shards->group() : nullptr, rollout_log.get()});
  }
};

namespace {

// algorithm.routing_replay needs experts to replay: a model with the routing methods and at least one MoE layer.
void check_routing_replay(const config::Config& c, const model::Policy& policy) {
  if (c.algorithm.routing_replay == config::RoutingReplay::kNone) return;
  const std::string head = config::set_at(c, "algorithm.routing_replay") + "algorithm.routing_replay " + config::name_of(c.algorithm.routing_replay) +
                           " replays MoE routing, but '" + policy.path() + "' ";
  if (!policy.has_routing())
    throw ConfigError(head + "has no routing methods (route_api; docs/model-contract.md): re-export it with "
                      "scripts/export_hf.py, or set algorithm.routing_replay: none");
  if (policy.moe_layers().empty())
    throw ConfigError(head + "is dense (no MoE layers): there is no routing to replay; set algorithm.routing_replay: "
                      "none");
}

}  // namespace

void Trainer::Impl::load_models(const std::optional<std::string>& ckpt, c10::Device device) {
  const auto& c = cfg;
  if (c.model.path.empty())
    throw ConfigError("model.path is empty: set it to a TorchScript policy (make one with scripts/make_tiny_model.py)");
  const bool adapters = c.model.lora_rank > 0;  // the base is always model.path; a checkpoint holds the adapters
  // ZeRO-3 cuts the weights on the host and moves only this rank's shards to the device (Zero3's constructor); expert
  // parallelism frees the other ranks' experts on the host, then moves the rest (Trainer's constructor).
  const bool cut_on_host = c.distributed.zero_stage == 3 || c.distributed.expert_parallel > 1;
  auto what = model_load(c, cut_on_host ? c10::Device(c10::kCPU) : device, !ckpt);  // a checkpoint: where it stood
  if (ckpt && !adapters) {
    what.file = io::policy_file(*ckpt);
    what.saved_by_run = true;
  }
  auto loaded = io::load_model(what);
  io::resolve_chat_template(cfg, loaded);
  base_fingerprint = loaded.base_fingerprint;
  take(std::move(loaded));
  check_routing_replay(c, *policy);
  if (adapters) {
    policy->add_gate(lora.get());  // (what samples with them: make_lora_sampling_copy, once the engine is made)
  } else if (c.rollout.dtype == config::RolloutDtype::kBFloat16 && c.distributed.rollout_ranks == 0) {
    // config validation: only with a float32 policy; beside rollout ranks the trainers sample nothing (they send bf16)
    io::ModelLoad copy;
    copy.file = what.file;
    copy.device = device;
    copy.frozen = true;
    copy.dtype = torch::kBFloat16;
    copy.check_contract = copy.tokenizer = false;
    sampling_copy.emplace(*policy, std::move(*io::load_model(copy).policy), nullptr);
  }
  if (config::reference_is_base(c)) {
    log::info("KL reference: the policy's frozen base, run with the adapters off (no second copy of the model)");
  } else if (c.algorithm.kl_coef > 0) {
    io::ModelLoad ref;  // algorithm.reference_model, or the model training starts from: model.path with model.adapter
    ref.file = c.algorithm.reference_model.empty() ? c.model.path : c.algorithm.reference_model;
    if (c.algorithm.reference_model.empty()) ref.merge = c.model.adapter;
    ref.device = device;
    ref.frozen = true;
    ref.check_contract = ref.tokenizer = false;
    reference.emplace(std::move(*io::load_model(ref).policy));
  }
}

// Sampling reads the whole-model methods, which cannot see gated adapters. ZeRO-3 merges them into its whole hold, which
// a view of the policy samples; otherwise a copy loaded on the host takes the (cast) base's untargeted tensors and
// moves only its adapted weights to the device, where they are merged after each step.
void Trainer::Impl::make_lora_sampling_copy(c10::Device device) {
  if (cfg.distributed.zero_stage == 3) {
    sampling_copy.emplace(*policy, policy->ungated_view(), nullptr);
    log::info("sampling: the whole hold gathers the sharded base and merges the adapters into it in place (no copy)");
    return;
  }
  const int64_t shared = merged_copy(cfg, device);
  log::info("sampling copy: shares {} of the base's {} weights with the policy; holds the {} adapted ones, merged "
            "after each step", shared, policy->num_parameters(), policy->num_parameters() - shared);
}

// Rank 0 only: the metrics of steps after the resume point are dropped (they run again), the config written.
void Trainer::Impl::open_metrics() {
  const std::string path = cfg.train.output_dir + "/metrics.jsonl";
  const auto dropped = io::MetricsLog::truncate_after(path, progress->step);
  if (dropped.torn > 0)
    log::warn("{}: dropped {} line(s) that are not JSON (a write cut off by a crash)", path, dropped.torn);
  if (dropped.later_steps > 0) log::info("{}: dropped {} line(s) of steps after the checkpoint; they run again", path,
                                         dropped.later_steps);
  core::atomic_write(cfg.train.output_dir + "/config.yaml", config_yaml);
  metrics = std::make_unique<io::MetricsLog>(path);
  tensorboard = io::open_run_events(cfg.logging.tensorboard, cfg.train.output_dir, path, config_yaml);
  if (tensorboard) log::info("TensorBoard events: {} (tensorboard --logdir on its directory)", tensorboard->path());
  if (rollout_log) rollout_log->truncate_after(progress->step);
  if (validation) {
    const std::string vpath = cfg.train.output_dir + "/validation.jsonl";
    io::MetricsLog::truncate_after(vpath, progress->step);
    validation_log = std::make_unique<io::MetricsLog>(vpath);
  }
}

nlohmann::ordered_json Trainer::Impl::validate(int64_t step, TrainSummary& sum) {
  const auto t0 = std::chrono::steady_clock::now();
  if (lora) eval_model();  // the merged copy takes this step's adapters
  auto summaries = [&] {
    const WholeWeights whole(*engine);  // ZeRO-3: sampling needs the whole weights
    return validation->run();
  }();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto fields = eval::Validation::headline(summaries);
  if (comm.is_main()) {
    log::info("validation after step {} ({:.1f}s): {}", step, seconds, eval::Validation::one_line(summaries));
    nlohmann::ordered_json line{{"step", step}, {"seconds", seconds}, {"datasets", summaries}};
    if (validation_log) validation_log->append(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  if (sum.validation_first.empty()) {
    sum.validation_first = fields;
    sum.validation_first_step = step;
  }
  sum.validation_last = fields;
  sum.validation_last_step = step;
  return fields;
}

Trainer::Trainer(const config::Config& cfg_in, const std::string& resume, const Placement& where) {
  if (where.comm == nullptr) throw std::invalid_argument("Trainer: Placement::comm is null");
  impl_ = std::make_unique<Impl>(cfg_in, *where.comm);
  auto& s = *impl_;
  const config::Config& cfg = s.cfg;  // the run's copy: what the loaded model resolves (data.chat_template auto) in
  s.link = where.link;
  const std::string& run_dir = cfg.train.output_dir;
  check_world_size(cfg, s.link ? s.link->world_size() : s.comm.world_size());
  if (s.comm.is_main())
    for (const auto& gone : io::remove_leftovers(run_dir)) log::info("removed {} (left half-done by an earlier run)", gone);
  auto ckpt = find_resume_point(cfg, resume);
  if (s.comm.is_main()) core::ensure_dir(run_dir);
  auto rows = s.load_rows(cfg, where.device);
  s.experts = open_expert_parallel(cfg, s.comm);
  load_in_turns(s.comm, s.experts != nullptr, [&] {  // expert parallelism: a rank's experts kept before the next loads
    s.load_models(ckpt, where.device);
    if (!s.experts) return;
    keep_experts(cfg, *s.policy, *s.experts, s.comm.rank());
    s.policy->move_to(where.device);  // (loaded on the host: the whole model may not fit the device)
  });
  if (s.comm.is_main()) warn_cpu_bf16(cfg, where.device);
  s.fit_rows(std::move(rows), cfg, s.comm.is_main(), s.dropped_prompts);
  s.progress.emplace(Progress{0, 0,
                              data::Cursor(static_cast<int64_t>(s.examples.size()), cfg.data.shuffle,
                                           static_cast<uint64_t>(cfg.data.seed)),
                              at::detail::createCPUGenerator(static_cast<uint64_t>(cfg.train.seed))});
  const double bucket_bytes = cfg.distributed.bucket_mb * 1024 * 1024;
  sync_initial_weights(*s.policy, s.comm, bucket_bytes, cfg.distributed.zero_stage != 3 && !s.experts,
                       s.experts ? &s.experts->as_loaded : nullptr);
  EngineOptions eo;  // named fields: a positional list once put bucket_bytes into keep_whole
  eo.optimizer = cfg.optimizer;
  eo.dtype = cfg.model.dtype;
  eo.zero_stage = cfg.distributed.zero_stage;
  eo.keep_whole = cfg.distributed.zero3_keep_whole;
  eo.overlap = cfg.distributed.zero3_overlap;
  eo.offload = cfg.distributed.optimizer_offload;
  eo.bucket_bytes = bucket_bytes;
  eo.device = where.device;
  eo.lora = s.lora.get();
  if (s.experts) {
    eo.experts = s.experts->shards.get();
    eo.expert_replicas = s.experts->groups.replicas.get();
  }
  s.engine = make_update_engine(*s.policy, eo, s.comm);
  if (s.lora) s.make_lora_sampling_copy(where.device);
  // After the update engine: the policy is on its device then (ZeRO-3 moves it), which the sampler's set-up reads.
  s.make_sampler(cfg, cfg.logging.progress);
  if (s.reference) s.reference->set_param_dtype(s.policy->parameters().front().scalar_type());
  if (ckpt) s.carried = restore(*ckpt, *s.engine, *s.progress, s.config_yaml, s.adapter_meta());
  if (s.lora) log::info("training low-rank adapters: rank {}, alpha {}, {} weights adapted ({} trained parameters; the "
                        "base's {} frozen)", cfg.model.lora_rank, cfg.model.lora_alpha, s.lora->adapters().size(),
                        s.lora->num_parameters(), s.policy->num_parameters());
  if (cfg.eval.every > 0)
    s.validation = std::make_unique<eval::Validation>(cfg, s.lora ? s.sampling_copy->model() : *s.policy, *s.tok,
                                                      s.policy->manifest().max_seq_len, s.comm, *s.verifier);
  if (cfg.logging.rollouts_every > 0) s.rollout_log = std::make_unique<RolloutLog>(cfg, *s.tok, s.comm, where.device);
  if (s.comm.is_main()) s.open_metrics();  // only rank 0 writes the run directory
  s.comm.barrier("start-up");
}

Trainer::~Trainer() = default;

namespace {
// The steps of a run of `in_a_row` bad steps that say so: the first and every 20th, so a persistent problem is noticed
// without a line every step.
bool say_in_a_row(int64_t in_a_row) { return in_a_row == 1 || (in_a_row > 0 && in_a_row % 20 == 0); }

// A step at least half of whose tool calls were tool errors (every rank's calls): said on the first such step and every
// 20th in a row, like a batch of equal rewards, since episodes whose tools fail teach the model little of use.
void warn_tool_errors(const StepMetrics& m, bool main, int64_t& in_a_row) {
  const double calls = m.tool_calls.sum;
  in_a_row = calls > 0 && 2 * static_cast<double>(m.tool_errors) >= calls ? in_a_row + 1 : 0;
  if (!main || !say_in_a_row(in_a_row)) return;
  log::warn("step {}: {} of {} tool calls were tool errors ({} timed out past tools.timeout_s; {} step(s) in a row): "
            "the episodes' observations are error messages; check tools.list's programs, and the calls the model "
            "writes (gspo eval writes each episode with its observations to samples.jsonl)",
            m.step, m.tool_errors, std::llround(calls), m.tool_timeouts, in_a_row);
}

// A step at least half of whose rows the reward model or the judge could not score (every rank's rows): said on the
// first such step and every 20th in a row, with this rank's latest reason; those rows got reward 0 from the scorer.
void warn_scoring_failures(const StepMetrics& m, bool main, int64_t& in_a_row) {
  in_a_row = m.reward_model_rows > 0 && 2 * m.reward_model_failed >= m.reward_model_rows ? in_a_row + 1 : 0;
  if (!main || !say_in_a_row(in_a_row)) return;
  log::warn("step {}: {} of {} rows could not be scored by the reward model or judge ({} step(s) in a row; latest: "
            "{}): they get reward 0 from it; metrics.jsonl counts them in reward_model_failed",
            m.step, m.reward_model_failed, m.reward_model_rows, in_a_row,
            m.reward_model_failure.empty() ? "on another rank" : m.reward_model_failure);
}
}  // namespace

// What the loop keeps across steps: the summary's windows and the warnings that count steps in a row.
struct Trainer::Impl::RunTally {
  std::vector<double> rewards, accs;
  int64_t flat_steps = 0;  // consecutive steps whose rewards were all equal
  int64_t tool_steps = 0;  // consecutive steps at least half of whose tool calls failed
  int64_t unscored_steps = 0;  // consecutive steps at least half of whose rows the reward model or judge failed
  AsyncTally async;        // distributed.rollout_ranks > 0 or async.partial_rollout
};

void Trainer::Impl::announce() const {
  const auto& c = cfg;
  log::info("training {} ({} loss) from step {} to {}: {} prompts x {} samples, {} mini-batches per step{}{}",
            policy->path(), config::name_of(c.algorithm.loss), progress->step, c.train.max_steps,
            c.rollout.prompts_per_step, c.rollout.group_size, c.algorithm.num_minibatches,
            comm.world_size() > 1 ? fmt::format(", {} ranks ({})", comm.world_size(), comm.backend()) : "",
            link ? fmt::format(" training beside {} rollout rank(s), samples at most {} version(s) stale (async."
                               "max_staleness), weights sent every {} step(s)", c.distributed.rollout_ranks,
                               c.async.max_staleness, c.async.sync_every) : "");
}

// A step's metrics line (with validation's fields when it was due), its progress line, tallies and warnings.
void Trainer::Impl::record_step(StepMetrics& m, RunTally& t, TrainSummary& sum) {
  const auto& c = cfg;
  nlohmann::ordered_json fields;
  if (validation && validation->due(progress->step, c.train.max_steps)) fields = validate(progress->step, sum);
  const std::string line = json_line(m, &fields);
  if (metrics) metrics->append(line);
  if (tensorboard) tensorboard->metrics_line(line);
  t.rewards.push_back(m.reward.mean());
  t.accs.push_back(m.correct.mean());
  if (m.shown(Shown::kStale)) t.async.add(m);
  sum.skipped_updates += m.skipped_updates;
  if (c.logging.progress && comm.is_main()) log::info("{}", progress_line(m, c.train.max_steps));
  // Every reward equal (across the global batch) gives every advantage 0: nothing to learn from. Said on the first
  // such step and every 20th in a row, so a reward that never varies (a wrong answer key, a verifier that cannot
  // parse the responses) is noticed.
  t.flat_steps = m.reward.max() == m.reward.min() ? t.flat_steps + 1 : 0;
  if (comm.is_main() && say_in_a_row(t.flat_steps)) {
    const double r = m.reward.min();
    log::warn("step {}: every reward of the batch is {} ({} step(s) in a row): no learning signal this step{}",
              progress->step, r, t.flat_steps,
              r <= 0 ? "; if it persists, check the answers and the verifier (gspo generate shows responses)" : "");
  }
  if (m.shown(Shown::kScoring)) warn_scoring_failures(m, comm.is_main(), t.unscored_steps);
  if (m.shown(Shown::kTools)) {
    sum.tools = true;
    sum.tool_calls += std::llround(m.tool_calls.sum);
    sum.tool_errors += m.tool_errors;
    sum.tool_timeouts += m.tool_timeouts;
    warn_tool_errors(m, comm.is_main(), t.tool_steps);
  }
}

// Collective: greedy accuracy on the held-out problems and on as many training ones (rank 0 evaluates).
void Trainer::Impl::evaluate_heldout(TrainSummary& sum) {
  const auto heldout = data::load_heldout(cfg.data);
  const WholeWeights whole(*engine, !heldout.empty());  // collective: every rank gathers, rank 0 evaluates
  std::optional<model::SamplingPhase> phase;  // rank 0's group serves its passes until it is done
  if (!heldout.empty()) phase.emplace(*policy);
  if (!heldout.empty() && comm.is_main()) {
    torch::NoGradGuard no_grad;
    const std::vector<data::Example> seen(examples.begin(), examples.begin() + std::min(examples.size(), heldout.size()));
    sum.heldout_problems = static_cast<int64_t>(heldout.size());
    auto& model = eval_model();
    sum.heldout_accuracy = greedy_accuracy(model, *tok, *verifier, heldout, cfg, tools.get());
    sum.train_greedy_accuracy = greedy_accuracy(model, *tok, *verifier, seen, cfg, tools.get());
  }
}

TrainSummary Trainer::run() {
  auto& s = *impl_;
  auto& progress = *s.progress;
  const auto& c = s.cfg;
  TrainSummary sum;
  sum.first_step = progress.step;
  sum.is_main = s.comm.is_main();
  sum.metrics_path = c.train.output_dir + "/metrics.jsonl";
  const auto t0 = std::chrono::steady_clock::now();
  Impl::RunTally tally;
  s.announce();
  auto runner = s.step_runner();
  if (s.validation && c.eval.before_training && progress.step == 0) s.validate(0, sum);
  while (progress.step < c.train.max_steps) {
    auto m = runner.run(progress);
    s.record_step(m, tally, sum);
    const bool due = c.checkpoint.every > 0 && progress.step % c.checkpoint.every == 0;
    const bool last = progress.step == c.train.max_steps && c.checkpoint.at_end;
    if (s.comm.any(interrupt::requested())) {  // a stop seen by any rank stops all after the same step
      sum.interrupted = true;
      sum.last_checkpoint = s.save(progress);
      if (s.comm.is_main())
        log::warn("interrupted: saved {} after step {}; continue with --resume auto", sum.last_checkpoint, progress.step);
      break;
    }
    if (due || last) sum.last_checkpoint = s.save(progress);
  }
  s.source->finish(sum.interrupted);
  sum.last_step = progress.step;
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sum.reward_start = window_mean(tally.rewards, true);
  sum.reward_end = window_mean(tally.rewards, false);
  sum.accuracy_start = window_mean(tally.accs, true);
  sum.accuracy_end = window_mean(tally.accs, false);
  sum.dropped_prompts = s.dropped_prompts;
  sum.async = s.link != nullptr;
  sum.partial = c.async.partial_rollout;
  sum.max_staleness = c.async.max_staleness;
  tally.async.into(sum);
  s.evaluate_heldout(sum);
  return sum;
}

}  // namespace gspo::train
