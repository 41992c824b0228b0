// Plots as gnuplot scripts with inline data: the series, their intervals, the axes (logarithmic
// or not, y limits with arrows off the scale), titles and panels; gnuplot.h renders them.
#include "experiments/report/plot.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "base/error.h"
#include "experiments/registry/layers.h"
#include "experiments/report/gnuplot.h"
#include "experiments/report/stats.h"
#include "experiments/support/output.h"

namespace normlab::experiments::report {

namespace fs = std::filesystem;

namespace {

// The palette, line types 1-8 (PlotColor), and each colour's default marker (for a series
// without a style of its own). No yellow: hard to see on white.
const char* const kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#999999"};
const int kMarkers[] = {7, 5, 9, 11, 13, 15, 6, 4};

// Whether y lies within p's y limits (a NaN limit: none on that side).
bool in_limits(const PlotSpec& p, double y) { return !(y > p.y_max) && !(y < p.y_min); }

// Whether point j of s is one p's axes can show: finite, and positive on a logarithmic axis
// (p.log_y already decided: on or off).
bool plottable(const PlotSpec& p, const Series& s, size_t j) {
  return std::isfinite(s.x[j]) && std::isfinite(s.y[j]) && (!p.log_x || s.x[j] > 0) &&
         (p.log_y != LogY::on || s.y[j] > 0);
}

// Whether point j of s is drawn on its line: plottable and within the y limits.
bool drawable(const PlotSpec& p, const Series& s, size_t j) { return plottable(p, s, j) && in_limits(p, s.y[j]); }

// Whether point j of s is off the scale: plottable but beyond a y limit (drawn as an arrow).
bool off_scale(const PlotSpec& p, const Series& s, size_t j) { return plottable(p, s, j) && !in_limits(p, s.y[j]); }

// A y value as the axis shows it (a percentage on a percent axis), for the off-scale notes.
std::string y_text(const PlotSpec& p, double y) { return p.percent_y ? fmt(100 * y, 4) + "%" : fmt(y, 4); }

// Whether series s has a point on its line.
bool any_drawable(const PlotSpec& p, const Series& s) {
  for (size_t j = 0; j < s.x.size(); ++j)
    if (drawable(p, s, j)) return true;
  return false;
}

// Whether point j of s has an interval to draw (a finite, non-negative spread).
bool has_interval(const Series& s, size_t j) { return j < s.spread.size() && std::isfinite(s.spread[j]) && s.spread[j] >= 0; }

// p with its y axis decided, without the series that have no point to show (all diverged, say);
// the title names them, and the points off the scale.
PlotSpec drawable_only(const PlotSpec& p) {
  PlotSpec out = p;
  out.log_y = use_log_y(p) ? LogY::on : LogY::off;
  out.series.clear();
  std::string missing, off;
  for (const Series& s : p.series) {
    bool any = false;
    for (size_t j = 0; j < s.x.size(); ++j) {
      any = any || plottable(out, s, j);
      if (off_scale(out, s, j)) off += (off.empty() ? "" : "; ") + s.name + " at " + fmt(s.x[j], 4) + ": " + y_text(out, s.y[j]);
    }
    if (any) out.series.push_back(s);
    else missing += (missing.empty() ? "" : ", ") + s.name;
  }
  if (!missing.empty()) out.title += " [no finite values: " + missing + "]";
  if (!off.empty()) out.title += " [off the scale: " + off + "]";
  bool drawn = false;  // a plot of arrows only is not drawn
  for (const Series& s : out.series) drawn = drawn || any_drawable(out, s);
  if (!drawn) out.series.clear();
  return out;
}

// Whether series s of a drawn plot has an interval at one of its drawn points.
bool draws_interval(const PlotSpec& p, const Series& s) {
  for (size_t j = 0; j < s.x.size(); ++j)
    if (drawable(p, s, j) && has_interval(s, j)) return true;
  return false;
}

// Inline data blocks, one per series ($<prefix><i>): x y lo hi spread, drawable points only; a
// point without an interval has lo = hi = y and spread NaN (no error bar: gnuplot skips it).
std::string data_blocks(const PlotSpec& p, const std::string& prefix) {
  std::ostringstream g;
  const double k = p.percent_y ? 100 : 1;
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    g << "$" << prefix << i << " << EOD\n";
    for (size_t j = 0; j < s.x.size(); ++j) {
      if (!drawable(p, s, j)) continue;
      const bool in = has_interval(s, j);
      const double sp = in ? s.spread[j] : 0;
      g << fmt(s.x[j]) << ' ' << fmt(k * s.y[j]) << ' ' << fmt(k * (s.y[j] - sp)) << ' ' << fmt(k * (s.y[j] + sp)) << ' '
        << (in ? fmt(k * sp) : std::string("NaN")) << '\n';
    }
    g << "EOD\n";
  }
  return g.str();
}

// The plot command over the data blocks: per series a band (or error bars) where it has an
// interval, then its line with markers: at every point, or (dense) at every 1/8 of the points.
std::string plot_command(const PlotSpec& p, const std::string& prefix) {
  std::ostringstream g;
  g << "plot ";
  bool first = true;
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    const int lt = s.style.color ? s.style.color : static_cast<int>(i % 8) + 1;
    const int pt = s.style.point ? s.style.point : kMarkers[lt - 1];
    const std::string style = " lt " + std::to_string(lt) + " pt " + std::to_string(pt) +
                              (s.style.dash > 1 ? " dt " + std::to_string(s.style.dash) : "");
    const std::string data = "$" + prefix + std::to_string(i);
    if (!any_drawable(p, s)) continue;  // all off the scale: arrows only
    if (draws_interval(p, s)) {
      if (p.error_bars) g << (first ? "" : ", ") << data << " using 1:2:5 with yerrorbars lw 1.5 ps 0 lt " << lt << " notitle";
      else g << (first ? "" : ", ") << data << " using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lt " << lt << " notitle";
      first = false;
    }
    size_t points = 0;
    for (size_t j = 0; j < s.x.size(); ++j) points += drawable(p, s, j);
    const size_t every = p.dense ? std::max<size_t>(1, (points + 7) / 8) : 1;
    g << (first ? "" : ", ") << data << " using 1:2 with linespoints lw 2" << style;
    if (every > 1) g << " pi " << every;
    g << " title " << gnuplot_quote(s.name);
    first = false;
  }
  return g.str();
}

