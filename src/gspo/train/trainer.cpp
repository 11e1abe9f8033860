// Trainer setup (models, data, optimizer, run directory, resume) and the step loop.
#include "gspo/train/trainer.h"

#include <chrono>

#include "gspo/cli/device.h"
#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/interrupt.h"
#include "gspo/core/log.h"
#include "gspo/core/torch_compat.h"
#include "gspo/data/dataset.h"
#include "gspo/io/checkpoint.h"
#include "gspo/io/fs.h"
#include "gspo/train/state.h"

namespace gspo::train {
namespace {

std::optional<std::string> find_resume_point(const config::Config& cfg, const std::string& resume) {
  const std::string& dir = cfg.train.output_dir;
  if (resume.empty()) {
    if (io::latest_checkpoint(dir) || io::exists(dir + "/metrics.jsonl"))
      throw ConfigError("train.output_dir '" + dir + "' already holds a run (metrics.jsonl or checkpoints); pass "
                        "--resume auto to continue it, or choose another train.output_dir");
    return std::nullopt;
  }
  if (resume == "auto") return io::latest_checkpoint(dir);
  if (!io::exists(resume + "/state.json"))
    throw IoError("--resume '" + resume + "' is not a checkpoint directory (no state.json)");
  return resume;
}

void setup_models(Trainer::State& s, const std::optional<std::string>& ckpt) {
  const auto& c = s.cfg;
  if (c.model.path.empty())
    throw ConfigError("model.path is empty: set it to a TorchScript policy (make one with scripts/make_tiny_model.py)");
  const auto device = cli::resolve_device(c.model.device, "model.device");
  s.policy.emplace(model::Policy::load(ckpt ? io::policy_file(*ckpt) : c.model.path, device));
  model::check_contract(*s.policy);
  if (c.algorithm.kl_coef > 0) {
    const std::string ref = c.algorithm.reference_model.empty() ? c.model.path : c.algorithm.reference_model;
    s.reference.emplace(model::Policy::load(ref, device));
    for (auto& p : s.reference->parameters()) p.set_requires_grad(false);
  }
  s.tok = c.tokenizer.path.empty() ? tokenizer::from_spec(s.policy->tokenizer_json(), c.model.path)
                                   : tokenizer::from_file(c.tokenizer.path);
  auto params = s.policy->parameters();
  for (auto& p : params) p.set_requires_grad(true);
  torch::optim::AdamWOptions o(c.optimizer.lr);
  o.betas({c.optimizer.beta1, c.optimizer.beta2}).eps(c.optimizer.eps).weight_decay(c.optimizer.weight_decay);
  s.optimizer = std::make_unique<torch::optim::AdamW>(params, o);
  rollout::SamplingParams sp{c.rollout.temperature, c.rollout.top_p, c.rollout.top_k, c.rollout.max_new_tokens,
                             c.rollout.stop};
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

void restore(Trainer::State& s, const std::string& ckpt) {
  auto meta = io::read_meta(ckpt);
  io::load_optimizer(ckpt, *s.optimizer);
  auto rng = io::load_rng(ckpt);
  if (rng.size() != 2) throw IoError("checkpoint '" + ckpt + "' has a damaged rng.pt");
  s.sample_gen.set_state(rng[0]);
  s.train_gen.set_state(rng[1]);
  s.cursor->restore(meta.data_epoch, meta.data_position);
  s.step = meta.step;
  s.optimizer_steps = meta.optimizer_steps;
  const std::string saved = io::read_text(ckpt + "/config.yaml");
  if (saved != s.config_yaml) log::warn("the config differs from the one checkpoint {} was trained with", ckpt);
  log::info("resumed from {} (step {}, optimizer step {})", ckpt, meta.step, meta.optimizer_steps);
}

std::string save(Trainer::State& s) {
  for (const auto& p : s.policy->parameters())
    if (!torch::isfinite(p).all().item<bool>())
      throw TrainingError("step " + std::to_string(s.step) + ": the policy has non-finite weights; refusing to write "
                          "a checkpoint (the previous one is intact)");
  io::CheckpointMeta meta{s.step, s.optimizer_steps, s.cursor->epoch(), s.cursor->position()};
  return io::save_checkpoint(s.run_dir, meta, *s.policy, *s.optimizer, {s.sample_gen.get_state(), s.train_gen.get_state()},
                             s.config_yaml, s.cfg.checkpoint.keep_last);
}

double window_mean(const std::vector<double>& v, bool head) {
  if (v.empty()) return 0;
  const size_t n = std::max<size_t>(1, v.size() / 10);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += head ? v[i] : v[v.size() - 1 - i];
  return sum / static_cast<double>(n);
}

}  // namespace

Trainer::Trainer(const config::Config& cfg, const std::string& resume) : s_(std::make_unique<State>()) {
  auto& s = *s_;
  s.cfg = cfg;
  s.run_dir = cfg.train.output_dir;
  s.config_yaml = config::to_yaml(cfg);
  if (cfg.train.threads > 0) torch::set_num_threads(static_cast<int>(cfg.train.threads));
  io::ensure_dir(s.run_dir);
  auto ckpt = find_resume_point(cfg, resume);
  s.examples = data::load_dataset(cfg.data);
  s.cursor = std::make_unique<data::Cursor>(static_cast<int64_t>(s.examples.size()), cfg.data.shuffle,
                                            static_cast<uint64_t>(cfg.data.seed));
  s.verifier = reward::make_verifier(cfg, data::has_code_tests(s.examples));
  s.sample_gen = compat::make_cpu_generator(static_cast<uint64_t>(cfg.rollout.seed));
  s.train_gen = compat::make_cpu_generator(static_cast<uint64_t>(cfg.train.seed));
  torch::manual_seed(static_cast<uint64_t>(cfg.train.seed));
  setup_models(s, ckpt);
  setup_algorithm(s);
  const std::string metrics_path = s.run_dir + "/metrics.jsonl";
  if (ckpt) {
    restore(s, *ckpt);
  }
  io::MetricsLog::truncate_after(metrics_path, s.step);
  io::atomic_write(s.run_dir + "/config.yaml", s.config_yaml);
  s.metrics = std::make_unique<io::MetricsLog>(metrics_path);
}

Trainer::~Trainer() = default;

TrainSummary Trainer::run() {
  auto& s = *s_;
  TrainSummary sum;
  sum.first_step = s.step;
  sum.metrics_path = s.metrics->path();
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> rewards, accs;
  log::info("training {} ({} loss) from step {} to {}: {} prompts x {} samples, {} mini-batches per step",
            s.policy->path(), s.cfg.algorithm.loss, s.step, s.cfg.train.max_steps, s.cfg.rollout.prompts_per_step,
            s.cfg.rollout.group_size, s.cfg.algorithm.num_minibatches);
  while (s.step < s.cfg.train.max_steps) {
    auto m = run_step(s);
    s.metrics->append(m.dump());
    rewards.push_back(m["reward_mean"]);
    accs.push_back(m["accuracy"]);
    if (s.cfg.logging.progress) log::info("{}", progress_line(m, s.cfg.train.max_steps));
    const bool due = s.cfg.checkpoint.every > 0 && s.step % s.cfg.checkpoint.every == 0;
    const bool last = s.step == s.cfg.train.max_steps;
    if (interrupt::requested()) {
      sum.interrupted = true;
      sum.last_checkpoint = save(s);
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
  return sum;
}

}  // namespace gspo::train
