// Plots rendered with gnuplot (PNG and SVG): lines with an optional band (mean +- std over seeds)
// or error bars, on a linear or log2 x axis; one plot per image, or several as panels of one image.
// Colours are the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies,
// no yellow), each with its own marker; the key sits below the plot, never beside it.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace normlab::experiments::report {

// One curve: y over x, with an optional spread (same length as y) drawn as a band or error bars.
struct Series {
  std::string name;
  std::vector<double> x, y, spread;
  int color = 0;  // gnuplot line type (its colour); 0: the series' position in the plot
  int dash = 0;   // gnuplot dash type; 0: solid
};

struct PlotSpec {
  std::string title, xlabel, ylabel;
  int log_x = 0;            // x axis: 0 linear, 2 (batch sizes) or 10 (learning rates) logarithmic
  bool error_bars = false;  // spread as error bars (else as a shaded band)
  bool log_y = false;
  bool percent_y = false;   // y values are fractions, drawn as percentages (axis 0-100, "%" ticks)
  bool integer_x = false;   // x counts something whole (epochs): ticks on whole numbers only
  std::vector<Series> series;
};

// True when the gnuplot command can be run.
bool gnuplot_available();
// Renders spec to <dir>/<stem>.png and <dir>/<stem>.svg (data and script in <dir>/<stem>.gp,
// data inline). Points that are not finite (or not positive on a log axis) are left out; a series
// with none left is named in the title as having no finite values. Each image is written under a
// temporary name, checked to be whole and renamed. Returns false (and writes nothing) when no
// series has a point to draw; throws normlab::Error if gnuplot fails.
bool render_plot(const PlotSpec& spec, const std::filesystem::path& dir, const std::string& stem);
// Renders several plots as panels of one image (row by row, `cols` per row) under an overall
// title, to <dir>/<stem>.png and .svg, like render_plot.
// Returns false (writes nothing) when no panel has a point to draw; panels without one are left out.
bool render_panels(const std::string& title, const std::vector<PlotSpec>& panels, int cols,
                   const std::filesystem::path& dir, const std::string& stem);

// Renders a confusion matrix (rows: true class, columns: predicted class; counts) as a heatmap of
// each row's fractions with the counts written in the cells, to <dir>/<stem>.png and .svg.
void render_confusion(const std::string& title, const std::vector<std::string>& classes,
                      const std::vector<std::vector<int64_t>>& counts, const std::filesystem::path& dir,
                      const std::string& stem);

}  // namespace normlab::experiments::report