// The y range of a plot with y limits, on a linear axis: its drawn points and their intervals, cut
// at the limits, with a margin (a fifth of the span on a side with arrows, for them and their
// labels; "*": gnuplot's autoscale at an end without a limit).
std::string limited_yrange(const PlotSpec& p) {
  double lo = INFINITY, hi = -INFINITY;
  bool above = false, below = false;
  for (const Series& s : p.series)
    for (size_t j = 0; j < s.x.size(); ++j) {
      if (off_scale(p, s, j)) (s.y[j] > p.y_max ? above : below) = true;
      if (!drawable(p, s, j)) continue;
      const double sp = has_interval(s, j) ? s.spread[j] : 0;
      lo = std::min(lo, s.y[j] - sp), hi = std::max(hi, s.y[j] + sp);
    }
  if (std::isfinite(p.y_min)) lo = std::max(lo, p.y_min);
  if (std::isfinite(p.y_max)) hi = std::min(hi, p.y_max);
  const double span = hi > lo ? hi - lo : std::max(std::abs(hi), 1.0) * 0.1, k = p.percent_y ? 100 : 1;
  const std::string y0 = std::isfinite(p.y_min) && std::isfinite(lo) ? fmt(k * (lo - span * (below ? 0.2 : 0.03))) : "*";
  const std::string y1 = std::isfinite(p.y_max) && std::isfinite(hi) ? fmt(k * (hi + span * (above ? 0.2 : 0.03))) : "*";
  return "set yrange [" + y0 + ":" + y1 + "]\n";
}

