// to_yaml() and reference_markdown(): both walk the same options table as the loader.
#include <sstream>
#include <type_traits>

#include "gspo/config/load.h"
#include "gspo/config/value_text.h"

namespace gspo::config {

std::string to_yaml(const Config& cfg_in) {
  Config cfg = cfg_in;
  std::ostringstream os;
  cfg.visit_sections([&](const char* name, auto& section, const char* doc) {
    os << name << ":  # " << doc << "\n";
    section.visit([&](const char* key, auto& field, const char* fdoc, const Rule&) {
      os << "  " << key << ": " << value_text(field) << "  # " << fdoc << "\n";
    });
  });
  return os.str();
}

std::string reference_markdown() {
  Config defaults;
  std::ostringstream os;
  os << "| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
  defaults.visit_sections([&](const char* name, auto& section, const char*) {
    section.visit([&](const char* key, auto& field, const char* fdoc, const Rule& rule) {
      std::string allowed = describe(rule);
      os << "| `" << name << "." << key << "` | " << type_name(field) << " | `" << value_text(field) << "` | "
         << allowed << " | " << fdoc << " |\n";
      using T = std::decay_t<decltype(field)>;
      if constexpr (IsRecordList<T>::value) {  // then one row per key of its items
        typename T::value_type item;
        item.visit([&](const char* ikey, auto& ifield, const char* idoc, const Rule& irule) {
          os << "| `" << name << "." << key << "[]." << ikey << "` | " << type_name(ifield) << " | `"
             << value_text(ifield) << "` | " << describe(irule) << " | " << idoc << " |\n";
        });
      }
    });
  });
  return os.str();
}

}  // namespace gspo::config
