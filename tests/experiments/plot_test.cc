// What the plots draw, from the gnuplot script of small specs and from the panel functions on
// made-up runs: a norm's series has the registry's colour and marker wherever it sits; bands and
// error bars are the 95% CI of the mean over seeds and only drawn with 2+ seeds, and the title says
// what is drawn; the y axis is logarithmic only for data spanning more than a decade; markers sit
// at measured points, and a log x axis ticks at them only; a point beyond the y limits is an arrow
// off the scale with its value; panels are named by the model's layers.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "experiments/registry/layers.h"
#include "experiments/report/layer_stats.h"
#include "experiments/report/plot.h"
#include "experiments/run/trainer.h"
#include "tests/support/files.h"

using namespace normlab::experiments;
using namespace normlab::experiments::report;

namespace {

bool contains(const std::string& s, const std::string& needle) { return s.find(needle) != std::string::npos; }

// The plot command line of a script: from "plot " to the end of that line.
std::string plot_line(const std::string& script) {
  const size_t at = script.rfind("\nplot ");
  return script.substr(at + 1, script.find('\n', at + 1) - at - 1);
}

// The style text plot.cc writes for a series drawn with `s`.
std::string style_text(const Style& s) { return "lt " + std::to_string(s.color) + " pt " + std::to_string(s.point); }

// A series of norm `n`, styled as the call sites style it, over x = 1, 2, 3.
Series norm_series(const std::string& n) {
  Series s{norm(n).display, {1, 2, 3}, {0.5, 0.6, 0.7}};
  s.style = norm_style(n);
  return s;
}

// A run of `norm` on `model` with gradient norms of `params` and activation statistics of
// `layers` hidden layers at steps 0..steps-1.
RunResult made_up_run(const ModelSpec& model, const std::string& n, const std::vector<std::string>& params, int layers,
                      int steps = 3, double scale = 1) {
  RunResult r;
  r.config.model = model;
  r.config.model.norm = n;
  for (int step = 0; step < steps; ++step) {
    for (const std::string& p : params) r.grad_norms.push_back({step, p, scale * (1 + step)});
    for (int l = 0; l < layers; ++l)
      for (const char* where : {"pre", "post"}) r.activations.push_back({step, l, where, 0.1 * step, 1 + 0.1 * step});
  }
  return r;
}

ModelSpec cnn() {
  ModelSpec m;
  m.arch = "cnn";
  m.inputs = 784, m.outputs = 10, m.image = {1, 28, 28};  // the default layer string: two conv layers
  return m;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(plots)

BOOST_AUTO_TEST_CASE(every_builtin_norm_has_its_own_colour_and_marker) {
  std::set<std::pair<int, int>> seen;
  std::set<int> colours;
  for (const NormEntry& e : norms()) {
    BOOST_TEST_CONTEXT(e.name) {
      BOOST_TEST(e.plot_color >= 1);
      BOOST_TEST(e.plot_color <= 8);
      BOOST_TEST(e.plot_point >= 1);
      BOOST_TEST(seen.insert({e.plot_color, e.plot_point}).second);  // no two norms look alike
      if (e.name != "none" && e.in_one_process.empty()) BOOST_TEST(colours.insert(e.plot_color).second);
    }
  }
  BOOST_TEST(norm_style("none").color == kBlack);
  BOOST_TEST(norm_style("batch").color != norm_style("layer").color);
}

BOOST_AUTO_TEST_CASE(a_norm_added_without_a_style_gets_one_no_norm_has) {
  register_norm({.name = "plot_test_norm", .make = [](const LayerSpec&) { return nullptr; }});
  const Style s = norm_style("plot_test_norm");
  BOOST_TEST(s.color >= 1);
  BOOST_TEST(s.point >= 1);
  for (const NormEntry& e : norms())
    if (e.name != "plot_test_norm") BOOST_TEST(!(e.plot_color == s.color && e.plot_point == s.point), e.name);
}

BOOST_AUTO_TEST_CASE(a_norm_s_series_has_the_registry_style_whatever_its_position) {
  for (const auto& order : {std::vector<std::string>{"batch", "layer"}, std::vector<std::string>{"layer", "group", "batch"}}) {
    PlotSpec p{"t", "x", "y"};
    for (const auto& n : order) p.series.push_back(norm_series(n));
    const std::string cmd = plot_line(plot_script(p));
    for (const auto& n : order)
      BOOST_TEST(contains(cmd, style_text(norm_style(n)) + " title '" + norm(n).display + "'"), cmd);
  }
}

BOOST_AUTO_TEST_CASE(panels_of_a_norm_have_its_style_whatever_the_order_of_the_norms) {
  ModelSpec mlp;
  mlp.inputs = 4, mlp.outputs = 2, mlp.hidden = {8};
  for (const auto& order : {std::vector<std::string>{"none", "batch", "layer"}, std::vector<std::string>{"layer", "batch", "none"}}) {
    std::vector<RunResult> runs;
    for (const auto& n : order) runs.push_back(made_up_run(mlp, n, {"0.weight", "3.weight"}, 1));
    for (const PlotSpec& p : grad_norm_panels(runs, order))
      for (const Series& s : p.series) {
        const std::string n = s.name == "no norm" ? "none" : s.name == "BatchNorm" ? "batch" : "layer";
        BOOST_TEST(s.style.color == norm_style(n).color, s.name);
        BOOST_TEST(s.style.point == norm_style(n).point, s.name);
      }
    for (const PlotSpec& p : activation_panels(runs, order))
      for (const Series& s : p.series) {
        const std::string n = s.name.rfind("no norm", 0) == 0 ? "none" : s.name.rfind("BatchNorm", 0) == 0 ? "batch" : "layer";
        BOOST_TEST(s.style.color == norm_style(n).color, s.name);
        BOOST_TEST(s.style.point == norm_style(n).point, s.name);
        BOOST_TEST(s.style.dash == (contains(s.name, "before the norm") ? 2 : 0), s.name);  // dashed before
      }
  }
}

BOOST_AUTO_TEST_CASE(one_seed_draws_no_interval_and_the_title_says_1_seed) {
  PlotSpec p{"Accuracy", "batch size", "accuracy"};
  p.log_x = 2;
  Series s{"BatchNorm"};
  for (double x : {2.0, 8.0, 64.0}) add_mean_point(s, x, {0.5 + x / 1000});
  BOOST_TEST(s.n == std::vector<int64_t>({1, 1, 1}));
  BOOST_TEST(std::isnan(s.spread[0]));
  p.series = {s};
  for (const bool bars : {false, true}) {
    p.error_bars = bars;
    const std::string script = plot_script(p);
    BOOST_TEST(!contains(script, "filledcurves"));
    BOOST_TEST(!contains(script, "errorbars"));
    BOOST_TEST(contains(script, "set title 'Accuracy (1 seed)'"), script);
    BOOST_TEST(!contains(script, "CI"));
    BOOST_TEST(!contains(script, "std"));
  }
}

BOOST_AUTO_TEST_CASE(with_seeds_the_interval_is_the_95_percent_ci_of_the_mean) {
  Series s{"BatchNorm"};
  add_mean_point(s, 1, {1, 2, 3});  // s = 1, n = 3: t(0.975, 2) / sqrt(3) = 4.303 / 1.732
  BOOST_TEST(s.y[0] == 2.0);
  BOOST_TEST(s.n[0] == 3);
  BOOST_TEST(s.spread[0] == 4.3027 / std::sqrt(3.0), boost::test_tools::tolerance(1e-4));
  add_mean_point(s, 2, {2, 4, 6});
  PlotSpec p{"Loss", "step", "loss"};
  p.series = {s};
  std::string script = plot_script(p);
  BOOST_TEST(contains(script, "set title 'Loss (mean over 3 seeds; band = 95% CI of the mean)'"), script);
  BOOST_TEST(contains(script, "filledcurves"));
  p.error_bars = true;
  script = plot_script(p);
  BOOST_TEST(contains(script, "(mean over 3 seeds; error bars = 95% CI of the mean)"), script);
  BOOST_TEST(contains(script, "yerrorbars"));
  BOOST_TEST(!contains(script, "filledcurves"));
  // A point with one seed (two diverged) has no bar; the title says the seeds differ.
  add_mean_point(p.series[0], 3, {5, NAN, NAN});
  script = plot_script(p);
  BOOST_TEST(contains(script, "(mean over 1-3 seeds; error bars = 95% CI of the mean where 2+ seeds)"), script);
  BOOST_TEST(contains(script, "\n3 5 5 5 NaN\n"), script);  // x y lo hi spread: no bar at x = 3
}

BOOST_AUTO_TEST_CASE(a_long_title_puts_the_seeds_note_on_a_second_line) {
  const std::string title(80, 't');
  PlotSpec p{title, "x", "y"};
  Series s{"a"};
  add_mean_point(s, 1, {1, 2});
  p.series = {s};
  BOOST_TEST(contains(plot_script(p), "set title '" + title + "' . \"\\n\" . '(mean over 2 seeds; band = 95% CI of the mean)'"),
             plot_script(p));
}

// A point beyond the y limits (a diverged run among converged ones) is not on its line: an arrow
// at that edge, in the series' colour, with the value, and the title names it on a line of its own.
BOOST_AUTO_TEST_CASE(a_point_beyond_the_y_limits_is_an_arrow_off_the_scale) {
  PlotSpec p{"Final validation loss vs batch size (same training tokens at every batch)", "batch", "bits"};
  p.y_max = 4.87;
  p.log_x = 2;
  Series bn{"BatchNorm", {1, 2, 4}, {169.63, 2.8, 2.71}};
  bn.style = {kBlue, 7, 0};
  Series gone{"broken", {1}, {500.0}};  // all of it off the scale: no line, only its arrow
  gone.style = {kGreen, 9, 0};
  p.series = {bn, Series{"LayerNorm", {1, 2, 4}, {2.69, 2.65, 2.66}}, gone};
  const std::string script = plot_script(p);
  BOOST_TEST(!contains(script, "169.63 "), script);  // not in any data block
  BOOST_TEST(contains(script, "\n2 2.8 2.8 2.8 NaN\n"), script);  // the points within the limits are
  BOOST_TEST(contains(script, "set arrow from first 1, graph 0.88 to first 1, graph 0.99 head filled lw 2 lt 1 front"),
             script);
  BOOST_TEST(contains(script, "set label '169.6' at first 1, graph 0.84 center tc lt 1"), script);
  BOOST_TEST(contains(script, "set label '500' at first 1, graph 0.79 center tc lt 3"), script);  // stacked below
  // The axis spans the drawn points, with room above for the arrows: 2.65..2.8, plus a fifth.
  BOOST_TEST(contains(script, "set yrange [*:2.83]"), script);
  BOOST_TEST(contains(script, "' . \"\\n\" . '[off the scale: BatchNorm at 1: 169.6; broken at 1: 500]'"), script);
  BOOST_TEST(!contains(plot_line(script), "'broken'"), plot_line(script));
  BOOST_TEST(contains(plot_line(script), "'LayerNorm'"), plot_line(script));
  // Below the lower limit: the arrow points down from the bottom edge.
  PlotSpec gap{"gap", "batch", "bits"};
  gap.y_min = -4.87, gap.y_max = 4.87;
  gap.series = {Series{"BatchNorm", {1, 2}, {-168.6, -0.16}}, Series{"zero", {1, 2}, {0, 0}}};
  const std::string g = plot_script(gap);
  BOOST_TEST(contains(g, "set arrow from first 1, graph 0.12 to first 1, graph 0.01"), g);
  BOOST_TEST(contains(g, "set label '-168.6' at first 1, graph 0.16"), g);
  BOOST_TEST(contains(g, "set yrange [-0.192:0.0048]"), g);
  // On a percent axis the value off the scale is told as the axis shows it.
  PlotSpec acc{"acc", "batch", "accuracy"};
  acc.percent_y = true, acc.y_min = 0.5;
  acc.series = {Series{"BatchNorm", {2, 8}, {0.2312, 0.81}}, Series{"LayerNorm", {2, 8}, {0.83, 0.84}}};
  const std::string a = plot_script(acc);
  BOOST_TEST(contains(a, "[off the scale: BatchNorm at 2: 23.12%]"), a);
  BOOST_TEST(contains(a, "set label '23.12%' at first 2, graph 0.16"), a);
  // No limit reached: the axis is the data's, and nothing is named.
  gap.series[0].y = {-0.2, -0.16};
  BOOST_TEST(!contains(plot_script(gap), "off the scale"));
  BOOST_TEST(!contains(plot_script(gap), "set arrow"));
}

BOOST_AUTO_TEST_CASE(a_plot_without_seeds_says_nothing_of_them) {
  PlotSpec p{"Loss per epoch", "epoch", "loss"};
  p.series = {Series{"train", {1, 2}, {0.5, 0.4}}};
  const std::string script = plot_script(p);
  BOOST_TEST(contains(script, "set title 'Loss per epoch' "));
  BOOST_TEST(!contains(script, "filledcurves"));
}

BOOST_AUTO_TEST_CASE(log_y_only_for_data_spanning_more_than_a_decade) {
  PlotSpec p{"t", "step", "loss"};
  p.log_y = LogY::if_wide;
  p.series = {Series{"a", {1, 2, 3}, {0.2, 1.0, 2.0}}};  // exactly one decade: linear
  BOOST_TEST(!use_log_y(p));
  BOOST_TEST(!contains(plot_script(p), "set logscale y"));
  p.series[0].y = {0.15, 1.0, 2.0};  // more than a decade
  BOOST_TEST(use_log_y(p));
  BOOST_TEST(contains(plot_script(p), "set logscale y"));
  // The log axis spans the data (a fifth beyond each end), with ticks at 1, 2, 5 per decade, not
  // gnuplot's whole decades (0.1-10 here).
  BOOST_TEST(contains(plot_script(p), "set yrange [0.125:2.4]"), plot_script(p));
  BOOST_TEST(contains(plot_script(p), "set ytics (0.2, 0.5, 1, 2)"), plot_script(p));
  p.series[0].y = {0.0, 1.0, 20.0};  // a value a log axis cannot draw
  BOOST_TEST(!use_log_y(p));
  p.series[0].y = {NAN, 1.0, 5.0};  // the non-finite point is not drawn, so not counted
  BOOST_TEST(!use_log_y(p));
  p.log_y = LogY::off;
  p.series[0].y = {0.001, 1.0, 1000.0};
  BOOST_TEST(!use_log_y(p));
}

// Beyond 3 decades gnuplot keeps one tick a decade, labelled 1e-06 rather than 0.0000010.
BOOST_AUTO_TEST_CASE(a_log_axis_over_more_than_3_decades_labels_its_ticks_as_powers) {
  PlotSpec p{"t", "step", "gradient"};
  p.log_y = LogY::if_wide;
  p.series = {Series{"a", {1, 2, 3}, {1e-7, 1e-4, 0.1}}};
  BOOST_TEST(contains(plot_script(p), "set format y '%.0e'"), plot_script(p));
  BOOST_TEST(!contains(plot_script(p), "set ytics ("), plot_script(p));
  p.series[0].y = {0.15, 1.0, 2.0};  // within 3 decades: the 1-2-5 ticks, plain numbers
  BOOST_TEST(!contains(plot_script(p), "set format y '%.0e'"), plot_script(p));
}

BOOST_AUTO_TEST_CASE(markers_at_measured_points_and_sparse_on_dense_curves) {
  PlotSpec p{"t", "batch size", "accuracy"};
  p.log_x = 2;
  p.series = {Series{"a", {2, 8, 64}, {0.5, 0.6, 0.7}}};
  std::string script = plot_script(p);
  BOOST_TEST(contains(script, "set xtics (2, 8, 64)"), script);  // no tick at unmeasured 4, 16, 32
  BOOST_TEST(contains(plot_line(script), "with linespoints"));
  BOOST_TEST(!contains(plot_line(script), " pi "));
  PlotSpec d{"t", "step", "loss"};
  d.dense = true;
  Series s{"a"};
  for (int i = 0; i < 80; ++i) s.x.push_back(i), s.y.push_back(1.0 / (1 + i));
  d.series = {s};
  script = plot_script(d);
  BOOST_TEST(contains(plot_line(script), "with linespoints lw 2 lt 1 pt 7 pi 10"), plot_line(script));
  BOOST_TEST(!contains(script, "set xtics ("));
}

BOOST_AUTO_TEST_CASE(cnn_panels_are_named_by_the_model_s_layers) {
  std::vector<RunResult> runs;
  for (const char* n : {"batch", "layer"}) runs.push_back(made_up_run(cnn(), n, {"1.weight", "5.weight", "10.weight"}, 2));
  const auto g = grad_norm_panels(runs, {"batch", "layer"});
  BOOST_TEST_REQUIRE(g.size() == 3u);
  BOOST_TEST(g[0].title == "Gradient norm: Conv2d 1 weight");
  BOOST_TEST(g[1].title == "Gradient norm: Conv2d 2 weight");
  BOOST_TEST(g[2].title == "Gradient norm: output Linear weight");
  const auto a = activation_panels(runs, {"batch", "layer"});
  BOOST_TEST_REQUIRE(a.size() == 4u);
  BOOST_TEST(a[0].title == "Conv2d 1: mean of the activations");
  BOOST_TEST(a[3].title == "Conv2d 2: std of the activations");
  // An MLP: Linear layers counted, the classifier last.
  ModelSpec mlp;
  mlp.inputs = 4, mlp.outputs = 2, mlp.hidden = {8, 8};
  const auto m = grad_norm_panels({made_up_run(mlp, "none", {"0.weight", "2.weight", "4.weight"}, 2)}, {"none"});
  BOOST_TEST_REQUIRE(m.size() == 3u);
  BOOST_TEST(m[0].title == "Gradient norm: Linear 1 weight");
  BOOST_TEST(m[1].title == "Gradient norm: Linear 2 weight");
  BOOST_TEST(m[2].title == "Gradient norm: output Linear weight");
}

BOOST_AUTO_TEST_CASE(panel_axes_follow_the_decade_rule) {
  std::vector<RunResult> runs{made_up_run(cnn(), "batch", {"1.weight"}, 1, 3, 1)};  // grad norms 1-3
  BOOST_TEST(!use_log_y(grad_norm_panels(runs, {"batch"})[0]));
  runs = {made_up_run(cnn(), "batch", {"1.weight"}, 1, 30, 1)};  // 1-30
  BOOST_TEST(use_log_y(grad_norm_panels(runs, {"batch"})[0]));
  for (const PlotSpec& p : activation_panels(runs, {"batch"})) BOOST_TEST(!use_log_y(p), p.title);  // std 1-3.9
}

BOOST_AUTO_TEST_CASE(the_gp_file_beside_the_png_has_the_styles) {
  if (!gnuplot_available()) return;
  normlab::test::TempDir t;
  PlotSpec p{"t", "x", "y"};
  p.series = {norm_series("layer"), norm_series("batch")};
  BOOST_TEST(render_plot(p, t.path(), "styles"));
  const std::string gp = normlab::test::read_file(t.path() / "styles.gp");
  BOOST_TEST(contains(gp, style_text(norm_style("batch")) + " title 'BatchNorm'"));
  BOOST_TEST(contains(gp, style_text(norm_style("layer")) + " title 'LayerNorm'"));
}

BOOST_AUTO_TEST_SUITE_END()