// An arrow at the top (or bottom) edge, in the series' colour, for each point off the scale, with
// its value beside it; labels of several points at one x are stacked.
std::string off_scale_arrows(const PlotSpec& p) {
  std::ostringstream g;
  std::vector<std::pair<double, bool>> seen;  // (x, above) of the arrows drawn so far
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    const int lt = s.style.color ? s.style.color : static_cast<int>(i % 8) + 1;
    for (size_t j = 0; j < s.x.size(); ++j) {
      if (!off_scale(p, s, j)) continue;
      const bool above = s.y[j] > p.y_max;
      const int level = static_cast<int>(std::count(seen.begin(), seen.end(), std::make_pair(s.x[j], above)));
      seen.emplace_back(s.x[j], above);
      const double tip = above ? 0.99 : 0.01, tail = above ? 0.88 : 0.12;
      const double label = above ? 0.84 - 0.05 * level : 0.16 + 0.05 * level;
      g << "set arrow from first " << fmt(s.x[j]) << ", graph " << fmt(tail) << " to first " << fmt(s.x[j]) << ", graph "
        << fmt(tip) << " head filled lw 2 lt " << lt << " front\n";
      g << "set label " << gnuplot_quote(y_text(p, s.y[j])) << " at first " << fmt(s.x[j]) << ", graph " << fmt(label)
        << " center tc lt " << lt << " front noenhanced\n";
    }
  }
  return g.str();
}

// A title with its seeds note (seeds_note) as a gnuplot string expression: on one line, or, when
// that would not fit the width of a plot, on several: the title, each bracketed note drawable_only
// added to it ("[no finite values: ...]", "[off the scale: ...]") and the seeds note, packed into
// lines of at most 100 characters where they fit (the line breaks are gnuplot's own "\n" between
// quoted strings, so nothing of the title is ever double-quoted).
std::string title_text(const std::string& title, const std::string& note) {
  if (title.size() + note.size() <= 100) return gnuplot_quote(title + note);
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = title.find(" [", start)) != std::string::npos; start = at + 1)
    parts.push_back(title.substr(start, at - start));
  parts.push_back(title.substr(start));
  if (!note.empty()) parts.push_back(note.substr(note.find_first_not_of(' ')));
  std::vector<std::string> lines{parts[0]};
  for (size_t i = 1; i < parts.size(); ++i) {
    if (lines.back().size() + 1 + parts[i].size() <= 100) lines.back() += " " + parts[i];
    else lines.push_back(parts[i]);
  }
  std::string out = gnuplot_quote(lines[0]);
  for (size_t i = 1; i < lines.size(); ++i) out += " . \"\\n\" . " + gnuplot_quote(lines[i]);
  return out;
}

