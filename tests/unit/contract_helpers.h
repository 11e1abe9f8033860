// Test helper: loading a broken model and checking it against the contract must fail with a given message.
#pragma once
#include <catch2/catch.hpp>

#include <string>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "helpers.h"

namespace gspo::test {

// Loads test model `file` and runs the contract check (what gspo inspect does); the ModelContractError it must
// throw contains `needle`.
inline void check_contract_rejects(const std::string& file, const std::string& needle) {
  INFO(file);
  try {
    auto p = model::Policy::load(model_path(file));
    model::check_contract(p);
    FAIL("accepted a broken model");
  } catch (const ModelContractError& e) {
    CHECK_THAT(e.what(), Catch::Contains(needle));
  }
}

}  // namespace gspo::test
