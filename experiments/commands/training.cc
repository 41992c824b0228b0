// The flags, presets, checks and run flow the training commands share (training.h).
#include "experiments/commands/training.h"


#include <cstdio>
#include <filesystem>
#include <limits>

#include "autograd/parallel.h"
#include "dist/dist.h"
#include "experiments/commands/cli.h"
#include "experiments/commands/entry_flags.h"
#include "experiments/commands/flags.h"
#include "experiments/commands/presets.h"
#include "experiments/commands/resume.h"
#include "experiments/models/archs.h"
#include "experiments/models/saved_model.h"
#include "experiments/records/rank_scratch.h"
#include "experiments/records/result_set.h"
#include "experiments/registry/entries.h"
#include "experiments/registry/layers.h"
#include "experiments/registry/optimizers.h"
#include "experiments/support/interrupt.h"
#include "experiments/support/output.h"

namespace normlab::experiments::commands {

using namespace studies;  // what the commands run

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxBatch = std::numeric_limits<int32_t>::max();

}  // namespace

std::string dataset_phrase(const TrainingOptions& o, const Given& given) {
  return "the dataset is '" + o.data.name + "'" +
         (given("--dataset") ? "" : given("--csv") ? ", named by --csv" : o.quick ? ", the --quick default" : ", the default");
}

void check_batch_fits(const std::string& flag, int64_t batch, int64_t rows, const std::string& what) {
  if (batch <= rows) return;
  throw UsageError(flag + " " + std::to_string(batch) + " is larger than " + what + " (" + std::to_string(rows) +
                   " samples): a batch holds at most every sample once; give " + flag + " of at most " +
                   std::to_string(rows));
}

void check_batch_statistics(const std::string& batch_flag, const std::vector<int64_t>& batches,
                            const std::string& norms_flag, const std::vector<std::string>& norms) {
  if (std::find(batches.begin(), batches.end(), int64_t{1}) == batches.end()) return;
  for (const std::string& n : norms)
    if (norm(n).batch_statistics)
      throw UsageError(batch_flag + " 1 with " + norms_flag + " " + n + ": " + norm(n).display +
                       " needs more than one sample per batch to compute batch statistics (PyTorch: \"Expected more "
                       "than 1 value per channel when training\"); give " + batch_flag + (batch_flag.back() == 's' ? " of" : "") +
                       " 2 or more, or leave " + n +
                       " out of " + norms_flag);
}

// ---- flags ----

void TrainingCommand::add_flags(CLI::App& app) {
  app_ = &app;
  add_data_flags(app);
  add_train_flags(app);
  add_own_flags(app);
  app.add_flag("--quick", o_.quick, "a small synthetic preset (seconds)");
  add_output_flags(app);
}

