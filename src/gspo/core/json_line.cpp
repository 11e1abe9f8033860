#include "gspo/core/json_line.h"

#include "gspo/core/error.h"

namespace gspo::core {

nlohmann::json parse_json_object(const std::string& line, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line 1, column 7: ..."; keep the reason.
    std::string why = e.what();
    if (const auto at = why.find("] "); at != std::string::npos) why = why.substr(at + 2);
    throw DataError(where + ": not valid JSON (" + why.substr(0, 160) + ")");
  }
  if (!j.is_object()) throw DataError(where + ": each line must be a JSON object (got " + j.type_name() + ")");
  return j;
}

}  // namespace gspo::core
