// --resume of compare, sweep and study: which earlier results it continues (resume.h).
#include "experiments/commands/resume.h"

#include <zlib.h>

#include <cstdio>
#include <fstream>

#include "base/error.h"
#include "data/text.h"
#include "experiments/records/records.h"
#include "experiments/records/result_set.h"

namespace normlab::experiments::commands {

namespace fs = std::filesystem;

nlohmann::json typed_settings(const CLI::App& app, const std::string& command) {
  nlohmann::json flags = nlohmann::json::object();
  for (const CLI::Option* o : app.get_options()) {
    const std::string name = o->get_name();
    if (o->count() == 0 || name == "--out" || name == "--resume" || name == "--quiet" || name == "--threads" ||
        name == "--help")
      continue;
    std::string v;
    for (const std::string& r : o->results()) v += (v.empty() ? "" : ",") + r;
    flags[name] = v;
  }
  return {{"command", command}, {"flags", flags}};
}

DataSource text_source(const std::string& flag, const std::string& text) {
  if (!text.empty()) return {flag + " " + text, {text}};
  DataSource s{"the fortunes (" + std::string(data::kFortunesDir) + ")", {}};
  for (const std::string& f : data::default_corpus_files()) s.files.push_back(std::string(data::kFortunesDir) + "/" + f);
  return s;
}

nlohmann::json data_fingerprint(const std::vector<DataSource>& sources) {
  nlohmann::json all = nlohmann::json::array();
  std::vector<unsigned char> buf(1 << 20);
  for (const DataSource& src : sources) {
    int64_t bytes = 0;
    uLong crc = ::crc32(0L, Z_NULL, 0);
    for (const std::string& file : src.files) {
      std::error_code ec;
      if (!std::filesystem::is_regular_file(file, ec)) {  // never open a FIFO or a device: it may block
        bytes = -1;
        break;
      }
      std::ifstream f(file, std::ios::binary);
      if (!f) {
        bytes = -1;
        break;
      }
      while (f.read(reinterpret_cast<char*>(buf.data()), static_cast<std::streamsize>(buf.size())) || f.gcount() > 0) {
        crc = ::crc32(crc, buf.data(), static_cast<uInt>(f.gcount()));
        bytes += f.gcount();
      }
    }
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
    all.push_back({{"data", src.name}, {"bytes", bytes}, {"crc32", bytes < 0 ? "" : hex}});
  }
  return all;
}

namespace {

// "2953 bytes, CRC-32 89abcdef" (or "missing or unreadable") of a data_fingerprint entry.
std::string fingerprint_text(const nlohmann::json& d) {
  const int64_t bytes = d.value("bytes", int64_t{-1});
  if (bytes < 0) return "missing or unreadable";
  return std::to_string(bytes) + " bytes, CRC-32 " + d.value("crc32", "");
}

// Why the data of `then` are not those of `now`: "" when they agree (or `then` recorded none).
std::string data_differ(const nlohmann::json& then, const nlohmann::json& now) {
  if (!then.contains("data") || !then["data"].is_array() || !now.contains("data")) return "";
  for (const nlohmann::json& d : now["data"])
    for (const nlohmann::json& t : then["data"])
      if (t.value("data", "") == d.value("data", "") && t != d)
        return "its results were made from other data: " + d.value("data", "") + " was " + fingerprint_text(t) +
               ", and is now " + fingerprint_text(d) + "; --resume continues results made from the same data only: "
               "restore the file, or choose another --out to retrain every run";
  return "";
}

// The settings an earlier command recorded in `dir`: its journal's header, else its manifest's
// (a manifest written before they were recorded: the command only); null if none.
nlohmann::json settings_in(const fs::path& dir) {
  if (nlohmann::json h = journal_header(dir / kJournal); h.contains("command")) return h;
  std::ifstream f(dir / "manifest.json", std::ios::binary);
  const nlohmann::json m = nlohmann::json::parse(f, nullptr, false);
  if (m.is_discarded() || !m.is_object()) return nullptr;
  if (m.contains("settings_typed")) return m["settings_typed"];
  const nlohmann::json c = m.value("config", nlohmann::json::object());
  if (c.is_object() && c.contains("study") && c["study"].is_string()) return {{"command", c["study"]}};
  return nullptr;
}

// Why `then` (settings_in) is not `now` (typed_settings): "" when they agree, else a sentence that
// names the other command, or each flag that differs with its two values.
std::string settings_differ(const nlohmann::json& then, const nlohmann::json& now) {
  const std::string cmd = then.value("command", "");
  if (cmd != now.value("command", ""))
    return "it holds the results of `normlab " + cmd + "`, not of `normlab " + now.value("command", "") +
           "`: resume with the command that made them, or choose another --out to start afresh";
  // Recorded before the flags were (the command only): the runs' settings are checked one by one.
  if (!then.contains("flags") || !then["flags"].is_object()) return "";
  nlohmann::json keys = then["flags"];
  keys.update(now["flags"]);
  std::string diff;
  const auto value = [](const nlohmann::json& flags, const std::string& k) -> std::string {
    if (!flags.contains(k)) return "no " + k;
    return k + " " + (flags[k].is_string() ? flags[k].get<std::string>() : flags[k].dump());
  };
  for (const auto& [k, _] : keys.items())
    if (then["flags"].value(k, nlohmann::json()) != now["flags"].value(k, nlohmann::json()))
      diff += (diff.empty() ? "" : "; ") + value(then["flags"], k) + " then, " + value(now["flags"], k) + " now";
  if (diff.empty()) return data_differ(then, now);
  return "its results were made with other flags (" + diff + "); --resume continues them with the same flags only: "
         "give those, or choose another --out to retrain every run";
}

}  // namespace

ResumeSources resume_sources(const std::string& out_flag, const std::string& records_in, const nlohmann::json& now) {
  ResumeSources found;
  const fs::path out = output_folder(out_flag), records = out / records_in;
  const fs::path part = fs::path(records_in).parent_path();  // study: compare/
  std::string refused;
  if (fs::exists(records)) {
    refused = settings_differ(settings_in(out), now);
    found.out = refused.empty();
  }
  for (const fs::path& k : killed_partials(out)) {
    const nlohmann::json then = settings_in(k / part);
    if (then.is_null()) continue;  // killed before its first run finished
    const std::string why = settings_differ(then, now);
    if (why.empty()) found.killed.push_back(k);
    else if (refused.empty()) refused = why;
  }
  if (found.out || !found.killed.empty()) return found;
  if (!refused.empty()) throw Error("--resume: " + out_flag + ": " + refused);
  throw Error("--resume: " + out_flag + " holds no results to continue (" + records.string() +
              " is missing, and no command killed while it wrote " + out_flag + " left a finished run)");
}

}  // namespace normlab::experiments::commands
