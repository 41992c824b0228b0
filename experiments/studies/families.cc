// The four families side by side (families.h): two tables and a reading, all computed from the
// families' batch-size sweeps with the report's claims (Welch's t-test over seeds, 95%).
#include "experiments/studies/families.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "experiments/report/report.h"
#include "experiments/report/stats.h"
#include "experiments/report/why.h"
#include "experiments/support/output.h"

namespace normlab::experiments::studies {

using namespace report;

namespace {

using Points = std::vector<std::pair<double, std::vector<double>>>;  // (batch, the seeds' values)

// The values with "higher is better": negated for a metric where lower is better.
std::vector<double> oriented(const FamilySweep& f, std::vector<double> v) {
  if (f.lower_is_better)
    for (double& x : v) x = -x;
  return v;
}

// The best norm at batch b with its cell, and the norms tied with it: "LayerNorm (83.10 ± 1.02),
// tied: BatchNorm"; "-" when no norm has a finite value there.
std::string tied_cell(const FamilySweep& f, double b) {
  std::vector<std::string> names;
  std::vector<std::vector<double>> values, raw;
  for (const auto& nc : f.sweep->sweep_accuracy)
    for (const auto& bv : nc.second)
      if (bv.first == b) names.push_back(f.display(nc.first)), values.push_back(oriented(f, bv.second)), raw.push_back(bv.second);
  const std::vector<size_t> tied = tied_with_best(values);
  if (tied.empty()) return "-";
  std::vector<std::string> tied_names;
  for (size_t i = 1; i < tied.size(); ++i) tied_names.push_back(names[tied[i]]);
  return names[tied.front()] + " (" + interval_cell(raw[tied.front()], f.units) + ")" +
         (tied_names.empty() ? "" : ", tied: " + join_names(tied_names));
}

// A norm's loss at batch b against its own best batch size (the best mean).
struct Loss {
  std::string best = "-", at = "-", diff = "-";  // cells: "83.10 ± 1.02 (32)", "61.86 ± 22.17", "21.24 [...]"
  bool swept = false, beyond = false;             // b swept; the loss beyond the seeds' spread
};
Loss loss_at(const FamilySweep& f, const Points& p, double b) {
  Loss l;
  size_t best = p.size();
  for (size_t i = 0; i < p.size(); ++i) {
    const double m = mean_of(oriented(f, p[i].second));
    if (std::isfinite(m) && (best == p.size() || m > mean_of(oriented(f, p[best].second)))) best = i;
  }
  for (const auto& bv : p)
    if (bv.first == b) {
      l.swept = true;
      l.at = interval_cell(bv.second, f.units);
      if (best == p.size()) break;
      l.best = interval_cell(p[best].second, f.units) + " (" + fmt(p[best].first) + ")";
      if (p[best].first == b) l.diff = "0 (its best)";
      else if (!std::isfinite(mean_of(bv.second))) l.diff = "diverged";
      else {
        // worse = positive: points lost (best - at), or bits per character gained (at - best)
        l.diff = f.lower_is_better ? difference_cell(bv.second, p[best].second, f.units)
                                   : difference_cell(p[best].second, bv.second, f.units);
        l.beyond = distinguishable(bv.second, p[best].second);
      }
    }
  return l;
}

// A probed family's verdicts of one claim against no norm, per norm: "BatchNorm reversed; LayerNorm
// not distinguishable" (report/why.h: verdict; lower_holds: the claim is a lower value); "-" for a
// family without probes.
std::string claim_cell(const FamilySweep& f, const std::string& key, bool lower_holds) {
  if (!f.why || f.why->why.empty()) return "-";
  const auto none = f.why->why.find("none");
  if (none == f.why->why.end() || !none->second.count(key)) return "no `none` to test against";
  std::vector<std::string> parts;
  for (const auto& [n, values] : f.why->why) {
    const auto v = values.find(key);
    if (n == "none" || v == values.end()) continue;
    parts.push_back(f.display(n) + " " + verdict(v->second, none->second.at(key), lower_holds));
  }
  std::string cell;
  for (const std::string& x : parts) cell += (cell.empty() ? "" : "; ") + x;
  return parts.empty() ? "-" : cell;
}

// The first table: per family its metric, batch sizes, the norms tied for the best at the largest
// and the smallest batch, and (where its comparison was probed) the verdicts of "reduces internal
// covariate shift" and "a smoother landscape" against no norm.
std::string best_table(const std::vector<FamilySweep>& fs) {
  std::ostringstream md;
  md << "| family | metric | batch sizes | best at the largest batch | best at the smallest batch | \"reduces "
        "internal covariate shift\" (‖G − G′‖, against no norm) | \"a smoother landscape\" (β-smoothness, against no "
        "norm) |\n|---|---|---|---|---|---|---|\n";
  for (const FamilySweep& f : fs) {
    const std::vector<double> x = batches_of(*f.sweep);
    std::string list;
    for (double b : x) list += (list.empty() ? "" : ", ") + fmt(b);
    md << "| " << f.family << " | " << f.metric << " | " << list << " | " << fmt(x.back()) << ": "
       << tied_cell(f, x.back()) << " | " << fmt(x.front()) << ": " << tied_cell(f, x.front()) << " | "
       << claim_cell(f, "ics", true) << " | " << claim_cell(f, "beta_smoothness", true) << " |\n";
  }
  return md.str();
}

// The second table: per family and norm, its best batch size, its value at the smallest batch and
// the loss there.
std::string loss_table(const std::vector<FamilySweep>& fs) {
  std::ostringstream md;
  md << "| family | norm | its best (batch) | at the smallest batch | loss there [95% CI] | beyond the seeds' spread |\n"
        "|---|---|---|---|---|---|\n";
  for (const FamilySweep& f : fs) {
    const double small = batches_of(*f.sweep).front();
    for (const auto& nc : f.sweep->sweep_accuracy) {
      const Loss l = loss_at(f, nc.second, small);
      if (!l.swept) continue;
      const bool tested = l.diff != "-" && l.diff != "diverged" && l.diff != "0 (its best)";
      md << "| " << f.family << " | " << f.display(nc.first) << " | " << l.best << " | " << fmt(small) << ": " << l.at
         << " | " << l.diff << " | " << (tested ? (l.beyond ? "yes" : "no") : "-") << " |\n";
    }
  }
  return md.str();
}

// The values of `norm` at batch b in f (nullptr: not swept).
const std::vector<double>* values_at(const FamilySweep& f, const std::string& norm, double b) {
  const auto it = f.sweep->sweep_accuracy.find(norm);
  if (it == f.sweep->sweep_accuracy.end()) return nullptr;
  for (const auto& bv : it->second)
    if (bv.first == b) return &bv.second;
  return nullptr;
}

// One family's sentences: the best at its largest batch, whether LayerNorm is among them, and
// BatchNorm against LayerNorm at its smallest batch, with what that says of the folklore.
std::string family_reading(const FamilySweep& f) {
  const std::vector<double> x = batches_of(*f.sweep);
  const double small = x.front(), large = x.back();
  std::string md = "**" + f.family + "** (" + f.metric + "): the best at batch " + fmt(large) + " is " +
                   tied_cell(f, large) + "; at batch " + fmt(small) + ", " + tied_cell(f, small) + ".";
  const std::vector<double>* bn = values_at(f, "batch", small);
  const std::vector<double>* ln = values_at(f, "layer", small);
  if (!bn || !ln) return md + " (BatchNorm and LayerNorm were not both swept at batch " + fmt(small) + ".)";
  const double worse = mean_of(oriented(f, *ln)) - mean_of(oriented(f, *bn));  // > 0: BatchNorm worse
  md += " " + capitalized(f.display("batch")) + " minus " + f.display("layer") + " at batch " + fmt(small) + ": " +
        difference_text(*bn, *ln, f.units) + ", so ";
  if (!distinguishable(*bn, *ln))
    md += "the folklore's small-batch failure of BatchNorm does not show here: the two are not distinguishable.";
  else if (worse > 0)
    md += "the folklore holds here: BatchNorm is worse than LayerNorm at the smallest batch.";
  else
    md += "the folklore does not hold here: BatchNorm is better than LayerNorm at the smallest batch.";
  return md;
}

}  // namespace

std::vector<double> batches_of(const Report& r) {
  std::vector<double> x;
  for (const auto& nc : r.sweep_accuracy)
    for (const auto& bv : nc.second) x.push_back(bv.first);
  std::sort(x.begin(), x.end());
  x.erase(std::unique(x.begin(), x.end()), x.end());
  return x;
}

std::string families_section(const std::vector<FamilySweep>& all) {
  std::vector<FamilySweep> fs;
  for (const FamilySweep& f : all)
    if (f.sweep && !batches_of(*f.sweep).empty()) fs.push_back(f);
  if (fs.empty()) return "";
  std::ostringstream md;
  md << "## The four families side by side\n\nFrom each family's batch-size sweep above (each at its own sizes and "
        "batch sizes): the final test accuracy (%) of the MLP, the CNN and the LSTM, and the final validation bits per "
        "character of the GPT (lower is better); mean ± 95% CI over seeds. The best norms at a batch size are the one "
        "with the best mean and every norm not distinguishable from it (Welch's t-test over seeds, 95%).\n\n"
     << best_table(fs)
     << "\nThe last two columns: where the family's comparison carried the landscape probes (its Why section), each "
        "norm's verdict against no norm from Welch's t-test over seeds (holds, not distinguishable, reversed); - where "
        "it did not.\n"
     << "\nWhat each norm loses at its family's smallest batch size against its own best batch size (points of "
        "accuracy lost, or bits per character gained; positive is worse), with the 95% interval of the difference "
        "(Welch); \"beyond the seeds' spread\" when that interval excludes 0:\n\n"
     << loss_table(fs) << "\n**Reading.** ";
  for (const FamilySweep& f : fs) md << family_reading(f) << " ";
  md << "Each family's sizes are reduced to fit the time budget; the sections above give their settings.\n\n";
  return md.str();
}

}  // namespace normlab::experiments::studies