void TrainingCommand::add_data_flags(CLI::App& a) {
  DataSpec& d = o_.data;
  preset_default(a.add_option("--dataset", d.name, or_list(names_in(datasets()))),
                 tables_help("--dataset", traits_.fits_csv_files));
  a.add_option("--csv", d.csv_path, "CSV file (--dataset csv, implied): header row, numeric features")->check(non_empty());
  a.add_option("--csv-test", d.csv_test_path, "CSV test file (else a fraction of --csv is held out)")->check(non_empty());
  a.add_option("--label", d.label, "the label column of the CSV file")->check(non_empty());
  add_csv_format_flags(a, d.csv_format);
  a.add_option_function<std::string>(
       "--task",
       [&d](const std::string& v) { d.csv_format.task = v == "regression" ? data::Task::Regression : data::Task::Classification; },
       "what the CSV's label column holds: classification (classes) or regression (numbers: MSE loss, R^2 and "
       "RMSE in place of accuracy; train and compare)")
      ->check(CLI::IsMember({"classification", "regression"}));
  a.add_option_function<std::vector<std::string>>(
       "--categorical",
       [&d](const std::vector<std::string>& v) {
         for (const std::string& name : v)
           if (name == "auto") d.csv_format.categorical_auto = true;
           else d.csv_format.categorical.push_back(name);
       },
       "CSV columns of categories to one-hot encode: names (e.g. city,zip), or auto (every column with a "
       "non-numeric cell in the first 1000 rows), or both")
      ->delimiter(',')
      ->default_str("");
  a.add_option("--class-names", d.class_names,
               "names of the CSV's classes in class order (the labels sorted: 0, 1, 2, ...), e.g. setosa,versicolor,"
               "virginica: in the checkpoint, eval's tables and predict's columns")
      ->delimiter(',')
      ->default_str("");
  a.add_option("--data-dir", d.fashion_dir, "folder of the Fashion-MNIST files (*-ubyte.gz)")->check(non_empty());
  a.add_option("--train-limit", d.train_limit, "use only the first N training samples (0: all; of any data set)")->check(whole(0, kMaxInt));
  a.add_option("--test-limit", d.test_limit, "use only the first N test samples (0: all; of any data set)")->check(whole(0, kMaxInt));
  auto* val = a.add_option("--val-fraction", d.validation_fraction, "fraction of the training samples held out for validation")
                  ->check(real(0, 1, false, true));
  if (!traits_.val_fraction_default.empty()) preset_default(val, traits_.val_fraction_default);
  else if (traits_.fits_csv_files) preset_default(val, tables_help("--val-fraction", true));
  a.add_option("--test-fraction", d.test_fraction, "test fraction for CSV without a test file and synthetic sets")
      ->check(real(0, 1, false, true));
  a.add_option("--samples", d.samples, "synthetic sets: number of samples")->check(whole(1, 10000000));
  preset_default(a.add_option("--noise", d.noise, "synthetic sets: noise")->check(non_negative()),
                 tables_help("--noise", traits_.fits_csv_files));
  a.add_option("--data-seed", d.seed, "seed of synthetic data and of the splits")->check(seed_value());
}

void TrainingCommand::add_train_flags(CLI::App& a) {
  TrainConfig& t = o_.train;
  preset_default(a.add_option("--hidden", t.model.hidden, "hidden widths, e.g. 256,256")->delimiter(',')->check(whole(1, 1 << 20)),
                 tables_help("--hidden", traits_.fits_csv_files));
  std::vector<std::string> arch_help;
  for (const ArchEntry& e : archs()) arch_help.push_back(e.help);
  a.add_option("--arch", t.model.arch, "model kind: " + or_list(arch_help))->check(CLI::IsMember(names_in(archs())));
  preset_default(a.add_option("--model", t.model.layers,
                              "--arch cnn: the layers, joined by '-': conv<C>[k<K>][s<S>][p<P>][d<D>][g<G>], "
                              "maxpool<K>[s<S>][p<P>], avgpool<K>, gap, flatten, linear<N>, norm (the --norm), "
                              "act (the --activation) or relu/tanh/gelu/sigmoid; the classifier Linear is added")
                     ->check(non_empty()),
                 kDefaultCnn);
  preset_default(a.add_option("--image-shape", t.model.image, "--arch cnn: one sample as C,H,W")
                     ->delimiter(',')
                     ->expected(3)
                     ->check(whole(1, 1 << 20)),
                 tables_help("--image-shape", traits_.fits_csv_files));
  a.add_option("--activation", t.model.activation, "activation in the hidden layers: " + activation_names());
  a.add_option("--groups", t.model.groups, "GroupNorm: number of groups")->check(whole(1, 1 << 20));
  preset_default(a.add_option("--epochs", t.epochs, "epochs per run")->check(whole(1, 1000000)),
                 tables_help("--epochs", traits_.fits_csv_files));
  preset_default(a.add_option("--batch-size", t.batch_size, traits_.batch_size_help)
                     ->check(whole(1, kMaxBatch)),
                 tables_help("--batch-size", traits_.fits_csv_files));
  add_optimizer_flags(a);
  if (traits_.eval_every) {
    a.add_option("--eval-every", t.eval_every,
                 "also evaluate (validation, test) every N steps, into evals.csv; compare: steps to the target "
                 "as fine as N steps, instead of an epoch")
        ->check(whole(1, kMaxInt))
        ->default_str("");
    a.add_option("--probe-every", t.probe_every,
                 "every N steps, why a norm helps: each layer's internal covariate shift (shifts.csv) and the "
                 "loss and gradient at w - eta g for eta = lr x 0.25, 0.5, 1, 2, 4 (landscape.csv)")
        ->check(whole(1, kMaxInt))
        ->default_str("");
    a.add_option("--curvature-samples", t.curvature_samples,
                 "the Hessian's top eigenvalue and trace of the loss of the first N training samples (--dataset "
                 "text: windows), before the first step, at a quarter, a half and after the last (curvature.csv)")
        ->check(whole(1, kMaxInt))
        ->default_str("");
    preset_default(a.add_option("--early-stopping", t.early_stopping,
                                "stop after N epochs without a lower validation loss and keep the best epoch's "
                                "weights (needs --val-fraction above 0)")
                       ->check(whole(1, kMaxInt)),
                   tables_help("--early-stopping", traits_.fits_csv_files));
  }
  if (traits_.stats_every)
    preset_default(a.add_option("--stats-every", t.stats_every, "record activation statistics and gradient norms every N steps")
                       ->check(whole(0, kMaxInt)),
                   tables_help("--stats-every", traits_.fits_csv_files) + traits_.stats_every_note);
  preset_default(a.add_option("--eval-batch", t.eval_batch, "evaluation batch size")->check(whole(1, kMaxBatch)),
                 tables_help("--eval-batch", traits_.fits_csv_files));
}

