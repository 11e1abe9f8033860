// gspo's Jinja interpreter (src/gspo/tokenizer/jinja.h) against transformers: every template in
// tests/data/chat_templates rendered for each conversation of tests/golden/jinja_reference.py (fixture
// make_jinja_golden), plus small templates of single features, must give transformers' text exactly; a render that
// raises in transformers must raise here (with raise_exception's message). Then the error paths.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include "gspo/tokenizer/jinja.h"
#include "helpers.h"

using namespace gspo;
using nlohmann::ordered_json;
using tokenizer::jinja::ChatJinja;
using tokenizer::jinja::TemplateError;

namespace {

ordered_json golden() {
  std::ifstream in(test::model_path("jinja_cases.json"));
  REQUIRE(in);
  return ordered_json::parse(in);
}

std::tm fixed_now(const ordered_json& g) {
  std::tm t{};
  t.tm_year = g["now"]["year"].get<int>() - 1900;
  t.tm_mon = g["now"]["month"].get<int>() - 1;
  t.tm_mday = g["now"]["day"];
  t.tm_hour = g["now"]["hour"];
  t.tm_min = g["now"]["minute"];
  t.tm_sec = g["now"]["second"];
  std::mktime(&t);  // fills the weekday and day of the year (%a, %j)
  return t;
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  REQUIRE(f);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string error_of(const std::string& source, const ordered_json& ctx = ordered_json::object()) {
  try {
    ChatJinja(source, "t.jinja").render(ctx);
  } catch (const TemplateError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("jinja renders real chat templates as transformers' apply_chat_template does", "[tokenizer][jinja]") {
  const ordered_json g = golden();
  const std::tm now = fixed_now(g);
  std::map<std::string, int> per_template;
  for (const auto& c : g["chats"]) {
    const std::string name = c["template"];
    ChatJinja tmpl(read(test::data_path("chat_templates/" + name)), name);
    tmpl.set_now(now);
    INFO(name << " case " << c["case"] << " add_generation_prompt " << c["add_generation_prompt"] << " extra "
              << c["extra"].dump());
    if (c.contains("error")) {
      // transformers raised: raise_exception's message must be ours; a Python TypeError needs only some error
      try {
        tokenizer::jinja::apply_chat_template(tmpl, c["messages"], c["add_generation_prompt"], c["tools"], c["extra"]);
        FAIL("rendered, but transformers raised: " << c["error"].get<std::string>());
      } catch (const TemplateError& e) {
        if (!c.contains("error_kind")) CHECK_THAT(e.what(), Catch::Contains(c["error"].get<std::string>()));
      }
    } else {
      const std::string got =
          tokenizer::jinja::apply_chat_template(tmpl, c["messages"], c["add_generation_prompt"], c["tools"], c["extra"]);
      CHECK(got == c["text"].get<std::string>());
    }
    ++per_template[name];
  }
  CHECK(per_template.size() >= 8);
}

TEST_CASE("jinja features render as jinja2 in transformers' environment", "[tokenizer][jinja]") {
  const ordered_json g = golden();
  for (const auto& s : g["snippets"]) {
    INFO(s["name"] << ": " << s["source"].get<std::string>());
    ChatJinja tmpl(s["source"].get<std::string>(), "snippet.jinja");
    tmpl.set_now(fixed_now(g));
    if (s.contains("error")) CHECK_THROWS_AS(tmpl.render(s["context"]), TemplateError);
    else CHECK(tmpl.render(s["context"]) == s["text"].get<std::string>());
  }
}

TEST_CASE("jinja errors name the template, the line and the construct", "[tokenizer][jinja]") {
  CHECK_THAT(error_of("a\n{{ x | frobnicate }}"), Catch::Contains("t.jinja:2:") && Catch::Contains("'frobnicate'"));
  CHECK_THAT(error_of("\n\n{% include 'x' %}"), Catch::Contains("t.jinja:3:") && Catch::Contains("include"));
  CHECK_THAT(error_of("{% if x %}\n{{ 1 + }}\n{% endif %}"), Catch::Contains("t.jinja:2:"));
  CHECK_THAT(error_of("{% if x %}\nno end"), Catch::Contains("endif"));
  CHECK_THAT(error_of("x\n{{ raise_exception('Only user and assistant roles are supported!') }}"),
             Catch::Contains("t.jinja:2: Only user and assistant roles are supported!"));
  CHECK_THAT(error_of("{{ 'a'.zfill(3) }}"), Catch::Contains("'zfill'"));
  CHECK_THAT(error_of("{{ x is frob }}"), Catch::Contains("'frob'"));
  CHECK_THAT(error_of("{{ nope.attr }}"), Catch::Contains("'nope' is undefined"));
  CHECK_THAT(error_of("{{ [1] + 'a' }}"), Catch::Contains("unsupported operand"));
  CHECK_THROWS_AS(ChatJinja("{% for x in y recursive %}{% endfor %}", "t.jinja"), TemplateError);
  // Undefined names render empty and are falsy, as jinja2's default Undefined
  CHECK(ChatJinja("[{{ nope }}]{% if nope %}y{% else %}n{% endif %}", "t.jinja").render(ordered_json::object()) ==
        "[]n");
}