// The gnuplot commands of one plot (decided by drawable_only), after `set terminal` / `set
// output`. Its data blocks are named $<prefix><series> (a distinct prefix per panel of a
// multiplot). A panel puts its key below the plot (a key beside it would leave the panel's plot
// too narrow) and undoes the settings a previous panel may have left.
std::string body(const PlotSpec& p, const std::string& prefix, bool panel, const std::string& note = "") {
  std::ostringstream g;
  if (panel)
    g << "unset logscale\nset format x '% h'\nset format y '% h'\nunset offsets\nset xtics autofreq\nset ytics autofreq\nset mxtics default\n"
         "set autoscale y\nset yrange [*:*]\nunset arrow\nunset label\n";
  for (int i = 0; i < 8; ++i) g << "set linetype " << i + 1 << " lc rgb '" << kColors[i] << "' ps 1.1\n";
  g << "set title " << title_text(p.title, note) << " noenhanced\n";
  g << "set xlabel " << gnuplot_quote(p.xlabel) << " noenhanced\nset ylabel " << gnuplot_quote(p.ylabel) << " noenhanced\n";
  g << "set grid\nset key below reverse Left noenhanced\n";  // the sample, then its name
  std::vector<double> xs;  // the drawn x values
  for (const Series& s : p.series)
    for (size_t j = 0; j < s.x.size(); ++j)
      if (drawable(p, s, j)) xs.push_back(s.x[j]);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  if (p.log_x) {
    g << "set logscale x " << p.log_x << "\nset format x '%g'\n";
    if (!xs.empty() && xs.size() <= 12) {  // ticks at the measured values only
      g << "set xtics (";
      for (size_t i = 0; i < xs.size(); ++i) g << (i ? ", " : "") << fmt(xs[i]);
      g << ")\nunset mxtics\n";
    }
  }
  if (p.log_y == LogY::on) {
    // The axis spans the drawn y values, a fifth of a factor beyond each end: not gnuplot's
    // autoscale, which extends a log axis to whole decades (0.001-10 for data in 0.06-0.8), and not
    // the bands, whose lower edge can reach zero or below (two seeds: t = 12.7) and is cut at the axis.
    double lo = INFINITY, hi = -INFINITY;
    for (const Series& s : p.series)
      for (size_t j = 0; j < s.x.size(); ++j)
        if (drawable(p, s, j)) lo = std::min(lo, s.y[j]), hi = std::max(hi, s.y[j]);
    g << "set logscale y\n";
    if (lo < INFINITY) {
      const double y0 = lo / 1.2, y1 = hi * 1.2;
      g << "set yrange [" << fmt(y0) << ":" << fmt(y1) << "]\n";
      // Up to 3 decades: ticks at 1, 2 and 5 times each power of ten (else gnuplot's, one a decade).
      if (y1 / y0 <= 1000) {
        std::string ticks;
        for (double d = std::pow(10, std::floor(std::log10(y0))); d <= y1; d *= 10)
          for (double m : {1.0, 2.0, 5.0})
            if (m * d >= y0 && m * d <= y1) ticks += (ticks.empty() ? "" : ", ") + fmt(m * d, 3);
        if (!ticks.empty()) g << "set ytics (" << ticks << ")\nset format y '%g'\n";
      } else {
        g << "set format y '%.0e'\n";  // gnuplot's one tick a decade, as 1e-06 (not 0.0000010)
      }
    }
  }
  if (p.percent_y) g << "set format y '%g%%'\nset yrange [0<*:*<100]\n";  // intervals cut at 0% and 100%
  if (p.log_y != LogY::on && (std::isfinite(p.y_min) || std::isfinite(p.y_max))) g << limited_yrange(p);
  g << off_scale_arrows(p);
  if (p.integer_x && !xs.empty() && xs.back() - xs.front() <= 20) g << "set xtics 1\nset format x '%.0f'\n";
  else if (p.integer_x) g << "set format x '%.0f'\n";
  // Error bars and markers at the first and last x must not be cut by the plot's border.
  // (xfix: the x range ends at the data, not at the next tic, so the offsets stay small margins.)
  g << "set autoscale xfix\nset offsets graph 0.03, graph 0.03, graph 0.02, graph 0.02\n";
  g << data_blocks(p, prefix) << plot_command(p, prefix) << "\n";
  return g.str();
}

}  // namespace

Style norm_style(const std::string& name) {
  const NormEntry& e = norm(name);
  return {.color = e.plot_color, .point = e.plot_point, .dash = 0};
}

void add_mean_point(Series& s, double x, const std::vector<double>& values) {
  const MeanInterval m = mean_interval(values, 0.95);
  s.x.push_back(x), s.y.push_back(m.mean), s.spread.push_back(m.n >= 2 ? m.half_width : NAN), s.n.push_back(m.n);
}

bool use_log_y(const PlotSpec& p) {
  if (p.log_y != LogY::if_wide) return p.log_y == LogY::on;
  double lo = INFINITY, hi = -INFINITY;
  for (const Series& s : p.series)
    for (size_t j = 0; j < s.x.size() && j < s.y.size(); ++j)
      if (std::isfinite(s.x[j]) && std::isfinite(s.y[j]) && (!p.log_x || s.x[j] > 0) && in_limits(p, s.y[j])) {
        if (s.y[j] <= 0) return false;  // a log axis could not draw it
        lo = std::min(lo, s.y[j]), hi = std::max(hi, s.y[j]);
      }
  return lo < INFINITY && hi > 10 * lo;
}

std::string seeds_note(const std::vector<PlotSpec>& plots) {
  int64_t lo = INT64_MAX, hi = 0;
  bool interval = false, bars = false;
  for (const PlotSpec& spec : plots) {
    const PlotSpec p = drawable_only(spec);
    for (const Series& s : p.series) {
      if (s.n.empty()) continue;
      for (size_t j = 0; j < s.x.size(); ++j) {
        if (!drawable(p, s, j) || j >= s.n.size()) continue;
        lo = std::min(lo, s.n[j]), hi = std::max(hi, s.n[j]);
        if (has_interval(s, j)) interval = true, bars = bars || p.error_bars;
      }
    }
  }
  if (hi == 0) return "";
  if (hi == 1) return " (1 seed)";
  std::string note = " (mean over " + (lo == hi ? std::to_string(hi) : std::to_string(lo) + "-" + std::to_string(hi)) + " seeds";
  if (interval) note += std::string("; ") + (bars ? "error bars" : "band") + " = 95% CI of the mean" + (lo < 2 ? " where 2+ seeds" : "");
  return note + ")";
}