// The optimizer, its settings and the learning-rate schedule.
void TrainingCommand::add_optimizer_flags(CLI::App& a) {
  TrainConfig& t = o_.train;
  preset_default(a.add_option("--lr", t.lr, traits_.lr_help)->check(non_negative()),
                 tables_help("--lr", traits_.fits_csv_files));
  a.add_option("--optimizer", t.optimizer,
               or_list(names_in(optimizers())) + " (PyTorch's update rules; adam and adamw default to --lr 0.001, adamw to "
               "--weight-decay 0.01, as PyTorch)" +
                   std::string(traits_.fits_csv_files ? " (default: adam on a CSV file, else sgd)" : ""))
      ->check(CLI::IsMember(names_in(optimizers())));
  a.add_option("--momentum", t.momentum, "SGD momentum")->check(real(0, 1, false, true));
  preset_default(a.add_option("--weight-decay", t.weight_decay, "weight decay: L2 added to the gradient (sgd, adam), decoupled (adamw)")
                     ->check(non_negative()),
                 tables_help("--weight-decay", traits_.fits_csv_files));
  a.add_flag("--nesterov", t.nesterov, "SGD: Nesterov momentum");
  a.add_option("--betas", o_.betas, "adam, adamw: the decay rates of the moments, e.g. 0.9,0.999")
      ->delimiter(',')
      ->expected(2)
      ->check(real(0, 1, false, true))
      ->default_str("0.9,0.999");
  a.add_option("--eps", t.eps, "adam, adamw: added to the denominator")->check(non_negative());
  if (traits_.clip_grad_norm)
    preset_default(a.add_option("--clip-grad-norm", t.clip_grad_norm,
                                "clip the total gradient norm to this before every step (0: off); --arch lstm "
                                "also defaults to --optimizer adam (lr 0.001)")->check(non_negative()),
                   tables_help("--clip-grad-norm", traits_.fits_csv_files));
  preset_default(a.add_option("--warmup", t.warmup_steps, "linear warmup steps")->check(whole(0, kMaxInt)),
                 tables_help("--warmup", traits_.fits_csv_files));
  a.add_option("--schedule", t.schedule, "after warmup: " + or_list(names_in(schedules())));
  a.add_option("--step-every", t.step_every, "schedule step: decay every N steps")->check(whole(1, kMaxInt));
  a.add_option("--step-gamma", t.step_gamma, "schedule step: decay factor")
      ->check(real(0, std::numeric_limits<double>::infinity(), true));
}

void TrainingCommand::add_output_flags(CLI::App& a) {
  commands::add_output_flags(a, o_.out, o_.quiet, o_.threads);
  if (!traits_.single_run)
    a.add_flag("--resume", o_.resume,
               "continue the results in --out of an interrupted or killed command: keep its finished runs, train "
               "the rest (the same flags)");
}

// ---- checks (the presets: presets.h) ----

// The optimizer's own flags: those of another optimizer are refused.
void TrainingCommand::check_optimizer(const Given& given) const {
  const std::string& name = o_.train.optimizer;
  check_entry_flags(optimizers(), optimizer(name), given, "--optimizer",
                    "--optimizer " + name + (given("--optimizer") ? "" : " (the default)"));
}

