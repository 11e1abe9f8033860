// What a killed or failed run leaves behind is cleaned at the next start when it is provably ours: temporary
// checkpoint directories and sandbox directories of processes that no longer exist, step directories that never
// got their state.json; and a run that failed before its first metrics line does not block a corrected re-run.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "gspo/config/load.h"
#include "gspo/io/checkpoint.h"
#include "gspo/core/fs.h"
#include "gspo/reward/code/sandbox.h"
#include "gspo/cli/train_job.h"
#include "helpers.h"

using namespace gspo;

namespace {

// The pid of a process that has exited (and been reaped): no live process has it until the kernel reuses it.
long dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  int status = 0;
  waitpid(pid, &status, 0);
  return pid;
}

config::Config cfg(const std::string& out) {
  return config::load_text(R"(
data: {task: arithmetic, max_operand: 3, num_prompts: 12}
rollout: {prompts_per_step: 4, group_size: 4, max_new_tokens: 2}
train: {max_steps: 2}
checkpoint: {every: 1, keep_last: 5}
logging: {progress: false}
)", "t.yaml", {"model.path=" + test::model_path("tiny_prior.pt"), "train.output_dir=" + out});
}

}  // namespace

TEST_CASE("start-up removes a dead process's temporary checkpoint and step dirs without state.json", "[io]") {
  const auto out = test::fresh_dir("leftovers");
  const std::string root = out + "/checkpoints";
  core::ensure_dir(root + "/.tmp-step_00000003-" + std::to_string(dead_pid()));
  core::ensure_dir(root + "/.tmp-step_00000004-" + std::to_string(getpid()));  // a live process's: kept
  core::ensure_dir(root + "/step_00000001");                                    // never completed
  std::ofstream(root + "/step_00000001/policy.pt") << "partial";
  auto removed = io::remove_leftovers(out);
  CHECK(removed.size() == 2);
  CHECK_FALSE(core::exists(root + "/step_00000001"));
  CHECK(core::exists(root + "/.tmp-step_00000004-" + std::to_string(getpid())));
  core::remove_all(root + "/.tmp-step_00000004-" + std::to_string(getpid()));
}

TEST_CASE("a run that failed before its first step does not block a corrected re-run", "[train]") {
  const auto out = test::fresh_dir("failed_first");
  core::ensure_dir(out);
  std::ofstream(out + "/config.yaml") << "old: config\n";
  std::ofstream(out + "/metrics.jsonl");  // empty: the run died before step 1
  auto sum = cli::TrainJob(cfg(out), "").run();
  CHECK(sum.last_step == 2);
  // A run with metrics is still protected.
  CHECK_THROWS_WITH(cli::TrainJob(cfg(out), ""), Catch::Contains("already holds a run"));
}

TEST_CASE("sandbox directories of dead processes are removed before the first sandboxed run", "[sandbox]") {
  const std::string stale = "/tmp/gspo-sbx-" + std::to_string(dead_pid()) + "-leftover";
  core::ensure_dir(stale);
  std::ofstream(stale + "/prog.py") << "print(1)\n";
  reward::SandboxLimits limits;
  limits.cpu_seconds = 5;
  limits.wall_seconds = 10;
  auto r = reward::run_sandboxed({"/usr/bin/python3", "-I", "prog.py"}, {{"prog.py", "print(2)\n"}}, "", limits,
                                 reward::default_sandbox_mode());
  CHECK(r.out == "2\n");
  CHECK_FALSE(core::exists(stale));
}
