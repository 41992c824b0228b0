// What a model.safetensors says about its data and preprocessing (saved_model.h).
#include "experiments/models/saved_model.h"

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

#include "autograd/generator.h"
#include "base/error.h"
#include "nn/checkpoint.h"
#include "serialize/safetensors.h"

namespace normlab::experiments {

namespace {

}  // namespace

std::map<std::string, std::string> data_metadata(const DataSpec& spec, const data::Splits& splits) {
  const data::Dataset& train = splits.train;
  std::map<std::string, std::string> md;
  const bool regression = !train.is_classification();
  md["task"] = regression ? "regression" : "classification";
  if (regression)  // the model predicts y' = (y - mean) / std
    md["target"] = nlohmann::json{{"name", spec.label},
                                  {"standardize", "y' = (y - mean) / std: the model's output is y', y = y' std + mean"},
                                  {"mean", splits.standardizer.y_mean},
                                  {"std", splits.standardizer.y_std}}
                       .dump();
  md["dataset"] = spec.name;
  const DatasetEntry& entry = dataset(spec.name);
  if (entry.recipe) md["data_recipe"] = entry.recipe(spec).dump();
  if (spec.name == "csv") {
    const data::CsvOptions& f = spec.csv_format;
    md["label"] = spec.label;
    md["csv_format"] = nlohmann::json{{"separator", std::string(1, f.delimiter)},
                                      {"comment", f.comment ? std::string(1, f.comment) : std::string()},
                                      {"header", f.header}, {"skip_rows", f.skip_rows}, {"na_values", f.na_values},
                                      {"missing", data::missing_name(f.missing)}}
                           .dump();
  }
  md["class_names"] = nlohmann::json(spec.class_names.empty() ? train.class_names : spec.class_names).dump();
  if (!spec.class_names.empty()) md["class_labels"] = nlohmann::json(train.class_names).dump();
  if (!train.feature_names.empty()) md["feature_names"] = nlohmann::json(train.feature_names).dump();
  if (!train.categories.empty()) {  // one-hot encoded columns: the file's columns, and the categories in order
    md["columns"] = nlohmann::json(train.source_columns).dump();
    nlohmann::json cats = nlohmann::json::array();
    for (const auto& [col, names] : train.categories) cats.push_back({col, names});
    md["categories"] = cats.dump();
  }
  nlohmann::json pre;
  pre["input"] = entry.input_rule;
  pre["standardize"] = "x' = (x - mean) / std, per feature, with the training split's mean and population std; "
                       "a std of 0 (a constant feature) is read as 1";
  pre["mean"] = splits.standardizer.mean;
  pre["std"] = splits.standardizer.std;
  if (!train.fill.empty()) {  // --missing mean: before standardizing, a missing value becomes its column's mean
    pre["missing"] = "a missing value (an empty cell or an NA string) becomes fill, the training file's column mean";
    pre["fill"] = train.fill;
  }
  md["preprocessing"] = pre.dump();
  return md;
}

namespace {

// The classes, features, preprocessing and target scaling the metadata records (JSON values).
void read_data_side(const std::map<std::string, std::string>& md,
                    const std::function<const std::string&(const std::string&)>& get, const std::string& path,
                    SavedModel& m) {
  try {
    m.class_names = nlohmann::json::parse(get("class_names")).get<std::vector<std::string>>();
    m.class_labels = md.count("class_labels")
                         ? nlohmann::json::parse(md.at("class_labels")).get<std::vector<std::string>>()
                         : m.class_names;
    if (md.count("feature_names"))
      m.feature_names = nlohmann::json::parse(md.at("feature_names")).get<std::vector<std::string>>();
    const nlohmann::json pre = nlohmann::json::parse(get("preprocessing"));
    m.standardizer.mean = pre.at("mean").get<std::vector<double>>();
    m.standardizer.std = pre.at("std").get<std::vector<double>>();
    if (pre.contains("fill")) m.fill = pre.at("fill").get<std::vector<float>>();
    if (md.count("csv_format")) m.csv_format = nlohmann::json::parse(md.at("csv_format"));
    if (md.count("categories")) {
      m.source_columns = nlohmann::json::parse(md.at("columns")).get<std::vector<std::string>>();
      for (const auto& c : nlohmann::json::parse(md.at("categories")))
        m.categories.emplace_back(c.at(0).get<std::string>(), c.at(1).get<std::vector<std::string>>());
    }
    if (m.task == data::Task::Regression) {
      const nlohmann::json target = nlohmann::json::parse(get("target"));
      m.standardizer.y_mean = target.at("mean").get<double>();
      m.standardizer.y_std = target.at("std").get<double>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": the checkpoint's data metadata is not valid: " + e.what());
  }
}

}  // namespace

SavedModel load_saved_model(const std::string& path) {
  const serialize::SafetensorsFile file = serialize::load_safetensors(path);
  const auto& md = file.metadata;
  const auto get = [&](const std::string& key) -> const std::string& {
    const auto it = md.find(key);
    if (it == md.end())
      throw Error(path + ": the checkpoint's metadata has no \"" + key + "\" (expected a model.safetensors that "
                  "`normlab train` wrote; checkpoints of normlab before 0.1.0 do not record their data)");
    return it->second;
  };
  SavedModel m;
  m.spec = model_spec_from_metadata(md, path);
  m.dataset = get("dataset");
  const std::string task = md.count("task") ? md.at("task") : "classification";
  if (task != task_name(data::Task::Classification) && task != task_name(data::Task::Regression))
    throw Error(path + ": the checkpoint's task is \"" + task + "\" (expected classification or regression)");
  m.task = task == task_name(data::Task::Regression) ? data::Task::Regression : data::Task::Classification;
  if (md.count("label")) m.label = md.at("label");
  if (md.count("data_recipe")) {
    try {
      m.data_recipe = nlohmann::json::parse(md.at("data_recipe"));
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ": the checkpoint's metadata \"data_recipe\" is not valid JSON: " + e.what());
    }
  }
  read_data_side(md, get, path, m);
  m.interrupted = md.count("interrupted") && md.at("interrupted") == "true";
  if (md.count("steps")) m.steps = md.at("steps");
  if (md.count("planned_steps")) m.planned_steps = md.at("planned_steps");
  const auto n = static_cast<int64_t>(m.standardizer.mean.size());
  if (n != m.spec.inputs || static_cast<int64_t>(m.standardizer.std.size()) != n)
    throw Error(path + ": the preprocessing has " + std::to_string(n) + " means and " +
                std::to_string(m.standardizer.std.size()) + " stds for a model of " + std::to_string(m.spec.inputs) +
                " inputs");
  if (!m.fill.empty() && static_cast<int64_t>(m.fill.size()) != n)
    throw Error(path + ": the preprocessing has " + std::to_string(m.fill.size()) + " fill values for " +
                std::to_string(n) + " features");
  if (m.class_labels.size() != m.class_names.size())
    throw Error(path + ": " + std::to_string(m.class_labels.size()) + " class labels for " +
                std::to_string(m.class_names.size()) + " class names");
  if (m.task == data::Task::Regression ? m.spec.outputs != 1 : static_cast<int64_t>(m.class_names.size()) != m.spec.outputs)
    throw Error(path + ": " + std::to_string(m.class_names.size()) + " class names for a model of " +
                std::to_string(m.spec.outputs) + " outputs");
  check_checkpoint_tensors(md, m.spec, file.tensors, path);
  autograd::Generator gen(0);  // the initial weights are replaced by the file's
  m.net = build_model(m.spec, gen).net;
  nn::load_module(file, path, *m.net);  // the file read above: one read of the checkpoint
  m.net->eval();
  return m;
}