// Flags that the data set, the schedule or the norms would leave without effect are errors: a
// flag given is a flag used. (The data set is final here: --quick and --csv have set it.)
void TrainingCommand::check_applicable(const Given& given) const {
  const DatasetEntry& ds = dataset(o_.data.name);
  const std::string phrase = dataset_phrase(o_, given);
  for (const DatasetEntry& e : datasets())
    for (const std::string& flag : e.flags) {
      if (!given(flag) || std::find(ds.flags.begin(), ds.flags.end(), flag) != ds.flags.end()) continue;
      if (traits_.clip_grad_norm && flag == "--clip-grad-norm") continue;  // compare, sweep: every data set's
      const auto owners = owners_of(datasets(), flag);
      std::vector<std::string> names;
      for (const DatasetEntry* o : owners) names.push_back(o->name);
      if (owners.size() > 1 && !owners.front()->family.empty())
        throw Error(flag + " sets " + owners.front()->family + " (" + or_list(names) + "); " + phrase);
      throw Error(flag + " goes with --dataset " + or_list(names) + "; " + phrase);
    }
  if (ds.own_test_set && given("--test-fraction"))
    throw Error("--test-fraction splits a CSV file or a synthetic set: " + ds.name + " has its own test set " +
                "(--test-limit uses fewer)");
  if (!o_.data.csv_test_path.empty() && given("--test-fraction"))
    throw Error("--test-fraction cannot be used with --csv-test: the test set is the --csv-test file");
  check_entry_flags(schedules(), schedule(o_.train.schedule), given, "--schedule",
                    "the schedule is '" + o_.train.schedule + "'" + (given("--schedule") ? "" : ", the default"));
  for (const NormEntry& e : norms())  // a norm's own flags (--groups) need a run with that norm
    for (const std::string& flag : e.flags) {
      if (!given(flag)) continue;
      const auto runs = norms_run();
      const auto reads = [&](const std::string& n) {
        const auto& f = norm(n).flags;
        return std::find(f.begin(), f.end(), flag) != f.end();
      };
      if (std::none_of(runs.begin(), runs.end(), reads))
        throw Error(flag + " sets an option of " + e.display + ", but no run uses " + e.display + " (" +
                    (traits_.single_run ? "--norm " + e.name : "add " + e.name + " to --norms") + ")");
    }
}

void TrainingCommand::check(const Given& given) {
  if (o_.out.empty()) o_.out = "out/" + name();
  if (given("--csv") && !given("--dataset")) o_.data.name = "csv";  // --csv FILE alone names the data set
  dataset(o_.data.name);  // an unknown name is an error before anything else
  if (on_text()) {  // --dataset text: a language model (text_training.h, text_compare.h)
    text_flow_->presets(o_, given);
    check_applicable(given);
    check_optimizer(given);
    preset_optimizer(o_, given);
    text_flow_->check(o_, given);
    settings_ = typed_settings(*app_, name());
    settings_["data"] = data_fingerprint(data_sources());
    return;
  }
  own_presets(given);
  o_.csv_fit = preset_tables(o_, given, traits_.fits_csv_files);
  check_own(given);
  check_applicable(given);
  if (o_.data.name == "csv" && o_.data.csv_path.empty()) throw Error("--dataset csv needs --csv FILE (and --label COLUMN)");
  if (o_.data.name == "csv" && o_.data.label.empty())
    throw Error("--dataset csv needs --label COLUMN, the name of the label column");
  if (o_.train.distributed && !dist::launched())
    throw Error("--distributed trains over the processes of an mpirun job: start it as mpirun -np 2 normlab " + name() +
                " --distributed ... (as root also with OMPI_ALLOW_RUN_AS_ROOT=1 "
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, and --oversubscribe for more ranks than cores)");
  apply_arch_defaults(given);
  check_optimizer(given);
  preset_optimizer(o_, given);
  preset_model(o_, given);
  check_architecture(given);
  settings_ = typed_settings(*app_, name());
  settings_["data"] = data_fingerprint(data_sources());
  final_checks(given);
}

