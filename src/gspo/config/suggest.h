// "Did you mean" suggestions for unknown keys and values.
#pragma once
#include <string>
#include <vector>

namespace gspo::config {

// Edit distance between two strings (insert, delete, substitute each cost 1).
size_t edit_distance(const std::string& a, const std::string& b);

// The candidate nearest to `word`, or "" when none is within a third of the word's length (+2).
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace gspo::config
