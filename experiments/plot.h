// Plots rendered with gnuplot (PNG and SVG): lines with an optional band (mean +- std over seeds)
// or error bars, on a linear or log2 x axis.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace normlab::experiments {

// One curve: y over x, with an optional spread (same length as y) drawn as a band or error bars.
struct Series {
  std::string name;
  std::vector<double> x, y, spread;
};

struct PlotSpec {
  std::string title, xlabel, ylabel;
  int log_x = 0;            // x axis: 0 linear, 2 (batch sizes) or 10 (learning rates) logarithmic
  bool error_bars = false;  // spread as error bars (else as a shaded band)
  bool log_y = false;
  std::vector<Series> series;
};

// True when the gnuplot command can be run.
bool gnuplot_available();
// Renders spec to <dir>/<stem>.png and <dir>/<stem>.svg (data and script in <dir>/<stem>.gp,
// data inline). Each image is written under a temporary name and renamed. Throws normlab::Error
// if gnuplot fails.
void render_plot(const PlotSpec& spec, const std::filesystem::path& dir, const std::string& stem);

}  // namespace normlab::experiments
