// Trainer setup (models, data, optimizer, run directory, resume) and the step loop.
#include "gspo/train/trainer.h"

#include <ATen/CPUGeneratorImpl.h>

#include <chrono>

#include "gspo/cli/device.h"
#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/interrupt.h"
#include "gspo/core/log.h"
#include "gspo/core/resources.h"
#include "gspo/data/dataset.h"
#include "gspo/data/prompt_fit.h"
#include "gspo/dist/grad_sync.h"
#include "gspo/dist/launch_env.h"
#include "gspo/io/checkpoint.h"
#include "gspo/io/checkpoint_check.h"
#include "gspo/io/fs.h"
#include "gspo/train/greedy_eval.h"
#include "gspo/train/state.h"

namespace gspo::train {
namespace {

std::optional<std::string> find_resume_point(const config::Config& cfg, const std::string& resume) {
  const std::string& dir = cfg.train.output_dir;
  if (resume.empty()) {
    // A run that failed before its first metrics line (an empty metrics.jsonl, no checkpoint) holds nothing to keep.
    if (io::latest_checkpoint(dir) || io::non_empty_file(dir + "/metrics.jsonl"))
      throw ConfigError("train.output_dir '" + dir + "' already holds a run (metrics.jsonl or checkpoints); pass "
                        "--resume auto to continue it, or choose another train.output_dir");
    return std::nullopt;
  }
  if (resume == "auto") {
    // Every byte of the newest checkpoint is read back first; damaged ones are passed over (and kept) so a torn or
    // corrupt newest checkpoint costs the steps since the previous one, not the run.
    auto found = io::latest_intact_checkpoint(dir);
    for (const auto& [bad, why] : found.damaged)
      log::warn("--resume auto: checkpoint {} is damaged ({}); it is left in place and an older one is used", bad, why);
    if (!found.dir && !found.damaged.empty())
      throw IoError("--resume auto: every checkpoint under '" + dir + "/checkpoints' is damaged; the newest: " +
                    found.damaged.front().second);
    if (found.dir && !found.damaged.empty()) log::warn("--resume auto: resuming from {}, the newest intact checkpoint", *found.dir);
    return found.dir;
  }
  if (!io::exists(resume + "/state.json"))
    throw IoError("--resume '" + resume + "' is not a checkpoint directory (no state.json)");
  return resume;
}

// model.device, with cuda meaning cuda:LOCAL_RANK in a multi-process run.
c10::Device train_device(const config::Config& c, const dist::LaunchEnv& env) {
  auto d = cli::resolve_device(c.model.device, "model.device");
  if (d.is_cuda() && env.world_size > 1 && (c.model.device == "cuda" || c.model.device == "auto"))
    d = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
  return d;
}

// Drops (or refuses) prompts that leave no room for max_new_tokens, before the cursor is built over the rows: the
// filter is a pure function of data, tokenizer and config, so a resumed run sees the same rows.
void fit_prompts(Trainer::State& s) {
  const auto& c = s.cfg;
  const int64_t limit = s.policy->manifest().max_seq_len - c.rollout.max_new_tokens;
  const int64_t total = static_cast<int64_t>(s.examples.size());
  auto fit = data::fit_prompts(std::move(s.examples), c.data, *s.tok, limit, c.data.overlong_prompts == "error");
  if (fit.dropped > 0 && s.comm->is_main()) log::warn("{}", data::describe_dropped(fit, total, limit));
  s.examples = std::move(fit.kept);
  s.dropped_prompts = fit.dropped;
}

// Every rank starts from rank 0's weights; a fingerprint comparison afterwards proves it.
void sync_initial_weights(Trainer::State& s) {
  auto params = s.policy->parameters();
  dist::broadcast_parameters(*s.comm, params, s.cfg.distributed.bucket_mb * 1024 * 1024);
  if (s.comm->world_size() == 1) return;
  auto mine = dist::fingerprint(params);
  auto all = s.comm->all_gather(torch::tensor(mine, torch::kDouble)).view({-1, 2});
  for (int64_t r = 0; r < all.size(0); ++r)
    if (all[r][0].item<double>() != mine[0] || all[r][1].item<double>() != mine[1])
      throw DistributedError("rank " + std::to_string(s.comm->rank()) + ": the weights differ from rank " +
                             std::to_string(r) + "'s after the initial broadcast");
  log::info("{} ranks start from identical weights (fingerprint {:.17g}, {:.17g})", all.size(0), mine[0], mine[1]);
}

// model.dtype bfloat16: float32 masters from the (broadcast) float32 weights, then the policy and the reference
// model are cast to bf16.
void setup_precision(Trainer::State& s) {
  for (auto& p : s.policy->parameters()) p.set_requires_grad(true);
  if (s.cfg.model.dtype != "bfloat16") return;
  s.master = std::make_unique<MasterWeights>(*s.policy, torch::kBFloat16);
  if (s.reference) s.reference->set_param_dtype(torch::kBFloat16);
}

void setup_optimizer(Trainer::State& s) {
  const auto& o = s.cfg.optimizer;
  auto params = train_params(s);
  if (s.cfg.distributed.zero_stage == 1) {
    s.zero = std::make_unique<dist::ShardedAdamW>(params, dist::AdamWHyper{o.beta1, o.beta2, o.eps, o.weight_decay},
                                                  *s.comm);
    return;
  }
  torch::optim::AdamWOptions ao(o.lr);
  ao.betas({o.beta1, o.beta2}).eps(o.eps).weight_decay(o.weight_decay);
  s.optimizer = std::make_unique<torch::optim::AdamW>(params, ao);
}

void setup_models(Trainer::State& s, const std::optional<std::string>& ckpt, c10::Device device) {
  const auto& c = s.cfg;
  if (c.model.path.empty())
    throw ConfigError("model.path is empty: set it to a TorchScript policy (make one with scripts/make_tiny_model.py)");
  s.policy.emplace(model::Policy::load(ckpt ? io::policy_file(*ckpt) : c.model.path, device));
  model::check_contract(*s.policy);
  if (c.algorithm.kl_coef > 0) {
    const std::string ref = c.algorithm.reference_model.empty() ? c.model.path : c.algorithm.reference_model;
    s.reference.emplace(model::Policy::load(ref, device));
    for (auto& p : s.reference->parameters()) p.set_requires_grad(false);
  }
  s.tok = c.tokenizer.path.empty() ? tokenizer::from_spec(s.policy->tokenizer_json(), c.model.path)
                                   : tokenizer::from_file(c.tokenizer.path);
  rollout::SamplingParams sp{c.rollout.temperature, c.rollout.top_p, c.rollout.top_k, c.rollout.max_new_tokens,
                             c.rollout.stop};
  sp.cuda_graphs = c.rollout.cuda_graphs;
  s.sampler = std::make_unique<rollout::Sampler>(*s.policy, *s.tok, sp);
}

void setup_algorithm(Trainer::State& s) {
  const auto& a = s.cfg.algorithm;
  s.loss_opts.kind = algo::parse_loss_kind(a.loss);
  s.loss_opts.clip_low = a.clip_low;
  s.loss_opts.clip_high = a.clip_high;
  s.loss_opts.log_ratio_clamp = a.log_ratio_clamp;
  s.loss_opts.kl_coef = a.kl_coef;
  s.loss_opts.kl_estimator = algo::parse_kl_estimator(a.kl_estimator);
  s.adv_opts.kind = algo::parse_advantage_kind(a.advantage);
  s.adv_opts.sample_std = a.std_kind == "sample";
  s.adv_opts.eps = a.adv_eps;
  s.total_optimizer_steps = s.cfg.train.max_steps * a.num_minibatches;
}

constexpr const char* kZeroFile = "/optimizer_zero1.pt";

void restore_optimizer(Trainer::State& s, const std::string& ckpt) {
  const bool has_zero = io::exists(ckpt + kZeroFile);
  if (s.zero != nullptr && !has_zero)
    throw ConfigError("checkpoint '" + ckpt + "' was written with distributed.zero_stage 0; resume it with "
                      "zero_stage 0 (the sharded optimizer cannot take torch AdamW state)");
  if (s.zero == nullptr && has_zero)
    throw ConfigError("checkpoint '" + ckpt + "' was written with distributed.zero_stage 1; resume it with "
                      "zero_stage 1 (any world size)");
  if (s.zero) s.zero->load_state(io::load_tensors(ckpt + kZeroFile, "ZeRO-1 optimizer state"), ckpt + kZeroFile);
  else io::load_optimizer(ckpt, *s.optimizer);
}

void restore(Trainer::State& s, const std::string& ckpt) {
  auto meta = io::read_meta(ckpt);
  restore_optimizer(s, ckpt);
  auto rng = io::load_rng(ckpt);
  if (rng.empty()) throw IoError("checkpoint '" + ckpt + "' has a damaged rng.pt");
  s.train_gen.set_state(rng.back());  // checkpoints before counter-based sampling noise also held a sampler state
  s.cursor->restore(meta.data_epoch, meta.data_position);
  s.step = meta.step;
  s.optimizer_steps = meta.optimizer_steps;
  const std::string saved = io::read_text(ckpt + "/config.yaml");
  if (saved != s.config_yaml) {
    std::string keys;
    for (const auto& k : config::differing_keys(saved, s.config_yaml)) keys += "\n  " + k;
    log::warn("the config differs from the one checkpoint {} was trained with:{}", ckpt, keys);
  }
  log::info("resumed from {} (step {}, optimizer step {})", ckpt, meta.step, meta.optimizer_steps);
}

// Collective: every rank takes part (the weights are checked everywhere, ZeRO-1 moments are gathered); rank 0
// writes, then all wait for it so no rank runs ahead of a checkpoint that may still fail.
std::string save(Trainer::State& s) {
  for (const auto& p : s.policy->parameters())
    if (!torch::isfinite(p).all().item<bool>())
      throw TrainingError("step " + std::to_string(s.step) + ": the policy has non-finite weights; refusing to write "
                          "a checkpoint (the previous one is intact)");
  std::vector<at::Tensor> zero_state;
  if (s.zero) zero_state = s.zero->gather_state();
  std::string dir;
  if (s.comm->is_main()) {
    io::CheckpointMeta meta{s.step, s.optimizer_steps, s.cursor->epoch(), s.cursor->position()};
    auto write_optimizer = [&](const std::string& d) {
      if (s.zero) io::save_tensors(d + kZeroFile, zero_state, "ZeRO-1 optimizer state");
      else io::save_optimizer(d, *s.optimizer);
    };
    auto write = [&] {
      dir = io::save_checkpoint(s.run_dir, meta, *s.policy, write_optimizer, {s.train_gen.get_state()}, s.config_yaml,
                                s.cfg.checkpoint.keep_last);
    };
    // bf16 training saves the float32 masters as the policy, so resuming restores them exactly.
    if (s.master) s.master->with_float32_policy(write);
    else write();
  }
  s.comm->barrier("checkpoint of step " + std::to_string(s.step));
  return dir;
}


double window_mean(const std::vector<double>& v, bool head) {
  if (v.empty()) return 0;
  const size_t n = std::max<size_t>(1, v.size() / 10);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += head ? v[i] : v[v.size() - 1 - i];
  return sum / static_cast<double>(n);
}

}  // namespace

std::vector<at::Tensor> train_params(Trainer::State& s) {
  return s.master ? s.master->params() : s.policy->parameters();
}

Trainer::Trainer(const config::Config& cfg, const std::string& resume) : s_(std::make_unique<State>()) {
  auto& s = *s_;
  s.cfg = cfg;
  s.run_dir = cfg.train.output_dir;
  s.config_yaml = config::to_yaml(cfg);
  if (cfg.train.threads > 0) torch::set_num_threads(static_cast<int>(cfg.train.threads));
  const auto env = dist::read_launch_env();
  if (cfg.rollout.prompts_per_step % env.world_size != 0)
    throw ConfigError((cfg.origin.count("rollout.prompts_per_step") ? cfg.origin.at("rollout.prompts_per_step") + ": "
                                                                     : std::string()) + "rollout.prompts_per_step (" +
                      std::to_string(cfg.rollout.prompts_per_step) + ") must be a multiple of the world size " +
                      std::to_string(env.world_size) + " so each rank samples whole groups");
  const auto device = train_device(cfg, env);
  if (env.rank == 0)
    for (const auto& gone : io::remove_leftovers(s.run_dir)) log::info("removed {} (left half-done by an earlier run)", gone);
  auto ckpt = find_resume_point(cfg, resume);
  s.comm = std::make_unique<dist::Comm>(env, cfg.distributed, device);
  if (s.comm->is_main()) io::ensure_dir(s.run_dir);
  s.examples = data::load_dataset(cfg.data);
  s.verifier = reward::make_verifier(cfg, s.examples);
  s.train_gen = at::detail::createCPUGenerator(static_cast<uint64_t>(cfg.train.seed));
  torch::manual_seed(static_cast<uint64_t>(cfg.train.seed));
  setup_models(s, ckpt, device);
  fit_prompts(s);
  s.cursor = std::make_unique<data::Cursor>(static_cast<int64_t>(s.examples.size()), cfg.data.shuffle,
                                            static_cast<uint64_t>(cfg.data.seed));
  sync_initial_weights(s);
  setup_precision(s);
  setup_optimizer(s);
  setup_algorithm(s);
  if (ckpt) restore(s, *ckpt);
  if (s.comm->is_main()) {  // only rank 0 writes the run directory
    const std::string metrics_path = s.run_dir + "/metrics.jsonl";
    const auto dropped = io::MetricsLog::truncate_after(metrics_path, s.step);
    if (dropped.torn > 0)
      log::warn("{}: dropped {} line(s) that are not JSON (a write cut off by a crash)", metrics_path, dropped.torn);
    if (dropped.later_steps > 0)
      log::info("{}: dropped {} line(s) of steps after the checkpoint; they run again", metrics_path,
                dropped.later_steps);
    io::atomic_write(s.run_dir + "/config.yaml", s.config_yaml);
    s.metrics = std::make_unique<io::MetricsLog>(metrics_path);
  }
  s.comm->barrier("start-up");
}

Trainer::~Trainer() = default;

TrainSummary Trainer::run() {
  auto& s = *s_;
  TrainSummary sum;
  sum.first_step = s.step;
  sum.is_main = s.comm->is_main();
  sum.metrics_path = s.run_dir + "/metrics.jsonl";
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> rewards, accs;
  int64_t flat_steps = 0;  // consecutive steps whose rewards were all equal
  log::info("training {} ({} loss) from step {} to {}: {} prompts x {} samples, {} mini-batches per step{}",
            s.policy->path(), s.cfg.algorithm.loss, s.step, s.cfg.train.max_steps, s.cfg.rollout.prompts_per_step,
            s.cfg.rollout.group_size, s.cfg.algorithm.num_minibatches,
            s.comm->world_size() > 1 ? fmt::format(", {} ranks ({})", s.comm->world_size(), s.comm->backend()) : "");
  while (s.step < s.cfg.train.max_steps) {
    auto m = run_step(s);
    if (s.metrics) s.metrics->append(m.dump());
    rewards.push_back(m["reward_mean"]);
    accs.push_back(m["accuracy"]);
    if (s.cfg.logging.progress && s.comm->is_main()) log::info("{}", progress_line(m, s.cfg.train.max_steps));
    // Every reward equal (across the global batch) gives every advantage 0: nothing to learn from. Said on the
    // first such step and every 20th in a row, so a reward that never varies (a wrong answer key, a verifier that
    // cannot parse the responses) is noticed.
    flat_steps = m["reward_max"].get<double>() == m["reward_min"].get<double>() ? flat_steps + 1 : 0;
    if (s.comm->is_main() && (flat_steps == 1 || (flat_steps > 0 && flat_steps % 20 == 0))) {
      const double r = m["reward_min"].get<double>();
      log::warn("step {}: every reward of the batch is {} ({} step(s) in a row): no learning signal this step{}",
                s.step, r, flat_steps,
                r <= 0 ? "; if it persists, check the answers and the verifier (gspo generate shows responses)" : "");
    }
    const bool due = s.cfg.checkpoint.every > 0 && s.step % s.cfg.checkpoint.every == 0;
    const bool last = s.step == s.cfg.train.max_steps;
    if (s.comm->any(interrupt::requested())) {  // a stop seen by any rank stops all after the same step
      sum.interrupted = true;
      sum.last_checkpoint = save(s);
      if (s.comm->is_main())
        log::warn("interrupted: saved {} after step {}; continue with --resume auto", sum.last_checkpoint, s.step);
      break;
    }
    if (due || last) sum.last_checkpoint = save(s);
  }
  sum.last_step = s.step;
  sum.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  sum.reward_start = window_mean(rewards, true);
  sum.reward_end = window_mean(rewards, false);
  sum.accuracy_start = window_mean(accs, true);
  sum.accuracy_end = window_mean(accs, false);
  sum.skipped_updates = s.skipped_updates;
  sum.dropped_prompts = s.dropped_prompts;
  const auto heldout = data::load_heldout(s.cfg.data);
  if (!heldout.empty() && s.comm->is_main()) {
    torch::NoGradGuard no_grad;
    const std::vector<data::Example> seen(s.examples.begin(),
                                          s.examples.begin() + std::min(s.examples.size(), heldout.size()));
    sum.heldout_problems = static_cast<int64_t>(heldout.size());
    sum.heldout_accuracy = greedy_accuracy(*s.policy, *s.tok, *s.verifier, heldout, s.cfg);
    sum.train_greedy_accuracy = greedy_accuracy(*s.policy, *s.tok, *s.verifier, seen, s.cfg);
  }
  return sum;
}

}  // namespace gspo::train
