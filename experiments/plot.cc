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

// The gnuplot commands after `set terminal` / `set output`.
std::string body(const PlotSpec& p) {
  std::ostringstream g;
  g << "set title " << quote(p.title) << " noenhanced\n";
  g << "set xlabel " << quote(p.xlabel) << " noenhanced\nset ylabel " << quote(p.ylabel) << " noenhanced\n";
  g << "set grid\nset key outside right top noenhanced\n";
  if (p.log_x) g << "set logscale x " << p.log_x << "\nset format x '%g'\n";
  if (p.log_y) g << "set logscale y\n";
  // Inline data blocks, one per series: x y lo hi.
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    g << "$d" << i << " << EOD\n";
    for (size_t j = 0; j < s.x.size(); ++j) {
      if (!std::isfinite(s.y[j])) continue;
      const double sp = j < s.spread.size() && std::isfinite(s.spread[j]) ? s.spread[j] : 0;
      g << fmt(s.x[j]) << ' ' << fmt(s.y[j]) << ' ' << fmt(s.y[j] - sp) << ' ' << fmt(s.y[j] + sp) << ' ' << fmt(sp) << '\n';
    }
    g << "EOD\n";
  }
  g << "plot ";
  bool first = true;
  for (size_t i = 0; i < p.series.size(); ++i) {
    const Series& s = p.series[i];
    const int lt = static_cast<int>(i) + 1;
    const bool spread = !s.spread.empty();
    if (spread && !p.error_bars) {
      g << (first ? "" : ", ") << "$d" << i << " using 1:3:4 with filledcurves fs transparent solid 0.2 noborder lt " << lt << " notitle";
      first = false;
    }
    g << (first ? "" : ", ") << "$d" << i;
    if (spread && p.error_bars) g << " using 1:2:5 with yerrorlines lt " << lt;
    else g << " using 1:2 with lines lw 2 lt " << lt;
    g << " title " << quote(s.name);
    first = false;
  }
  g << "\n";
  return g.str();
}

}  // namespace

void render_plot(const PlotSpec& spec, const fs::path& dir, const std::string& stem) {
  const std::string b = body(spec);
  write_file_atomic(dir / (stem + ".gp"), "# " + spec.title + " (render: gnuplot -e \"set terminal pngcairo; set output 'x.png'\" " + stem + ".gp)\n" + b);
  struct Format { const char* ext; const char* terminal; };
  for (const Format f : {Format{"png", "pngcairo size 960,600 font 'sans,11'"}, Format{"svg", "svg size 960,600 dynamic font 'sans,11'"}}) {
    const fs::path out = dir / (stem + "." + f.ext);
    const fs::path tmp = out.string() + ".tmp";
    const fs::path script = dir / (stem + "." + f.ext + ".gp.tmp");
    write_file_atomic(script, std::string("set terminal ") + f.terminal + "\nset output " + quote(tmp.string()) + "\n" + b + "unset output\n");
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

}  // namespace normlab::experiments