std::string plot_script(const PlotSpec& spec) {
  const PlotSpec p = drawable_only(spec);
  return body(p, "d", false, seeds_note({spec}));
}

bool render_plot(const PlotSpec& spec, const fs::path& dir, const std::string& stem) {
  const PlotSpec p = drawable_only(spec);
  if (p.series.empty()) return false;
  const std::string note = seeds_note({spec});
  render_script(p.title + note, body(p, "d", false, note), 960, 600, dir, stem);
  return true;
}

bool render_panels(const std::string& title, const std::vector<PlotSpec>& panels, int cols, const fs::path& dir,
                   const std::string& stem) {
  std::vector<PlotSpec> drawn;
  for (const PlotSpec& p : panels)
    if (PlotSpec d = drawable_only(p); !d.series.empty()) drawn.push_back(std::move(d));
  if (drawn.empty() || cols < 1) return false;
  cols = std::min<int>(cols, static_cast<int>(drawn.size()));
  const int rows = (static_cast<int>(drawn.size()) + cols - 1) / cols;
  const std::string note = seeds_note(panels), full = title + note;
  std::string b = "set multiplot layout " + std::to_string(rows) + "," + std::to_string(cols) + " rowsfirst title " +
                  title_text(title, note) + " noenhanced\n";
  for (size_t i = 0; i < drawn.size(); ++i) b += body(drawn[i], "p" + std::to_string(i) + "_", true);
  b += "unset multiplot\n";
  render_script(full, b, 560 * cols, 420 * rows + 40, dir, stem);
  return true;
}

void render_confusion(const std::string& title, const std::vector<std::string>& classes,
                      const std::vector<std::vector<int64_t>>& counts, const fs::path& dir, const std::string& stem) {
  const size_t k = classes.size();
  // Data: "column row fraction count" per cell; row 0 (the first class) at the top.
  std::string b = "$cells << EOD\n";
  for (size_t r = 0; r < k; ++r) {
    int64_t total = 0;
    for (int64_t c : counts[r]) total += c;
    for (size_t c = 0; c < k; ++c)
      b += std::to_string(c) + " " + std::to_string(r) + " " +
           fmt(total > 0 ? static_cast<double>(counts[r][c]) / static_cast<double>(total) : 0.0, 6) + " " +
           std::to_string(counts[r][c]) + "\n";
  }
  b += "EOD\n";
  std::string xt, yt;
  for (size_t i = 0; i < k; ++i) {
    xt += (i ? ", " : "") + gnuplot_quote(classes[i]) + " " + std::to_string(i);
    yt += (i ? ", " : "") + gnuplot_quote(classes[i]) + " " + std::to_string(i);
  }
  b += "set title " + gnuplot_quote(title) + " noenhanced\n";
  b += "set xlabel 'predicted class'\nset ylabel 'true class'\n";
  b += "set xtics (" + xt + ") rotate by -35 noenhanced\nset ytics (" + yt + ") noenhanced\n";
  b += "set xrange [-0.5:" + std::to_string(k) + "-0.5]\nset yrange [" + std::to_string(k) + "-0.5:-0.5]\n";
  b += "set cbrange [0:1]\nset cblabel 'fraction of the true class'\n";
  b += "set palette defined (0 '#ffffff', 1 '#6baed6', 2 '#08306b')\nset size ratio -1\nunset key\n";
  b += "plot $cells using 1:2:3 with image, $cells using 1:2:(sprintf('%d', $4)):($3 > 0.5 ? 0xffffff : 0x000000) "
       "with labels tc rgb variable font ',9'\n";
  const int side = 360 + 48 * static_cast<int>(k);
  render_script(title, b, side + 160, side, dir, stem);
}

}  // namespace normlab::experiments::report
