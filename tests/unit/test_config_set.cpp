// --set takes scalar values literally (regression: the value was parsed as YAML, so "Q: {prompt} A=" failed and
// "You are #1" silently became "You are"); lists are YAML flow sequences, and a bare value for a list says how.
#include <catch2/catch.hpp>

#include "gspo/config/load.h"
#include "gspo/core/error.h"

using namespace gspo;

TEST_CASE("set overrides take strings as literal text and lists as YAML flow sequences", "[config]") {
  auto c = config::load_text("", "t.yaml",
                             {"data.prompt_template=Q: {prompt} A=", "data.system_prompt=You are #1",
                              "rollout.stop=[\"\\n\\n\", \"END\"]", "rollout.top_k=20", "rollout.temperature=0.6",
                              "data.shuffle=false"});
  CHECK(c.data.prompt_template == "Q: {prompt} A=");
  CHECK(c.data.system_prompt == "You are #1");
  CHECK(c.rollout.stop == std::vector<std::string>{"\n\n", "END"});
  CHECK(c.rollout.top_k == 20);
  CHECK(c.rollout.temperature == Approx(0.6));
  CHECK_FALSE(c.data.shuffle);
  auto braces = config::load_text("", "t.yaml", {"data.prompt_template={prompt}"});
  CHECK(braces.data.prompt_template == "{prompt}");
  CHECK_THROWS_WITH(config::load_text("", "t.yaml", {"rollout.stop=END"}),
                    Catch::Contains("rollout.stop is a list; write it as [END]"));
  CHECK_THROWS_WITH(config::load_text("", "t.yaml", {"rollout.top_k=many"}), Catch::Contains("rollout.top_k"));
}

TEST_CASE("set: a flow list on a key that takes no list is refused as in a YAML file, naming the key", "[config]") {
  // It used to become the text "[a,b]" (data.path, a file that does not exist, or a prompt template of brackets).
  CHECK_THROWS_WITH(config::load_text("data:\n  path: [a, b]\n", "t.yaml", {}),
                    Catch::Contains("t.yaml:2: data.path must be a string (got a list)"));
  CHECK_THROWS_AS(config::load_text("", "t.yaml", {"data.path=[a,b]"}), ConfigError);
  CHECK_THROWS_WITH(config::load_text("", "t.yaml", {"data.path=[a,b]"}),
                    Catch::Contains("--set data.path=[a,b]: data.path must be a string (got a list)"));
  CHECK_THROWS_WITH(config::load_text("", "t.yaml", {"rollout.top_k= [1] "}),
                    Catch::Contains("rollout.top_k must be an integer (got a list)"));
  CHECK_THROWS_WITH(config::load_text("", "t.yaml", {"data.system_prompt=[]"}),
                    Catch::Contains("data.system_prompt must be a string (got a list)"));
  // Text that is not one whole flow sequence stays literal.
  auto c = config::load_text("", "t.yaml", {"data.prompt_template=[INST] {prompt} [/INST]", "data.system_prompt=[x"});
  CHECK(c.data.prompt_template == "[INST] {prompt} [/INST]");
  CHECK(c.data.system_prompt == "[x");
}

TEST_CASE("a repeated YAML key is an error naming both lines", "[config]") {
  CHECK_THROWS_WITH(config::load_text("rollout:\n  group_size: 4\n  group_size: 8\n", "dup.yaml", {}),
                    Catch::Contains("dup.yaml:3: duplicate key 'rollout.group_size' (first set at dup.yaml:2)"));
  CHECK_THROWS_WITH(config::load_text("train: {max_steps: 2}\ntrain: {seed: 3}\n", "dup.yaml", {}),
                    Catch::Contains("dup.yaml:2: duplicate key 'train'"));
}
