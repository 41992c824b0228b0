// What every registry (norms, activations, optimizers, schedules, data sets, architectures,
// commands) does with its entries: look one up by name, add one, list the names. An entry is any
// struct with a `name` member.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"

namespace normlab::experiments {

// "a, b, c": the entries' names in order, for help texts and messages.
template <class Entry>
std::string names_of(const std::vector<Entry>& entries) {
  std::string s;
  for (const Entry& e : entries) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

// The entries' names in order, e.g. for CLI::IsMember.
template <class Entry>
std::vector<std::string> names_in(const std::vector<Entry>& entries) {
  std::vector<std::string> names;
  for (const Entry& e : entries) names.push_back(e.name);
  return names;
}

// The entry called `name`; throws normlab::Error "unknown <what> 'x' (expected one of: a, b, c)".
template <class Entry>
const Entry& find_entry(const std::vector<Entry>& entries, const std::string& name, const std::string& what) {
  for (const Entry& e : entries)
    if (e.name == name) return e;
  throw Error("unknown " + what + " '" + name + "' (expected one of: " + names_of(entries) + ")");
}

// Appends entry to the table; an empty name or one that exists already is an error, from
// `who` (e.g. "register_norm") about a `what` ("norm").
template <class Entry>
void add_entry(std::vector<Entry>& entries, Entry entry, const std::string& who, const std::string& what) {
  if (entry.name.empty()) throw Error(who + ": the " + what + " needs a name");
  if (std::any_of(entries.begin(), entries.end(), [&](const Entry& e) { return e.name == entry.name; }))
    throw Error(who + ": a " + what + " named '" + entry.name + "' is registered already");
  entries.push_back(std::move(entry));
}

}  // namespace normlab::experiments