data::Dataset csv_columns_of(const SavedModel& m, const std::string& checkpoint, const std::string& what) {
  if (m.dataset != "csv" || m.feature_names.empty())
    throw Error(what + ": " + checkpoint + " was trained on " + m.dataset +
                ", whose features have no column names; a CSV file goes with a model trained with --csv "
                "(normlab train --csv FILE --label COLUMN)" +
                (m.dataset == "fashion-mnist" ? "; normlab eval without --csv evaluates it on the Fashion-MNIST test set"
                                              : ""));
  data::Dataset train;
  train.name = checkpoint;
  train.feature_names = m.feature_names;
  train.x = autograd::empty({0, static_cast<int64_t>(m.feature_names.size())});
  train.class_names = m.class_labels;  // as the file writes them
  train.num_classes = static_cast<int64_t>(m.class_labels.size());  // 0 for regression
  train.label_name = m.label;
  train.fill = m.fill;
  train.source_columns = m.source_columns;
  train.categories = m.categories;
  return train;
}

data::CsvOptions with_recorded_format(data::CsvOptions o, const SavedModel& m, const std::vector<std::string>& flags) {
  const auto typed = [&](const std::string& f) { return std::find(flags.begin(), flags.end(), f) != flags.end(); };
  const nlohmann::json& f = m.csv_format;
  if (!f.is_object()) return o;
  try {
    if (!typed("--csv-sep")) o.delimiter = f.at("separator").get<std::string>().at(0);
    if (!typed("--csv-comment")) {
      const std::string c = f.at("comment").get<std::string>();
      o.comment = c.empty() ? 0 : c[0];
    }
    if (!typed("--csv-no-header")) o.header = f.at("header").get<bool>();
    if (!typed("--csv-skip-rows")) o.skip_rows = f.at("skip_rows").get<int64_t>();
    if (!typed("--csv-na")) o.na_values = f.at("na_values").get<std::vector<std::string>>();
    if (!typed("--missing")) o.missing = data::missing_from_name(f.at("missing").get<std::string>());
  } catch (const std::exception& e) {
    throw Error("the checkpoint's metadata \"csv_format\" is not valid: " + std::string(e.what()));
  }
  return o;
}

std::string interrupted_warning(const SavedModel& m, const std::string& path) {
  if (!m.interrupted) return "";
  const std::string of = m.planned_steps.empty() ? "" : " of " + m.planned_steps;
  const std::string when = m.steps.empty() ? "" : " after " + m.steps + of + " steps";
  return "normlab: warning: " + path + " holds the weights at an interruption of its training (Ctrl-C" + when +
         "; its metadata says interrupted=true), not a finished model: `normlab train --resume` with the flags "
         "that made it finishes the training\n";
}

}  // namespace normlab::experiments
