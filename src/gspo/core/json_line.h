// One line of a JSON-lines file parsed as a JSON object, or a DataError naming where and why (the parser's reason:
// a syntax error with its column, invalid UTF-8 with its byte index, or a value that is not an object).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gspo::core {

nlohmann::json parse_json_object(const std::string& line, const std::string& where);

}  // namespace gspo::core
