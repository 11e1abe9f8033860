// The built-in arithmetic task draws distinct problems (regression: data.num_prompts promised distinct prompts but
// drew with replacement), and data.holdout keeps problems out of training for the end-of-run greedy accuracy.
#include <catch2/catch.hpp>

#include <set>

#include "gspo/core/error.h"
#include "gspo/data/dataset.h"

using namespace gspo;

namespace {
std::set<std::string> prompts_of(const std::vector<data::Example>& rows) {
  std::set<std::string> out;
  for (const auto& r : rows) out.insert(r.prompt);
  return out;
}
}  // namespace

TEST_CASE("arithmetic problems are distinct, held-out ones never among the training ones", "[data]") {
  auto all = data::make_arithmetic(25, 4, "+", 7);  // every sum a+b with a, b in [0, 4]
  CHECK(prompts_of(all).size() == 25);
  auto train = data::make_arithmetic(20, 4, "+", 7);
  auto held = data::arithmetic_holdout(20, 5, 4, "+", 7);
  REQUIRE(held.size() == 5);
  auto seen = prompts_of(train);
  for (const auto& h : held) CHECK(seen.count(h.prompt) == 0);
  CHECK(prompts_of(train).size() + prompts_of(held).size() == 25);
  CHECK_THROWS_WITH(data::make_arithmetic(26, 4, "+", 7), Catch::Contains("has only 25"));
  // A large space is drawn with rejection of repeats instead of enumerated: still distinct, still seeded.
  auto big = data::make_arithmetic(500, 100000, "+-*", 3);
  CHECK(prompts_of(big).size() == 500);
  CHECK(prompts_of(data::make_arithmetic(500, 100000, "+-*", 3)) == prompts_of(big));
}
