// The flags that only some entries of a registry read (an arch's --hidden, an optimizer's
// --momentum): who reads a flag, and the usage error for a flag the chosen entry does not read.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "experiments/commands/command.h"

namespace normlab::experiments::commands {

// "a, b or c".
inline std::string or_list(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
  return s;
}

// The entries that list `flag` among theirs.
template <class Entry>
std::vector<const Entry*> owners_of(const std::vector<Entry>& entries, const std::string& flag) {
  std::vector<const Entry*> owners;
  for (const Entry& e : entries)
    if (std::find(e.flags.begin(), e.flags.end(), flag) != e.flags.end()) owners.push_back(&e);
  return owners;
}

// Every flag some entry of a registry reads: given while the chosen entry does not read it, a
// usage error "<flag> goes with <select> a or b; <chosen phrase>".
template <class Entry>
void check_entry_flags(const std::vector<Entry>& entries, const Entry& chosen, const Given& given,
                       const std::string& select, const std::string& phrase) {
  std::vector<std::string> seen;
  for (const Entry& e : entries)
    for (const std::string& flag : e.flags) {
      if (std::find(seen.begin(), seen.end(), flag) != seen.end()) continue;
      seen.push_back(flag);
      if (!given(flag) || std::find(chosen.flags.begin(), chosen.flags.end(), flag) != chosen.flags.end()) continue;
      std::vector<std::string> names;
      for (const Entry* o : owners_of(entries, flag)) names.push_back(o->name);
      throw Error(flag + " goes with " + select + " " + or_list(names) + ", not " + phrase);
    }
}

}  // namespace normlab::experiments::commands
