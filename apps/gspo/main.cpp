// gspo: the command line. Parses flags into the library's argument structs, calls the library, and maps
// exceptions to exit codes (the only place that decides them): 0 ok, 1 unexpected, 2 config/usage, 3 data,
// 4 model contract, 5 io, 6 training fault, 7 distributed, 8 verifier, 9 a run
// outside its baseline's bands (gspo gate), 130 interrupted.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include "gspo/cli/commands.h"
#include "gspo/cli/eval_cmd.h"
#include "gspo/cli/gate_cmd.h"
#include "gspo/cli/plan_cmd.h"
#include "gspo/cli/report_cmd.h"
#include "gspo/core/version.h"
#include "gspo/cli/train_cmd.h"
#include "gspo/config/suggest.h"
#include "gspo/core/error.h"
#include "gspo/core/huge_pages.h"
#include "gspo/core/log.h"
#include "gspo/core/parse.h"
#include "gspo/core/resources.h"

namespace {

// Integer flags are checked on their text: CLI11 would saturate 99999999999999999999 to the type's maximum.
CLI::Validator int_at_least(int64_t lo) {
  return CLI::Validator(
      [lo](std::string& text) -> std::string {
        const auto v = gspo::parse_int(text);
        if (!v) return "'" + text.substr(0, 40) + "' is not an integer in [" + std::to_string(lo) + ", 2^63)";
        if (*v < lo) return "must be >= " + std::to_string(lo) + " (got " + text + ")";
        return "";
      },
      "INT>=" + std::to_string(lo));
}

void add_generate(CLI::App& app, gspo::cli::GenerateArgs& g) {
  auto* c = app.add_subcommand("generate", "sample responses from a policy");
  c->add_option("--model,-m", g.model, "policy file (.pt), or a checkpoint or run directory (its newest checkpoint)")
      ->required();
  c->add_option("--adapter", g.adapter, "LoRA adapters trained on --model (a gspo checkpoint directory with "
                "adapter.pt), merged into it");
  c->add_option("--prompt,-p", g.prompts, "prompt text (repeatable: one batch of prompts)");
  c->add_option("--prompt-ids", g.prompt_ids, "prompt as token ids, e.g. 257,72,105 (repeatable)");
  c->add_option("--samples,-n", g.samples, "samples per prompt")->capture_default_str()->check(int_at_least(1));
  c->add_option("--temperature,-t", g.temperature, "sampling temperature; 0 = greedy")->capture_default_str();
  c->add_option("--top-p", g.top_p, "nucleus sampling mass; 1 disables")->capture_default_str();
  c->add_option("--top-k", g.top_k, "sample among the k most likely tokens; 0 disables")
      ->capture_default_str()->check(int_at_least(0));
  c->add_option("--max-new-tokens", g.max_new_tokens, "response length cap")->capture_default_str()
      ->check(int_at_least(1));
  c->add_option("--min-new-tokens", g.min_new_tokens, "no EOS and no stop string before this many tokens; 0 = off "
                "(= --max-new-tokens: every response exactly that long)")->capture_default_str()->check(int_at_least(0));
  c->add_option("--stop", g.stop, "stop string (repeatable)");
  c->add_option("--seed", g.seed, "sampler seed")->capture_default_str()->check(int_at_least(0));
  c->add_option("--tokenizer", g.tokenizer, "tokenizer spec file; default: the one inside the model");
  c->add_option("--device", g.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
  c->add_flag("--json", g.json, "one JSON line per sample: ids, text, log-probs, finish reason");
}

void add_inspect(CLI::App& app, gspo::cli::InspectArgs& a) {
  auto* c = app.add_subcommand("inspect", "check a model file against the contract and summarise it");
  c->add_option("model", a.model, "policy file (.pt)")->required();
  c->add_option("--adapter", a.adapter, "LoRA adapters trained on the model (a checkpoint directory with "
                "adapter.pt): checked against it, summarised, and merged before the contract check");
  c->add_option("--device", a.device, "cpu, cuda, cuda:N or auto")->capture_default_str();
  c->add_flag("--json", a.json, "print the summary as one JSON object");
}

void add_config(CLI::App& app, gspo::cli::ConfigArgs& a) {
  auto* c = app.add_subcommand("config", "print the resolved config (defaults filled in) or its errors");
  c->add_option("--config,-c", a.config, "YAML config file; omitted = defaults");
  c->add_option("--set", a.overrides, "override section.key=value (repeatable)");
  c->add_flag("--reference", a.reference, "print every option with its default and rule (Markdown)");
  c->add_flag("--metrics", a.metrics, "print every metrics.jsonl field: reduction over ranks, comparison, meaning");
  c->add_flag("--json", a.json, "with --metrics: as a JSON list");
}

void add_train(CLI::App& app, gspo::cli::TrainArgs& a) {
  auto* c = app.add_subcommand("train", "run GSPO / GSPO-token / GRPO training from a YAML config");
  c->add_option("--config,-c", a.config, "YAML config file")->required();
  c->add_option("--set", a.overrides, "override section.key=value (repeatable)");
  c->add_option("--resume", a.resume, "auto (newest checkpoint in train.output_dir, else fresh) or a checkpoint dir");
  c->footer("Several processes or GPUs: run one gspo per rank with torchrun-style RANK, WORLD_SIZE, LOCAL_RANK,\n"
            "MASTER_ADDR, MASTER_PORT (scripts/launch_local.sh -n N gspo train ...) or under Slurm's srun\n"
            "(scripts/slurm_gspo.sbatch); see docs/distributed.md.");
}

void add_eval(CLI::App& app, gspo::cli::EvalArgs& a) {
  auto* c = app.add_subcommand("eval", "sample K responses per problem and report avg@K, pass@k, cons@K");
  c->add_option("--config,-c", a.config, "YAML config (eval, rollout, data, reward sections; configs/eval/ has the "
                "reports' settings); omitted = defaults");
  c->add_option("--set", a.overrides, "override section.key=value (repeatable)");
  c->add_option("--model,-m", a.model, "policy file, or a checkpoint or run directory (its newest checkpoint); default "
                 "model.path");
  c->add_option("--adapter", a.adapter, "LoRA adapters trained on the model (a checkpoint directory with "
                "adapter.pt), merged into it; default model.adapter");
  c->add_option("--dataset,-d", a.datasets, "JSONL problems (repeatable; LiveCodeBench rows as they are); default "
                "eval.datasets, else data.path");
  c->add_option("--samples,-k", a.samples, "responses per problem (K); default eval.samples (4)")
      ->check(int_at_least(1));
  c->add_option("--max-problems", a.max_problems, "only the first N problems of each dataset; 0 = all; default "
                "eval.max_problems")->check(int_at_least(0));
  c->add_option("--since", a.since, "only rows with contest_date on or after YYYY-MM-DD (LiveCodeBench versions are "
                "date windows); default eval.since");
  c->add_option("--until", a.until, "only rows with contest_date on or before YYYY-MM-DD; default eval.until");
  c->add_option("--out,-o", a.out, "directory for samples.jsonl and summary.json")->capture_default_str();
  c->add_flag("--no-progress", a.no_progress, "no progress bar");
  c->add_flag("--overwrite", a.overwrite, "start over in an --out holding an earlier eval (a finished one is refused "
             "otherwise; an unfinished one with the same settings is resumed)");
  c->add_option("--standings", a.standings, "CodeElo standings pack (JSON, docs/evaluation.md; default eval.standings): "
                "adds CodeElo's rating to the competition sets (rows with contest_id and index)");
}

void add_score(CLI::App& app, gspo::cli::ScoreArgs& a) {
  auto* c = app.add_subcommand("score", "grade responses produced elsewhere (e.g. by vLLM) against a dataset");
  c->add_option("--dataset,-d", a.dataset, "JSONL problems")->required();
  c->add_option("--responses,-r", a.responses, "JSONL lines {\"index\": row, \"response\": text} or \"responses\": [...]")
      ->required();
  c->add_option("--reward", a.reward, "verifier (reward.kind): math, code, exact, regex, format, external, ...");
  c->add_option("--config,-c", a.config, "YAML config for data keys and reward options");
  c->add_option("--set", a.overrides, "override section.key=value (repeatable)");
  c->add_option("--out,-o", a.out, "also write scored.jsonl and summary.json here");
  c->add_flag("--json", a.json, "print the summary as JSON");
  c->add_option("--standings", a.standings, "CodeElo standings pack (JSON, docs/evaluation.md): adds CodeElo's rating "
                "for competition rows with contest_id and index");
}

void add_plan(CLI::App& app, gspo::cli::PlanArgs& a) {
  auto* c = app.add_subcommand("plan", "predict a training config's peak memory per rank, part by part and phase by "
                               "phase, before launching it");
  c->add_option("--config,-c", a.config, "YAML config file; omitted = defaults");
  c->add_option("--set", a.overrides, "override section.key=value (repeatable)");
  c->add_option("--world-size,-n", a.world_size, "data-parallel ranks")->capture_default_str()->check(int_at_least(1));
  c->add_option("--hf-config", a.hf_config, "plan from a Hugging Face config.json (llama, qwen2, qwen3, qwen3_moe) "
                "instead of model.path's manifest");
  c->add_option("--prompt-tokens", a.prompt_tokens, "the longest prompt of a step, in tokens")->capture_default_str()
      ->check(int_at_least(1));
  c->add_option("--runtime-mb", a.runtime_mb, "the process's own memory before any model; default: the value "
                "measured on CPU (docs/distributed.md)");
  c->add_option("--device-gb", a.device_gb, "memory one rank may use (GiB), for the fit verdict")->capture_default_str();
  c->add_flag("--json", a.json, "print the plan as one JSON object");
}

void add_tokenize(CLI::App& app, gspo::cli::TokenizeArgs& a) {
  auto* c = app.add_subcommand("tokenize", "stdin JSON lines {\"text\": ...} -> {\"text\": ..., \"ids\": [...]}");
  c->add_option("--tokenizer,-t", a.tokenizer, "tokenizer.json, a directory with one, a gspo spec or a model .pt")->required();
  c->add_flag("--decode", a.decode, "read {\"ids\": [...]} lines and write the text");
  c->add_flag("--with-special", a.with_special, "with --decode: keep special tokens in the text");
  c->add_flag("--tokens", a.tokens, "also print each token's text");
}

void add_prompts(CLI::App& app, gspo::cli::PromptsArgs& a) {
  auto* c = app.add_subcommand("prompts", "print the config's dataset rows as the policy reads them: rendered by the "
                               "chat template and tokenized by the model's tokenizer, with each prompt's length");
  c->add_option("--config,-c", a.config, "YAML config file; omitted = defaults");
  c->add_option("--set", a.overrides, "override section.key=value (repeatable)");
  c->add_option("--rows,-n", a.rows, "how many rows")->capture_default_str();
  c->add_option("--from", a.from, "the first row (0-based, in file order)")->capture_default_str();
  c->add_flag("--json", a.json, "one JSON object a row: id, prompt, ids, prompt_tokens, budget, fits");
  c->add_flag("--tokens", a.tokens, "also print each token's text");
}

void add_report(CLI::App& app, gspo::cli::ReportArgs& a) {
  auto* c = app.add_subcommand("report", "write one self-contained HTML page of one or more run directories: curves, "
                               "rollout browser, config and summary (opens from disk, no server; docs/report.md)");
  c->add_option("runs", a.runs, "run directories (train.output_dir); several are overlaid")->required();
  c->add_option("--out,-o", a.out, "the HTML file; default RUN/report.html of the first run");
  c->add_option("--rollout-mb", a.rollout_mb, "rollout rows kept in the page (MB of JSON); past it the rollout steps "
                "are thinned evenly, the first and last kept")->capture_default_str();
  c->add_option("--max-tokens", a.max_tokens, "per response, token detail (log-probs, pieces) kept for its first N "
                "tokens; the text is kept whole")->capture_default_str()->check(int_at_least(1));
}

void add_gate(CLI::App& app, gspo::cli::GateArgs& a) {
  auto* c = app.add_subcommand("gate", "compare a run with a baseline's bands (a run directory or a bands file) and "
                               "fail naming the metric and steps that left them; --make-bands writes a bands file "
                               "from several runs (docs/report.md)");
  c->add_option("runs", a.runs, "the run directory to check; with --make-bands the baseline runs (seeds)")->required();
  c->add_option("--baseline,-b", a.baseline, "bands.json (gspo gate --make-bands) or a baseline run directory");
  c->add_flag("--make-bands", a.make_bands, "write the bands of RUNS to --out instead of checking a run");
  c->add_option("--out,-o", a.out, "with --make-bands: the bands file")->capture_default_str();
  c->add_option("--window", a.window, "steps per window (each window's mean is compared); 0 = about a tenth of the "
                "baseline's steps")->capture_default_str()->check(int_at_least(0));
  c->add_option("--k", a.k, "band half-width in spreads of the baseline runs (see docs/report.md)")
      ->capture_default_str();
  c->add_option("--metric", a.metrics, "gate only these metrics (repeatable); default: reward_mean, accuracy, "
                "response_len_mean, kl, clip_seq_frac, entropy, mismatch_logprob_diff_mean");
  c->add_flag("--json", a.json, "print the verdict as one JSON object");
}

}  // namespace

int main(int argc, char** argv) {
  gspo::core::default_huge_pages();  // before LibTorch's first allocation; a user's THP_MEM_ALLOC_ENABLE wins
  CLI::App app{"gspo: reinforcement-learning post-training of language models (GSPO, GSPO-token, GRPO)"};
  app.require_subcommand(1);
  std::string log_level;
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off (or GSPO_LOG_LEVEL)");
  app.set_version_flag("--version", std::string("gspo ") + gspo::core::kVersion + " (LibTorch " +
                                        gspo::core::torch_version() + ")");
  gspo::cli::GenerateArgs gen;
  gspo::cli::InspectArgs insp;
  gspo::cli::ConfigArgs cfg;
  gspo::cli::TrainArgs train;
  gspo::cli::EvalArgs ev;
  gspo::cli::ScoreArgs sc;
  gspo::cli::TokenizeArgs tk;
  gspo::cli::PlanArgs pl;
  gspo::cli::PromptsArgs pr;
  gspo::cli::ReportArgs rep;
  gspo::cli::GateArgs gate;
  add_generate(app, gen);
  add_inspect(app, insp);
  add_config(app, cfg);
  add_train(app, train);
  add_eval(app, ev);
  add_score(app, sc);
  add_tokenize(app, tk);
  add_plan(app, pl);
  add_prompts(app, pr);
  add_report(app, rep);
  add_gate(app, gate);
  // A mistyped subcommand ("gspo trian") is named, with the nearest one, instead of "a subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      const std::string near = gspo::config::nearest(argv[1], names);
      std::cerr << "gspo: unknown subcommand '" << argv[1] << "'"
                << (near.empty() ? "" : "; did you mean '" + near + "'?") << " (run gspo --help)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    gspo::log::init_from_env();
    if (!log_level.empty()) gspo::log::set_level(log_level);
    if (app.got_subcommand("generate")) return gspo::cli::generate(gen);
    if (app.got_subcommand("inspect")) return gspo::cli::inspect(insp);
    if (app.got_subcommand("config")) return gspo::cli::config(cfg);
    if (app.got_subcommand("train")) return gspo::cli::train(train);
    if (app.got_subcommand("eval")) return gspo::cli::eval(ev);
    if (app.got_subcommand("score")) return gspo::cli::score(sc);
    if (app.got_subcommand("tokenize")) return gspo::cli::tokenize(tk);
    if (app.got_subcommand("plan")) return gspo::cli::plan(pl);
    if (app.got_subcommand("prompts")) return gspo::cli::prompts(pr);
    if (app.got_subcommand("report")) return gspo::cli::report(rep);
    if (app.got_subcommand("gate")) return gspo::cli::gate(gate) ? 0 : 9;  // 9: outside the baseline's bands
  } catch (const gspo::Error& e) {
    std::cerr << "gspo: " << e.kind() << ": " << e.what() << "\n";
    return e.exit_code();
  } catch (const c10::Error& e) {
    std::cerr << "gspo: torch error: " << e.what_without_backtrace() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gspo: unexpected error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
