// Plots rendered with gnuplot: a script with inline data, run once per output format.
#include "experiments/plot.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "autograd/error.h"
#include "experiments/output.h"

namespace normlab::experiments {

namespace fs = std::filesystem;

bool gnuplot_available() { return std::system("command -v gnuplot >/dev/null 2>&1") == 0; }

namespace {

std::string quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

// The gnuplot commands of one plot, after `set terminal` / `set output`. Its data blocks are named
// $<prefix><series> (a distinct prefix per panel of a multiplot). A panel puts its key below the
// plot (a key beside it would leave the panel's plot too narrow) and undoes the settings a
// previous panel may have left.
std::string body(const PlotSpec& p, const std::string& prefix, bool panel) {
  std::ostringstream g;
  if (panel) g << "unset logscale\nset format x '% h'\nset format y '% h'\n";
  g << "set title " << quote(p.title) << " noenhanced\n";
  g << "set xlabel " << quote(p.xlabel) << " noenhanced\nset ylabel " << quote(p.ylabel) << " noenhanced\n";
  g << "set grid\n" << (panel ? "set key below noenhanced\n" : "set key outside right top noenhanced\n");
  if (p.log_x) g << "set logscale x " << p.log_x << "\nset format x '%g'\n";
  if (p.log_y) g << "set logscale y\n";
  // Inline data blocks, one per series: x y lo hi.
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    g << "$" << prefix << i << " << EOD\n";
    for (size_t j = 0; j < s.x.size(); ++j) {
      if (!std::isfinite(s.y[j]) || (p.log_y && s.y[j] <= 0)) continue;
      const double sp = j < s.spread.size() && std::isfinite(s.spread[j]) ? s.spread[j] : 0;
      g << fmt(s.x[j]) << ' ' << fmt(s.y[j]) << ' ' << fmt(s.y[j] - sp) << ' ' << fmt(s.y[j] + sp) << ' ' << fmt(sp) << '\n';
    }
    g << "EOD\n";
  }
  g << "plot ";
  bool first = true;
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    const int lt = s.color ? s.color : static_cast<int>(i) + 1;
    const std::string dt = s.dash ? " dt " + std::to_string(s.dash) : "";
    const bool spread = !s.spread.empty();
    if (spread && !p.error_bars) {
      g << (first ? "" : ", ") << "$" << prefix << i
        << " using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lt " << lt << " notitle";
      first = false;
    }
    g << (first ? "" : ", ") << "$" << prefix << i;
    if (spread && p.error_bars) g << " using 1:2:5 with yerrorlines lt " << lt << dt;
    else g << " using 1:2 with lines lw 2 lt " << lt << dt;
    g << " title " << quote(s.name);
    first = false;
  }
  g << "\n";
  return g.str();
}

// Runs the gnuplot script `b` once per format (PNG and SVG, width x height pixels), each image
// written under a temporary name and renamed; the script is kept as <dir>/<stem>.gp.
void render(const std::string& title, const std::string& b, int width, int height, const fs::path& dir,
            const std::string& stem) {
  write_file_atomic(dir / (stem + ".gp"), "# " + title + " (render: gnuplot -e \"set terminal pngcairo; set output 'x.png'\" " + stem + ".gp)\n" + b);
  const std::string size = " size " + std::to_string(width) + "," + std::to_string(height);
  struct Format { const char* ext; std::string terminal; };
  for (const Format& f : {Format{"png", "pngcairo" + size + " font 'sans,11'"}, Format{"svg", "svg" + size + " dynamic font 'sans,11'"}}) {
    const fs::path out = dir / (stem + "." + f.ext);
    const fs::path tmp = out.string() + ".tmp";
    const fs::path script = dir / (stem + "." + f.ext + ".gp.tmp");
    write_file_atomic(script, "set terminal " + f.terminal + "\nset output " + quote(tmp.string()) + "\n" + b + "unset output\n");
    const std::string cmd = "gnuplot " + quote(script.string()) + " 2>" + quote(script.string() + ".err");
    const int rc = std::system(cmd.c_str());
    std::error_code ec;
    if (rc != 0 || !fs::exists(tmp)) {
      std::string err;
      if (FILE* e = std::fopen((script.string() + ".err").c_str(), "r")) {
        char buf[512];
        size_t n = std::fread(buf, 1, sizeof buf - 1, e);
        buf[n] = 0;
        err = buf;
        std::fclose(e);
      }
      fs::remove(tmp, ec), fs::remove(script, ec), fs::remove(script.string() + ".err", ec);
      throw Error("gnuplot failed to render " + out.string() + (err.empty() ? "" : ": " + err));
    }
    fs::rename(tmp, out, ec);
    fs::remove(script, ec), fs::remove(script.string() + ".err", ec);
    if (ec) throw Error("cannot write " + out.string() + ": " + ec.message());
  }
}

}  // namespace

void render_plot(const PlotSpec& spec, const fs::path& dir, const std::string& stem) {
  render(spec.title, body(spec, "d", false), 960, 600, dir, stem);
}

void render_panels(const std::string& title, const std::vector<PlotSpec>& panels, int cols, const fs::path& dir,
                   const std::string& stem) {
  if (panels.empty() || cols < 1) throw Error("render_panels: no panels for " + stem);
  const int rows = (static_cast<int>(panels.size()) + cols - 1) / cols;
  std::string b = "set multiplot layout " + std::to_string(rows) + "," + std::to_string(cols) + " rowsfirst title " +
                  quote(title) + " noenhanced\n";
  for (size_t i = 0; i < panels.size(); ++i) b += body(panels[i], "p" + std::to_string(i) + "_", true);
  b += "unset multiplot\n";
  render(title, b, 560 * cols, 420 * rows + 40, dir, stem);
}

}  // namespace normlab::experiments
