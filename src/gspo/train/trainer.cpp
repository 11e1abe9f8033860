#include "gspo/train/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <chrono>
#include <filesystem>
#include <optional>

#include "gspo/config/load.h"
#include "gspo/config/validate.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/core/interrupt.h"
#include "gspo/core/log.h"
#include "gspo/data/dataset.h"
#include "gspo/eval/validation.h"
#include "gspo/io/adapter_file.h"
#include "gspo/io/checkpoint.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/model/sampling_phase.h"
#include "gspo/parallel/comm.h"
#include "gspo/train/async/streamed_source.h"
#include "gspo/train/checkpointing.h"
#include "gspo/train/greedy_eval.h"
#include "gspo/train/rank_share.h"
#include "gspo/train/report/rollout_log.h"
#include "gspo/train/report/run_logs.h"
#include "gspo/train/report/run_tally.h"
#include "gspo/train/setup/assembly.h"
#include "gspo/train/setup/expert_setup.h"
#include "gspo/train/step.h"
#include "gspo/train/teacher_term.h"

namespace gspo::train {

struct Trainer::Impl {
  config::Config cfg;       // the run's copy: what the loaded model resolves (data.chat_template auto) in
  std::string config_yaml;  // resolved config, stored with each checkpoint
  parallel::Comm& comm;
  parallel::Comm* link = nullptr;  // the whole job with the rollout ranks (distributed.rollout_ranks > 0)
  std::optional<Assembly> a;       // the policy, its adapters, engine, reference, sampling copy, rows, verifier...
  std::unique_ptr<RolloutSource> source;  // the step's rounds (step_runner())
  std::optional<Progress> progress;
  RunLogs logs;                                     // rank 0's files
  std::unique_ptr<eval::Validation> validation;     // eval.every > 0
  std::unique_ptr<RolloutLog> rollout_log;          // logging.rollouts_every > 0
  std::unique_ptr<TeacherTerm> teacher;             // distill.teacher set: the assembly's teacher in the step
  std::vector<int64_t> carried;  // from the checkpoint resumed: groups partial rollouts carried past it

