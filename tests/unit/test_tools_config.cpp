// The tools section: tools.list is a list of mappings read by ToolSpec's own table, every message naming the file,
// line and item key; printing reads back; a command tool's missing program is a ConfigError naming its key.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "helpers.h"

using namespace gspo;

namespace {

const char* kTwoTools =
    "tools:\n"
    "  max_calls_per_turn: 2\n"
    "  list:\n"
    "    - name: python\n"
    "      description: Run Python code and see its output.\n"
    "      kind: python\n"
    "      parameters:\n"
    "        type: object\n"
    "        properties:\n"
    "          code: {type: string, description: \"the program\"}\n"
    "        required: [code]\n"
    "    - name: lookup\n"
    "      kind: command\n"
    "      command: cat -u\n"
    "      parameters: {type: object, properties: {key: {type: string, maxLength: 64, enum: [\"1\", yes]}}}\n";

}  // namespace

TEST_CASE("tools config: a list of mappings, parameters kept as JSON", "[tools][config]") {
  const auto c = config::load_text(kTwoTools, "run.yaml");
  CHECK(c.tools.max_calls_per_turn == 2);
  REQUIRE(c.tools.list.size() == 2);
  const auto& py = c.tools.list[0];
  CHECK(py.name == "python");
  CHECK(py.description == "Run Python code and see its output.");
  CHECK(py.kind == config::ToolKind::kPython);
  CHECK(nlohmann::json::parse(py.parameters.json) ==
        nlohmann::json::parse(R"({"type": "object", "properties": {"code": {"type": "string",
                                  "description": "the program"}}, "required": ["code"]})"));
  // Keys in the YAML's order, as the chat template shows them to the model (not sorted).
  CHECK(py.parameters.json ==
        R"({"type":"object","properties":{"code":{"type":"string","description":"the program"}},"required":["code"]})");
  const auto& cmd = c.tools.list[1];
  CHECK(cmd.kind == config::ToolKind::kCommand);
  CHECK(cmd.command == "cat -u");
  // Quoted scalars stay strings; plain ones are read as YAML 1.2 core values.
  CHECK(nlohmann::json::parse(cmd.parameters.json)["properties"]["key"] ==
        nlohmann::json::parse(R"({"type": "string", "maxLength": 64, "enum": ["1", "yes"]})"));
  CHECK(c.origin.at("tools.list[1].command") == "run.yaml:14");

  CHECK(config::load("").tools.list.empty());  // no tools unless listed
}

TEST_CASE("tools config: printing reads back, --set takes a flow list, the docs list the item keys", "[tools][config]") {
  const auto c = config::load_text(kTwoTools, "run.yaml");
  const auto again = config::load_text(config::to_yaml(c), "printed.yaml");
  REQUIRE(again.tools.list.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(again.tools.list[i].name == c.tools.list[i].name);
    CHECK(again.tools.list[i].description == c.tools.list[i].description);
    CHECK(again.tools.list[i].kind == c.tools.list[i].kind);
    CHECK(again.tools.list[i].command == c.tools.list[i].command);
    CHECK(nlohmann::json::parse(again.tools.list[i].parameters.json) ==
          nlohmann::json::parse(c.tools.list[i].parameters.json));
  }
  const auto set = config::load_text("", "run.yaml", {"tools.list=[{name: py, kind: python}]"});
  REQUIRE(set.tools.list.size() == 1);
  CHECK(set.tools.list[0].name == "py");
  CHECK(set.tools.list[0].parameters.json == "{}");

  const std::string doc = config::reference_markdown();
  for (const char* key : {"tools.list[].name", "tools.list[].description", "tools.list[].kind",
                          "tools.list[].parameters", "tools.list[].command", "tools.max_output_tokens"})
    CHECK(doc.find(std::string("`") + key + "`") != std::string::npos);
}

TEST_CASE("tools config: bad lists and items name the file, line and item key", "[tools][config]") {
  CHECK_THAT(test::config_error_of("tools:\n  list: python\n"),
             Catch::Contains("run.yaml:2: tools.list must be a list of mappings (got 'python')"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - python\n"),
             Catch::Contains("run.yaml:3: tools.list[0] must be a mapping of keys (got 'python')"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n      descripton: x\n"),
             Catch::Contains("run.yaml:4: unknown key 'tools.list[0].descripton'; did you mean "
                             "'tools.list[0].description'?"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n    - name: b\n      kind: shell\n"),
             Catch::Contains("run.yaml:5: tools.list[1].kind must be one of python, command (got \"shell\")"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n      parameters: [code]\n"),
             Catch::Contains("run.yaml:4: tools.list[0].parameters must be a mapping (a JSON object) (got a list)"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n      name: b\n"),
             Catch::Contains("run.yaml:4: duplicate key 'tools.list[0].name' (first set at run.yaml:3)"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n      parameters: {type: array}\n"),
             Catch::Contains("run.yaml:4: tools.list[0].parameters.type must be object"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n    - name: a\n"),
             Catch::Contains("run.yaml:4: tools.list[1].name 'a' is already the name of another tool"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: \"a b\"\n"),
             Catch::Contains("run.yaml:3: tools.list[0].name must be 1 to 64 letters, digits, _ . or - (got \"a b\")"));
  // An item without a name: the item's own line (it used to say "<default>:").
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - kind: python\n"),
             Catch::Contains("run.yaml:3: tools.list[0].name must be 1 to 64"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n    - kind: command\n      command: cat\n"),
             Catch::Contains("run.yaml:4: tools.list[1].name must be 1 to 64"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n      command: cat\n"),
             Catch::Contains("run.yaml:4: tools.list[0].command applies to kind command only (tool 'a' is of kind "
                             "python)"));
  CHECK_THAT(test::config_error_of("tools:\n  max_output_tokens: 4\n"),
             Catch::Contains("run.yaml:2: tools.max_output_tokens must be >= 16 (got 4)"));
  CHECK_THAT(test::config_error_of("tools:\n  timeout_s: 0\n"), Catch::Contains("tools.timeout_s must be > 0"));
  CHECK_THAT(test::config_error_of("tools:\n  workers: 0\n"), Catch::Contains("tools.workers must be >= 1"));
  CHECK_THAT(test::config_error_of("tools:\n  max_turn: 2\n"), Catch::Contains("did you mean 'tools.max_turns'?"));
}

TEST_CASE("tools config: a command tool's program must exist", "[tools][config]") {
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n      kind: command\n"),
             Catch::Contains("run.yaml:4: tools.list[0] is of kind command and needs tools.list[0].command"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n      kind: command\n"
                      "      command: /nonexistent/gspo_tool --flag\n"),
             Catch::Contains("run.yaml:5: tools.list[0].command \"/nonexistent/gspo_tool --flag\": its program is "
                             "neither an executable file nor found on PATH"));
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n      kind: command\n      command: gspo_no_such_program_40\n"),
             Catch::Contains("tools.list[0].command"));
  const std::string plain = "/tmp/gspo_not_executable_" + std::to_string(getpid());
  std::ofstream(plain) << "echo hi\n";
  chmod(plain.c_str(), 0644);
  CHECK_THAT(test::config_error_of("tools:\n  list:\n    - name: a\n      kind: command\n      command: " + plain + "\n"),
             Catch::Contains("its program is neither an executable file"));
  std::remove(plain.c_str());
  CHECK(test::config_error_of("tools:\n  list:\n    - name: a\n      kind: command\n      command: LC_ALL=C sh -c 'cat'\n") ==
        "<no error>");
}
