// Experiment outputs: atomic writes, output folders, CSV tables.
#include "experiments/support/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "base/error.h"

namespace normlab::experiments {

namespace fs = std::filesystem;

namespace {

// Writes all of text to fd (retrying short and interrupted writes); false on an error (errno says which).
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void write_file_atomic(const fs::path& path, const std::string& content) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error("cannot write " + path.string() + ": " + std::strerror(errno));
  if (!write_all(fd, content)) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path.string() + ": " + why);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path.string() + ": " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path.string() + ": " + why);
  }
}

void append_file_synced(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) throw Error("cannot write " + path.string() + ": " + std::strerror(errno));
  const bool ok = write_all(fd, text) && ::fsync(fd) == 0;
  const std::string why = std::strerror(errno);
  ::close(fd);
  if (!ok) throw Error("cannot write " + path.string() + ": " + why);
}

void prepare_output_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot write to output folder " + dir.string() + ": " + ec.message());
  if (!fs::is_directory(dir)) throw Error("cannot write to output folder " + dir.string() + ": it is not a folder");
  const fs::path probe = dir / (".normlab-probe." + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw Error("cannot write to output folder " + dir.string() + ": " + std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string fmt(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

void CsvTable::add_row(std::vector<std::string> cells) {
  if (cells.size() != header_.size())
    throw Error("CsvTable: a row has " + std::to_string(cells.size()) + " cells, the header has " +
                std::to_string(header_.size()));
  rows_.push_back(std::move(cells));
}

namespace {
std::string cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}
}  // namespace

std::string CsvTable::str() const {
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out += (i ? "," : "") + cell(cells[i]);
    out += '\n';
  };
  line(header_);
  for (const auto& r : rows_) line(r);
  return out;
}

}  // namespace normlab::experiments
