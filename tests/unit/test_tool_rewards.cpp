// Rewards on an episode's tool use (multi-turn tools, docs/tools.md): tool_format as a weighted component, the
// external verifier's request with the counts, and the config refusing tool_format without tools.
#include <catch2/catch.hpp>

#include "gspo/config/load.h"
#include "gspo/reward/external/external.h"
#include "gspo/reward/factory.h"
#include "helpers.h"

using namespace gspo;

namespace {
const data::Example kEx{"t", "4821?", "7", "{}", "", ""};
}  // namespace

TEST_CASE("tool_format: 1 for an episode with calls and no failed call, as a weighted component", "[tools][reward]") {
  auto cfg = config::load_text("tools:\n  list:\n    - name: a\n", "run.yaml",
                               {"reward.components=[\"leading_integer:1\", \"tool_format:0.5\"]"});
  auto v = reward::make_verifier(cfg);
  const reward::ToolUse good{2, 1, 0, 0}, none{1, 0, 0, 0}, failed{3, 2, 1, 0}, late{2, 1, 1, 1};
  auto s = v->score_episode("7", kEx, good);
  CHECK(s.reward == 1.5);
  CHECK(s.correct);  // accuracy follows the first component
  CHECK(s.components == std::vector<double>{1.0, 1.0});
  CHECK(v->score_episode("7", kEx, none).reward == 1.0);
  CHECK(v->score_episode("3", kEx, good).reward == 0.5);
  CHECK(v->score_episode("7", kEx, failed).reward == 1.0);
  CHECK(v->score_episode("7", kEx, late).reward == 1.0);
  CHECK(v->score("7", kEx).reward == 1.0);  // graded without tools: no tool use
  // score_all routes through score_episode when given the uses, row by row.
  const std::vector<reward::ToolUse> uses{good, none};
  auto all = reward::score_all(*v, {"7", "7"}, {&kEx, &kEx}, 2, &uses);
  CHECK(all[0].reward == 1.5);
  CHECK(all[1].reward == 1.0);
  reward::ToolUseFormat alone;
  CHECK(alone.score_episode("", kEx, none).failure == "no tool call");
  CHECK(alone.score_episode("", kEx, failed).failure == "a tool call failed");
}

TEST_CASE("tool_format needs tools", "[tools][reward][config]") {
  CHECK_THAT(test::config_error_of("reward:\n  kind: tool_format\n"),
             Catch::Contains("run.yaml:2: reward.kind tool_format grades the tool use of episodes, but tools.list is "
                             "empty"));
  CHECK_THAT(test::config_error_of("reward:\n  components: [\"math:1\", \"tool_format:0.1\"]\n"),
             Catch::Contains("reward.components 'tool_format:0.1' grades the tool use of episodes"));
}

TEST_CASE("external verifier: an episode's request carries its tool use", "[tools][reward]") {
  // Echoes the request's tool counts back as one number: turns * 1000 + calls * 100 + errors * 10 + timeouts.
  const std::string prog =
      "while IFS= read -r l; do t=${l#*\\\"tool_turns\\\":}; c=${l#*\\\"tool_calls\\\":}; "
      "e=${l#*\\\"tool_errors\\\":}; o=${l#*\\\"tool_timeouts\\\":}; "
      "[ \"$t\" = \"$l\" ] && { echo -1; continue; }; "
      "echo $(( ${t%%[!0-9]*} * 1000 + ${c%%[!0-9]*} * 100 + ${e%%[!0-9]*} * 10 + ${o%%[!0-9]*} )); done";
  reward::ExternalVerifier v(prog, 10);
  CHECK(v.score_episode("7", kEx, {3, 2, 1, 1}).reward == 3211);
  CHECK(v.score("7", kEx).reward == -1);  // without tools the request has no counts
}
