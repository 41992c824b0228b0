// Experiment outputs: atomic file writes, output folders, tidy CSV tables and number formatting.
// Nothing is ever half-written: each file is written under a temporary name, then renamed.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace normlab::experiments {

// Writes content to path atomically (path.tmp.<pid>, flushed and synced, then renamed over path).
// Throws normlab::Error naming the path on failure, leaving no temporary file behind.
void write_file_atomic(const std::filesystem::path& path, const std::string& content);

// Appends text to path (created if missing) and syncs it to disk before returning: a journal line
// that survives a kill or a power loss. Throws normlab::Error naming the path on failure.
void append_file_synced(const std::filesystem::path& path, const std::string& text);

// Creates the folder (and parents) and checks that files can be written in it; throws
// normlab::Error with the reason ("cannot write to output folder X: ...") otherwise.
void prepare_output_dir(const std::filesystem::path& dir);

// A number as CSV/report text: up to 9 significant digits, the same bytes on every run;
// "nan"/"inf" for non-finite values.
std::string fmt(double v, int digits = 9);

// A tidy CSV table: one header, rows of cells (quoted when they hold a comma or a quote).
class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> header) : header_(std::move(header)) {}
  // Appends a row; it must have as many cells as the header.
  void add_row(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  const std::vector<std::string>& header() const { return header_; }
  const std::vector<std::vector<std::string>>& data() const { return rows_; }
  // The CSV text (header line, then rows, '\n' line ends).
  std::string str() const;
  // Writes str() atomically to path.
  void write(const std::filesystem::path& path) const { write_file_atomic(path, str()); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace normlab::experiments
