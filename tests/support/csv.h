// Reading the tidy CSV files the commands write, in tests: the cells of a line, quotes honoured.
#pragma once
#include <string>
#include <vector>

namespace normlab::test {

// The cells of one CSV line: a comma inside double quotes belongs to its cell ("a, b" is one).
inline std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

}  // namespace normlab::test