std::vector<DataSource> TrainingCommand::data_sources() const {
  std::vector<DataSource> all;
  if (on_text()) return text_flow_->data_sources();
  const DataSpec& d = o_.data;
  if (d.name == "fashion-mnist") {
    DataSource s{"Fashion-MNIST in " + d.fashion_dir, {}};
    for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                          "t10k-labels-idx1-ubyte.gz"})
      s.files.push_back((fs::path(d.fashion_dir) / f).string());
    all.push_back(s);
  }
  if (d.name == "csv") {
    all.push_back({"--csv " + d.csv_path, {d.csv_path}});
    if (!d.csv_test_path.empty()) all.push_back({"--csv-test " + d.csv_test_path, {d.csv_test_path}});
  }
  for (DataSource& s : own_data_sources()) all.push_back(std::move(s));
  return all;
}

void TrainingCommand::final_checks(const Given&) {
  if (!o_.resume) return;
  resume_ = resume_sources(o_.out, traits_.records, settings_);
}

// ---- the run ----

void TrainingCommand::plan(const Invocation&) {
  autograd::set_num_threads(o_.threads);
  if (on_text()) {
    try {
      text_flow_->plan(o_);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
    return;
  }
  if (o_.data.csv_format.task == data::Task::Regression && traits_.classification_only)
    throw UsageError("--task regression goes with train and compare (and eval, predict): the " + name() +
                     " reports accuracy against batch size, a classification protocol");
  data_ = load_data(o_.data);
  if (const std::string note = fit_to_rows(o_.train, o_.csv_fit, data_); !note.empty()) {
    o_.defaults_note = note;  // replaces an arch's note (compare --arch lstm on a CSV file)
    if (!o_.quiet) std::printf("normlab: %s\n", note.c_str());
  }
  o_.train.model.inputs = data_.train.features();
  o_.train.model.outputs = data_.train.is_classification() ? data_.train.num_classes : 1;
  o_.train.task = data_.train.is_classification() ? data::Task::Classification : data::Task::Regression;
  if (Given(app_)("--batch-size")) check_batch_fits("--batch-size", o_.train.batch_size, data_.train.size());
  try {
    make_plan(data_);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

std::string TrainingCommand::interrupted_message(const Report& rep) const {
  return "normlab: interrupted: " + std::to_string(rep.runs_done) + " of " + std::to_string(rep.runs_total) +
         " runs finished, written to " + o_.out + "; the same command with --resume trains the rest\n";
}

int TrainingCommand::run(const Invocation& inv) {
  if (on_text()) return text_flow_->run(o_, settings_, inv);
  install_interrupt_handler();
  StudyContext ctx;
  ctx.quiet = o_.quiet;
  ctx.command_line = inv.text();
  ctx.dataset = describe(o_.data, data_);
  ctx.defaults_note = o_.defaults_note;
  ctx.checkpoint_data = data_metadata(o_.data, data_);
  ctx.settings = settings_;
  ctx.resume_killed = resume_.killed;
  if (dist::rank() != 0) {  // this rank's share of the work; rank 0 writes the results
    ctx.quiet = true;
    const RankScratch scratch(o_.out);
    ctx.out = scratch.path();
    if (resume_.out) ctx.resume_from = output_folder(o_.out);
    run_other_rank(data_, ctx);
    return kExitOk;
  }
  ResultSet set(o_.out);
  ctx.out = set.dir();
  if (resume_.out) ctx.resume_from = set.out();
  complete_context(ctx);
  const Report rep = [&] {
    try {
      return run_plan(data_, ctx);
    } catch (const UsageError&) {
      throw;
    } catch (const Error& e) {  // a file that cannot be written: named in --out, not the hidden folder
      throw Error(set.in_user_terms(e.what()));
    }
  }();
  set.commit();
  after_commit(ctx);
  std::printf("normlab: results in %s%s\n", o_.out.c_str(), traits_.single_run ? "" : " (report.md)");
  return run_exit_status(rep.interrupted, rep.diverged, rep.interrupted ? interrupted_message(rep) : "");
}

int run_exit_status(bool interrupted, bool diverged, const std::string& message) {
  if (interrupted) {
    std::fputs(message.c_str(), stderr);
    return kExitInterrupted;
  }
  if (!diverged) return kExitOk;
  std::fprintf(stderr, "normlab: the run diverged (its loss became NaN or infinite): no model was saved; its "
               "weights are in model.diverged.safetensors (exit status %d)\n", kExitDiverged);
  return kExitDiverged;
}

}  // namespace normlab::experiments::commands