  Impl(const config::Config& c, parallel::Comm& cm) : cfg(c), config_yaml(config::to_yaml(c)), comm(cm) {}
  // Collective: a checkpoint of the state after progress.step (what the source carries into the next step with it).
  std::string save(Progress& p) {
    return save_checkpoint(cfg, config_yaml, *a->policy, *a->engine, p, comm, source->carried_examples(),
                           adapter_meta());
  }
  // What a checkpoint of adapters says about them (no adapters: lora null).
  AdapterState adapter_meta() const {
    if (!a->lora) return {};
    io::AdapterMeta m;
    m.rank = cfg.model.lora_rank;
    m.alpha = cfg.model.lora_alpha;
    m.targets = cfg.model.lora_targets;
    m.experts = cfg.model.lora_experts;
    m.base_path = std::filesystem::absolute(cfg.model.path).lexically_normal().string();
    m.base_fingerprint = a->base_fingerprint;
    return {a->lora.get(), m};
  }
  // Runs the validation sets on every rank; rank 0 logs them and appends them to validation.jsonl. Returns the
  // metrics-line fields.
  nlohmann::ordered_json validate(int64_t step, TrainSummary& sum);
  void announce() const;  // the run's first line
  void record_step(StepMetrics& m, RunTally& t, TrainSummary& sum);
  void evaluate_heldout(TrainSummary& sum);
  StepRunner step_runner() {
    if (link)
      source = std::make_unique<StreamedSource>(cfg, *link, comm, *a->policy, *a->engine, progress->step,
                                                progress->cursor, a->lora.get());
    else
      source = a->local_source(cfg, comm);
    source->resume_carried(carried);
    return StepRunner({cfg, *a->policy, a->reference ? &*a->reference : nullptr, *a->verifier, *source, comm,
                       *a->engine, config::reference_is_base(cfg) ? a->lora.get() : nullptr,
                       a->experts ? &a->experts->shards->group() : nullptr, rollout_log.get(), a->sources,
                       teacher.get(), a->fault.advantage_sign});
  }
};

nlohmann::ordered_json Trainer::Impl::validate(int64_t step, TrainSummary& sum) {
  const auto t0 = std::chrono::steady_clock::now();
  a->eval_model(true);  // the merged copy takes this step's adapters
  std::string samples;  // this rank's sample lines, written beside the rollouts (logging.rollouts_every > 0)
  auto summaries = [&] {
    const WholeWeights whole(*a->engine);  // ZeRO-3: sampling needs the whole weights
    return validation->run(rollout_log ? &samples : nullptr);
  }();
  if (rollout_log) rollout_log->write_validation(step, samples);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto fields = eval::Validation::headline(summaries);
  if (comm.is_main()) {
    log::info("validation after step {} ({:.1f}s): {}", step, seconds, eval::Validation::one_line(summaries));
    nlohmann::ordered_json line{{"step", step}, {"seconds", seconds}, {"datasets", summaries}};
    if (logs.validation) logs.validation->append(line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
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
  const config::Config& cfg = s.cfg;
  s.link = where.link;
  const std::string& run_dir = cfg.train.output_dir;
  check_world_size(cfg, s.link ? s.link->world_size() : s.comm.world_size());
  if (s.comm.is_main())
    for (const auto& gone : io::remove_leftovers(run_dir)) log::info("removed {} (left half-done by an earlier run)", gone);
  auto ckpt = find_resume_point(cfg, resume);
  if (s.comm.is_main()) core::ensure_dir(run_dir);
  s.a.emplace(s.cfg, Role::trainer(ckpt, s.comm.is_main(), cfg.logging.progress), where.device, s.comm);
  auto& a = *s.a;
  s.progress.emplace(Progress{0, 0, data::make_cursor(cfg.data, a.examples),
                              at::detail::createCPUGenerator(static_cast<uint64_t>(cfg.train.seed))});
  if (ckpt) s.carried = restore(*ckpt, *a.engine, *s.progress, s.config_yaml, s.adapter_meta());
  if (a.lora) log::info("training low-rank adapters: rank {}, alpha {}, {} weights adapted ({} trained parameters; the "
                        "base's {} frozen)", cfg.model.lora_rank, cfg.model.lora_alpha, a.lora->adapters().size(),
                        a.lora->num_parameters(), a.policy->num_parameters());
  if (cfg.eval.every > 0)
    s.validation = std::make_unique<eval::Validation>(cfg, a.eval_model(false), *a.tok,
                                                      a.policy->manifest().max_seq_len, s.comm, *a.verifier);
  if (a.teacher)
    s.teacher = std::make_unique<TeacherTerm>(cfg, *a.teacher, a.fault.teacher_nan, a.teacher_prompts.get());
  if (cfg.logging.rollouts_every > 0) s.rollout_log = std::make_unique<RolloutLog>(cfg, *a.tok, s.comm, where.device);
  if (s.comm.is_main())  // only rank 0 writes the run directory
    s.logs.open(cfg, s.config_yaml, s.progress->step, s.validation != nullptr, s.rollout_log.get());
  s.comm.barrier("start-up");
}

Trainer::~Trainer() = default;

void Trainer::Impl::announce() const {
  const auto& c = cfg;
  log::info("training {} ({} loss) from step {} to {}: {} prompts x {} samples, {} mini-batches per step{}{}",
            a->policy->path(), config::name_of(c.algorithm.loss), progress->step, c.train.max_steps,
            c.rollout.prompts_per_step, c.rollout.group_size, c.algorithm.num_minibatches,
            comm.world_size() > 1 ? fmt::format(", {} ranks ({})", comm.world_size(), comm.backend()) : "",
            link ? fmt::format(" training beside {} rollout rank(s), samples at most {} version(s) stale (async."
                               "max_staleness), weights sent every {} step(s)", c.distributed.rollout_ranks,
                               c.async.max_staleness, c.async.sync_every) : "");
}

// A step's metrics line (with validation's fields when it was due), its progress line, tallies and warnings.
void Trainer::Impl::record_step(StepMetrics& m, RunTally& t, TrainSummary& sum) {
  nlohmann::ordered_json fields;
  if (validation && validation->due(progress->step, cfg.train.max_steps)) fields = validate(progress->step, sum);
  logs.append(json_line(m, &fields));
  if (cfg.logging.progress && comm.is_main()) log::info("{}", progress_line(m, cfg.train.max_steps));
  t.add(m, progress->step, sum);
}

// Collective: greedy accuracy on the held-out problems and on as many training ones (rank 0 evaluates).
void Trainer::Impl::evaluate_heldout(TrainSummary& sum) {
  const auto heldout = data::load_heldout(cfg.data);
  const WholeWeights whole(*a->engine, !heldout.empty());  // collective: every rank gathers, rank 0 evaluates
  std::optional<model::SamplingPhase> phase;  // rank 0's group serves its passes until it is done
  if (!heldout.empty()) phase.emplace(*a->policy);
  if (!heldout.empty() && comm.is_main()) {
    torch::NoGradGuard no_grad;
    const auto& rows = a->examples;
    const std::vector<data::Example> seen(rows.begin(), rows.begin() + std::min(rows.size(), heldout.size()));
    sum.heldout_problems = static_cast<int64_t>(heldout.size());
    auto& model = a->eval_model(true);
    sum.heldout_accuracy = greedy_accuracy(model, *a->tok, *a->verifier, heldout, cfg, a->tools.get());
    sum.train_greedy_accuracy = greedy_accuracy(model, *a->tok, *a->verifier, seen, cfg, a->tools.get());
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
  RunTally tally(s.comm.is_main());
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
  sum.dropped_prompts = s.a->dropped_prompts;
  sum.async = s.link != nullptr;
  sum.partial = c.async.partial_rollout;
  sum.max_staleness = c.async.max_staleness;
  tally.into(sum);
  s.evaluate_heldout(sum);
  return sum;
}

}  // namespace gspo::train
