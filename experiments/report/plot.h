// Plots rendered with gnuplot (PNG and SVG): lines with an optional band or error bars (the 95%
// confidence interval of a mean over seeds, drawn only where 2 or more seeds give one), on a
// linear or logarithmic x axis; one plot per image, or several as panels of one image.
// Colours are the Okabe-Ito palette (distinguishable with the common colour-vision deficiencies,
// no yellow); a series that stands for a norm has that norm's colour and marker in every plot
// (the registry's NormEntry::plot_color and plot_point, see norm_style). The key sits below the
// plot, never beside it.
#pragma once
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/report/gnuplot.h"

namespace normlab::experiments::report {

// The palette: gnuplot line types 1-8, each one colour (NormEntry::plot_color uses the same numbers).
enum PlotColor : int { kBlue = 1, kVermillion, kGreen, kPurple, kOrange, kSkyBlue, kBlack, kGrey };

// How a series is drawn: a palette colour (0: by the series' position in the plot), a gnuplot
// point type (pt, e.g. 7 filled circle, 6 open circle; 0: the colour's default marker) and a
// gnuplot dash type (0 or 1: solid, 2 dashed, 3 dotted, 4 dash-dot).
struct Style {
  int color = 0, point = 0, dash = 0;
};

// The style of a registered norm (its colour and marker from the registry, solid); throws
// normlab::Error for an unknown name.
Style norm_style(const std::string& norm);

// One curve: y over x, with an optional spread (same length as y: the half-width of the interval
// drawn around y as a band or error bars; NaN at a point: none there), and optionally n, the number
// of seeds each y is the mean of (then the title says so).
struct Series {
  std::string name;
  std::vector<double> x, y, spread;
  std::vector<int64_t> n;  // empty: y is not a mean over seeds
  Style style;
};

// Adds the point (x, the mean of the finite values) to s, with the 95% confidence interval of that
// mean as its spread (t(0.975, n-1) * s / sqrt(n); NaN, so no band or bar, for fewer than 2
// finite values) and n, the number of finite values (report/stats.h: mean_interval).
void add_mean_point(Series& s, double x, const std::vector<double>& values);

// The y axis: linear, logarithmic, or decided at render time from the drawn data by one rule:
// logarithmic exactly when every finite y is positive and the largest is more than 10 times the
// smallest (the data spans more than a decade), else linear.
enum class LogY { off, on, if_wide };

struct PlotSpec {
  std::string title, xlabel, ylabel;
  // x axis: 0 linear, 2 (batch sizes) or 10 (learning rates) logarithmic; a logarithmic axis has
  // its ticks at the measured x values only (when there are at most 12 of them).
  int log_x = 0;
  bool error_bars = false;  // spread as error bars (else as a shaded band)
  LogY log_y = LogY::off;
  bool percent_y = false;   // y values are fractions, drawn as percentages (axis 0-100, "%" ticks)
  bool integer_x = false;   // x counts something whole (epochs): ticks on whole numbers only
  // x are steps of a densely sampled curve (loss per step), not measured points: lines with a
  // marker every 1/8 of the points (so the marker still tells the series apart in black and
  // white); otherwise lines with a marker at every point.
  bool dense = false;
  // The y axis's ends (NaN: from the data). A point beyond one (a diverged run among converged
  // ones, say) is left off its line: an arrow at that edge, in its series' colour, points off the
  // scale with the value beside it, and the title names it ("off the scale: <series> at <x>: <y>").
  double y_min = NAN, y_max = NAN;
  std::vector<Series> series;
};

// Whether p's y axis is drawn logarithmic (LogY::if_wide decided from p's finite points).
bool use_log_y(const PlotSpec& p);
// What a plot's title says of its seeds, from the drawn points of the series that have n: ""
// when none has; " (1 seed)"; " (mean over 3 seeds)", " (mean over 2-3 seeds)"; with
// "; band = 95% CI of the mean" (or "error bars = ...") when an interval is drawn, and
// " where 2+ seeds" when some drawn point has only one seed. render_plot appends it to the title,
// render_panels to the overall title (over all panels).
std::string seeds_note(const std::vector<PlotSpec>& plots);
// The gnuplot script of a plot (as written to <stem>.gp, after its comment line).
std::string plot_script(const PlotSpec& spec);
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
