// The normlab command line: options shared by every subcommand, presets (--quick, --full), and
// the conversion of flags into study configurations.
#include "experiments/cli.h"

#include "autograd/parallel.h"

#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <limits>
#include <thread>

#include "data/split.h"
#include "dist/dist.h"
#include "experiments/checkpointing.h"
#include "experiments/datasets.h"
#include "experiments/demo.h"
#include "experiments/eval_cmd.h"
#include "experiments/flags.h"
#include "experiments/git_commit.h"
#include "experiments/interrupt.h"
#include "experiments/result_set.h"
#include "experiments/saved_model.h"
#include "experiments/output.h"
#include "experiments/predict.h"
#include "experiments/registry.h"
#include "experiments/study.h"
#include "nn/checkpoint.h"

namespace normlab::experiments {

namespace fs = std::filesystem;

namespace {

constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();
constexpr int64_t kMaxBatch = std::numeric_limits<int32_t>::max();
// The evaluation batch of convolutional models unless --eval-batch is given: a CNN's activations
// for 1000 images (100 MB per layer of the study's CNN) stream through memory, at 100 they stay
// in cache (the test set's evaluation 40% faster; accuracies the same, the summed test loss
// differs in the last digits).
constexpr int64_t kCnnEvalBatch = 100;
constexpr int64_t kMaxThreads = 256;

// Every flag of every subcommand lands here; presets fill what the user did not set.
struct Options {
  DataSpec data;
  TrainConfig train;
  std::string norm = "none";
  std::vector<std::string> norms{"none", "batch", "layer"};
  uint64_t seed = 0;
  std::vector<uint64_t> seeds{0, 1};
  double target = 0.85;
  std::string over = "batch";
  std::vector<int64_t> batch_sizes = kSweepBatches;
  std::vector<int> ranks;  // sweep --distributed --ranks (empty: every divisor of the job's size)
  std::vector<double> lrs{0.01, 0.03, 0.1, 0.3, 1.0, 3.0};
  int64_t reference_batch = 128;
  std::string out;
  bool quiet = false, quick = false, full = false, resume = false;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int demo_steps = 300;
  std::string help_topic;  // `normlab help SUBCOMMAND`
  std::string checkpoint, input_csv;  // predict, eval
  std::string resume_dir;             // train --resume DIR ("": --out)
  std::vector<double> adam_betas;     // --betas (empty: the defaults)
  int64_t checkpoint_every = 0;       // train --checkpoint-every
  int64_t sweep_train_limit = 0;  // study: the sweep trains on the first N training samples (0: all)
  // study on Fashion-MNIST: the CNN part (--no-cnn leaves it out).
  bool no_cnn = false;
  int64_t cnn_train_limit = 10000, cnn_epochs = 1, cnn_batch_size = 32;
  bool eval_batch_given = false;  // --eval-batch on the command line (else the CNN default)
  std::vector<int64_t> cnn_batch_sizes{2, 4, 128};
  std::vector<std::string> cnn_norms{"none", "batch", "layer", "group", "instance"};
  std::vector<std::string> cnn_sweep_norms{"batch", "layer", "group"};
};

// An option whose default depends on the dataset or a preset (applied after parsing): its
// description states each default, instead of the value CLI11 captured before the presets.
CLI::Option* preset_default(CLI::Option* opt, const std::string& defaults) {
  opt->description(opt->get_description() + " (default: " + defaults + ")");
  opt->default_str("");
  return opt;
}

// How a CSV file is laid out (pandas's names): separator, comment lines, header, leading rows.
void add_csv_format_options(CLI::App* a, data::CsvOptions& f) {
  a->add_option_function<std::string>(
       "--csv-sep",
       [&f](const std::string& v) {
         if (v == "\\t" || v == "tab" || v == "\t") f.delimiter = '\t';
         else if (v.size() == 1 && v != "\"" && v != "\n" && v != "\r") f.delimiter = v[0];
         else throw CLI::ValidationError("--csv-sep", "expected one character (or tab, \\t), got '" + v + "'");
       },
       "CSV field separator: one character, or tab (default ,)");
  a->add_option_function<std::string>(
       "--csv-comment",
       [&f](const std::string& v) {
         if (v.size() != 1 || v == " " || v == "\"") throw CLI::ValidationError("--csv-comment", "expected one character, got '" + v + "'");
         f.comment = v[0];
       },
       "CSV lines starting with this character are skipped (e.g. #)");
  a->add_flag_callback("--csv-no-header", [&f] { f.header = false; },
                       "the CSV file has no header row: its columns are named 0, 1, 2, ... (--label 4)");
  a->add_option("--csv-skip-rows", f.skip_rows, "lines to skip at the top of the CSV file, before the header")
      ->check(whole(0, kMaxInt));
  a->add_option("--csv-na", f.na_values,
                "more CSV strings read as a missing value, e.g. ?,-999 (always: an empty cell, NA, N/A, NaN, "
                "null, None and pandas's other defaults)")
      ->delimiter(',')
      ->default_str("");
  a->add_option_function<std::string>(
       "--missing",
       [&f](const std::string& v) {
         f.missing = v == "drop" ? data::Missing::Drop : v == "mean" ? data::Missing::Mean : data::Missing::Error;
       },
       "a missing CSV cell: error (default), drop (its row), mean (the column's mean over the training file)")
      ->check(CLI::IsMember({"error", "drop", "mean"}));
  a->add_option("--csv-drop", f.drop, "CSV columns to leave out, e.g. id,date")->delimiter(',')->default_str("");
  a->add_option("--csv-columns", f.keep, "the only CSV columns to use as features (the label besides)")->delimiter(',')->default_str("");
}

void add_data_options(CLI::App* a, Options& o) {
  const bool study = a->get_name() == "study";
  preset_default(a->add_option("--dataset", o.data.name, "fashion-mnist, csv, spirals, moons, circles, blobs or xor"),
                 "moons with --quick, else fashion-mnist");
  a->add_option("--csv", o.data.csv_path, "CSV file (--dataset csv, implied): header row, numeric features")->check(non_empty());
  a->add_option("--csv-test", o.data.csv_test_path, "CSV test file (else a fraction of --csv is held out)")->check(non_empty());
  a->add_option("--label", o.data.label, "the label column of the CSV file")->check(non_empty());
  add_csv_format_options(a, o.data.csv_format);
  a->add_option_function<std::string>(
       "--task",
       [&o](const std::string& v) { o.data.csv_format.task = v == "regression" ? data::Task::Regression : data::Task::Classification; },
       "what the CSV's label column holds: classification (classes) or regression (numbers: MSE loss, R^2 and "
       "RMSE in place of accuracy; train and compare)")
      ->check(CLI::IsMember({"classification", "regression"}));
  a->add_option_function<std::vector<std::string>>(
       "--categorical",
       [&o](const std::vector<std::string>& v) {
         for (const std::string& name : v)
           if (name == "auto") o.data.csv_format.categorical_auto = true;
           else o.data.csv_format.categorical.push_back(name);
       },
       "CSV columns of categories to one-hot encode: names (e.g. city,zip), or auto (every column with a "
       "non-numeric cell in the first 1000 rows), or both")
      ->delimiter(',')
      ->default_str("");
  a->add_option("--data-dir", o.data.fashion_dir, "folder of the Fashion-MNIST files (*-ubyte.gz)")
      ->check(non_empty());
  a->add_option("--train-limit", o.data.train_limit, "use only the first N training samples (0: all; of any data set)")->check(whole(0, kMaxInt));
  a->add_option("--test-limit", o.data.test_limit, "use only the first N test samples (0: all; of any data set)")->check(whole(0, kMaxInt));
  auto* val = a->add_option("--val-fraction", o.data.validation_fraction,
                            "fraction of the training samples held out for validation")
                  ->check(real(0, 1, false, true));
  if (study) preset_default(val, "0.1 on fashion-mnist without --quick, else 0");
  a->add_option("--test-fraction", o.data.test_fraction, "test fraction for CSV without a test file and synthetic sets")
      ->check(real(0, 1, false, true));
  a->add_option("--samples", o.data.samples, "synthetic sets: number of samples")->check(whole(1, 10000000));
  preset_default(a->add_option("--noise", o.data.noise, "synthetic sets: noise")->check(non_negative()),
                 "0.25 with --quick, else 0.1");
  a->add_option("--data-seed", o.data.seed, "seed of synthetic data and of the splits")->check(seed_value());
}

void add_train_options(CLI::App* a, Options& o) {
  const std::string cmd = a->get_name();
  preset_default(a->add_option("--hidden", o.train.model.hidden, "hidden widths, e.g. 256,256")
                     ->delimiter(',')
                     ->check(whole(1, 1 << 20)),
                 "32,32 with --quick, 256,256 on fashion-mnist, else 64,64");
  a->add_option("--arch", o.train.model.arch, "model kind: mlp (--hidden) or cnn (--model, on images)")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  preset_default(a->add_option("--model", o.train.model.layers,
                               "--arch cnn: the layers, joined by '-': conv<C>[k<K>][s<S>][p<P>][d<D>][g<G>], "
                               "maxpool<K>[s<S>][p<P>], avgpool<K>, gap, flatten, linear<N>, norm (the --norm), "
                               "act (the --activation) or relu/tanh/gelu/sigmoid; the classifier Linear is added")
                     ->check(non_empty()),
                 kDefaultCnn);
  preset_default(a->add_option("--image-shape", o.train.model.image, "--arch cnn: one sample as C,H,W")
                     ->delimiter(',')
                     ->expected(3)
                     ->check(whole(1, 1 << 20)),
                 "1,28,28 on fashion-mnist");
  a->add_option("--activation", o.train.model.activation, "activation in the hidden layers: " + activation_names());
  a->add_option("--groups", o.train.model.groups, "GroupNorm: number of groups")->check(whole(1, 1 << 20));
  preset_default(a->add_option("--epochs", o.train.epochs, "epochs per run")->check(whole(1, 1000000)),
                 "3 with --quick, else 5");
  preset_default(a->add_option("--batch-size", o.train.batch_size,
                               cmd == "sweep" ? "training batch size (--over lr)" : "training batch size")
                     ->check(whole(1, kMaxBatch)),
                 "32 with --quick, else 128");
  const std::string lr = cmd == "sweep"   ? "peak learning rate (--over batch: at --reference-batch)"
                         : cmd == "study" ? "peak learning rate (the sweep: at batch 128, scaled linearly)"
                                          : "peak learning rate";
  preset_default(a->add_option("--lr", o.train.lr, lr)->check(non_negative()), "0.001 with --optimizer adam or adamw, 0.1 with --quick, else 0.05");
  a->add_option("--optimizer", o.train.optimizer,
                "sgd, adam or adamw (PyTorch's update rules; adam and adamw default to --lr 0.001, adamw to "
                "--weight-decay 0.01, as PyTorch)")
      ->check(CLI::IsMember({"sgd", "adam", "adamw"}));
  a->add_option("--momentum", o.train.momentum, "SGD momentum")->check(real(0, 1, false, true));
  preset_default(a->add_option("--weight-decay", o.train.weight_decay,
                               "weight decay: L2 added to the gradient (sgd, adam), decoupled (adamw)")
                     ->check(non_negative()),
                 "0.01 with --optimizer adamw, else 0");
  a->add_flag("--nesterov", o.train.nesterov, "SGD: Nesterov momentum");
  a->add_option("--betas", o.adam_betas, "adam, adamw: the decay rates of the moments, e.g. 0.9,0.999")
      ->delimiter(',')
      ->expected(2)
      ->check(real(0, 1, false, true))
      ->default_str("0.9,0.999");
  a->add_option("--eps", o.train.eps, "adam, adamw: added to the denominator")->check(non_negative());
  preset_default(a->add_option("--warmup", o.train.warmup_steps, "linear warmup steps")->check(whole(0, kMaxInt)),
                 "10 with --quick, 50 on fashion-mnist, else 0");
  a->add_option("--schedule", o.train.schedule, "after warmup: none, cosine or step");
  a->add_option("--step-every", o.train.step_every, "schedule step: decay every N steps")->check(whole(0, kMaxInt));
  a->add_option("--step-gamma", o.train.step_gamma, "schedule step: decay factor")
      ->check(real(0, std::numeric_limits<double>::infinity(), true));
  if (cmd == "train" || cmd == "compare")
    a->add_option("--eval-every", o.train.eval_every,
                  "also evaluate (validation, test) every N steps, into evals.csv; compare: steps to the target "
                  "as fine as N steps, instead of an epoch")
        ->check(whole(1, kMaxInt))
        ->default_str("");
  if (cmd != "sweep")  // the sweep records no activation statistics
    preset_default(a->add_option("--stats-every", o.train.stats_every,
                                 "record activation statistics and gradient norms every N steps")
                       ->check(whole(0, kMaxInt)),
                   std::string("10 with --quick, else 0, which records about 50 times per run") +
                       (cmd == "study" ? "; the comparison only" : ""));
  preset_default(a->add_option("--eval-batch", o.train.eval_batch, "evaluation batch size")->check(whole(1, kMaxBatch)),
                 "1000, 100 with --arch cnn and in the study's CNN part");
}

// --resume, for the commands made of several runs.
void add_resume(CLI::App* a, Options& o) {
  a->add_flag("--resume", o.resume,
              "continue the interrupted results in --out: keep their finished runs, train the rest (same flags)");
}

// The folder defaults to out/<subcommand>, set after parsing (parse): all subcommands write into one
// Options, so a default set here would be the last subcommand's for all.
void add_output_options(CLI::App* a, Options& o) {
  a->add_option("--out", o.out, "output folder")->check(non_empty())->default_str("out/" + a->get_name());
  a->add_flag("--quiet", o.quiet, "no progress output");
  a->add_option("--threads", o.threads, "worker threads (default: all cores); results do not depend on it")
      ->check(whole(1, kMaxThreads));
}

// --batch-sizes of the sweep and the study.
void add_batch_sizes(CLI::App* a, Options& o, const std::string& what) {
  const bool study = a->get_name() == "study";
  preset_default(a->add_option("--batch-sizes", o.batch_sizes, what)->delimiter(',')->check(whole(1, kMaxBatch)),
                 study ? "2,8,32,128 with --quick, 2,4,8,32,128,256 on fashion-mnist, else 2,4,8,16,32,64,128,256"
                       : "2,8,32,128 with --quick, else 2,4,8,16,32,64,128,256");
}

// The quick preset: a synthetic two-moons set and a small MLP, seconds per study.
void apply_quick(Options& o, CLI::App* sub) {
  auto unset = [&](const char* flag) { return sub->get_option_no_throw(flag) == nullptr || sub->count(flag) == 0; };
  if (unset("--dataset") && unset("--csv")) o.data.name = "moons";
  if (unset("--samples")) o.data.samples = 2000;
  if (unset("--noise")) o.data.noise = 0.25;
  if (unset("--hidden")) o.train.model.hidden = {32, 32};
  if (unset("--epochs")) o.train.epochs = 3;
  if (unset("--batch-size")) o.train.batch_size = 32;
  if (unset("--lr")) o.train.lr = 0.1;
  if (unset("--warmup")) o.train.warmup_steps = 10;
  if (unset("--stats-every")) o.train.stats_every = 10;
  if (unset("--batch-sizes")) o.batch_sizes = kQuickSweepBatches;
  if (unset("--target")) o.target = 0.85;
  if (unset("--lrs")) o.lrs = {0.01, 0.1, 1.0};
}

// Fashion-MNIST defaults: MLP 784-256-256-10, ReLU, SGD momentum 0.9; the study (make run) is
// sized to a few minutes on 2 cores: 5 epochs, the sweep on the first 20000 training images at
// batch 2, 4, 8, 32, 128 and 256: the batch-size protocol whose PyTorch results the README quotes,
// without batch 16 and 64 (precise BN recomputes the statistics over 10000 images).
void apply_fashion_defaults(Options& o, CLI::App* sub, bool study) {
  auto unset = [&](const char* flag) { return sub->get_option_no_throw(flag) == nullptr || sub->count(flag) == 0; };
  if (unset("--hidden")) o.train.model.hidden = {256, 256};
  if (unset("--warmup")) o.train.warmup_steps = 50;
  if (study) {
    if (unset("--val-fraction")) o.data.validation_fraction = 0.1;
    if (unset("--sweep-train-limit")) o.sweep_train_limit = 20000;
    if (unset("--batch-sizes")) o.batch_sizes = kStudySweepBatches;
  }
}

// The full sweep protocol (sweep --full): all 60k images, 5 seeds, batch 2..256, 5 epochs.
void apply_full(Options& o, CLI::App* sub) {
  auto unset = [&](const char* flag) { return sub->get_option_no_throw(flag) == nullptr || sub->count(flag) == 0; };
  if (unset("--train-limit")) o.data.train_limit = 0;
  if (unset("--seeds")) o.seeds = {0, 1, 2, 3, 4};
  if (unset("--batch-sizes")) o.batch_sizes = kSweepBatches;
  if (unset("--epochs")) o.train.epochs = 5;
}

// The norms a command will train: --norm (train), --norms, and the study's CNN norms.
std::vector<std::string> norms_run(const Options& o, CLI::App* sub) {
  const std::string cmd = sub->get_name();
  if (cmd == "train") return {o.norm};
  std::vector<std::string> all = o.norms;
  if (cmd == "study" && !o.quick && !o.no_cnn && o.data.name == "fashion-mnist") {
    all.insert(all.end(), o.cnn_norms.begin(), o.cnn_norms.end());
    all.insert(all.end(), o.cnn_sweep_norms.begin(), o.cnn_sweep_norms.end());
  }
  return all;
}

// Flags that the data set, the schedule or the norms would leave without effect are errors: a
// flag given is a flag used. (The dataset is final here: --quick and --csv have set it.)
void check_applicable(const Options& o, CLI::App* sub) {
  auto given = [&](const char* flag) { return sub->get_option_no_throw(flag) != nullptr && sub->count(flag) > 0; };
  const std::string& ds = o.data.name;
  const bool synthetic = ds != "fashion-mnist" && ds != "csv";
  const std::string dataset = "the dataset is '" + ds + "'" +
                              (given("--dataset") ? ""
                               : given("--csv")   ? ", named by --csv"
                               : o.quick          ? ", the --quick default"
                                                  : ", the default");
  for (const char* flag : {"--csv", "--csv-test", "--label", "--csv-sep", "--csv-comment", "--csv-no-header", "--csv-skip-rows",
                           "--csv-drop", "--csv-columns", "--csv-na", "--missing", "--task", "--categorical"})
    if (ds != "csv" && given(flag)) throw Error(std::string(flag) + " goes with --dataset csv; " + dataset);
  for (const char* flag : {"--samples", "--noise"})
    if (!synthetic && given(flag))
      throw Error(std::string(flag) + " sets a synthetic data set (spirals, moons, circles, blobs, xor); " + dataset +
                  ", whose samples are read from " + (ds == "csv" ? "the CSV file" : "its files"));
  if (ds != "fashion-mnist" && given("--data-dir"))
    throw Error("--data-dir goes with --dataset fashion-mnist; " + dataset);
  if (ds == "fashion-mnist" && given("--test-fraction"))
    throw Error("--test-fraction splits a CSV file or a synthetic set: fashion-mnist has its own test set of 10,000 "
                "images (--test-limit uses fewer)");
  if (ds == "csv" && !o.data.csv_test_path.empty() && given("--test-fraction"))
    throw Error("--test-fraction cannot be used with --csv-test: the test set is the --csv-test file");
  const std::string schedule = "the schedule is '" + o.train.schedule + "'" + (given("--schedule") ? "" : ", the default");
  for (const char* flag : {"--step-every", "--step-gamma"})
    if (o.train.schedule != "step" && given(flag))
      throw Error(std::string(flag) + " goes with --schedule step; " + schedule);
  if (given("--groups")) {
    const auto norms = norms_run(o, sub);
    if (std::find(norms.begin(), norms.end(), "group") == norms.end())
      throw Error("--groups sets GroupNorm's number of groups, but no run uses GroupNorm (" +
                  std::string(sub->get_name() == "train" ? "--norm group" : "add group to --norms") + ")");
  }
}

// Flags that the chosen settings would silently ignore: an error naming both, before any data is
// read or any file written.
void check_conflicts(const Options& o, CLI::App* sub) {
  auto given = [&](const char* flag) { return sub->get_option_no_throw(flag) != nullptr && sub->count(flag) > 0; };
  if (o.quick && o.full) throw Error("--quick and --full cannot be used together");
  if (sub->get_name() == "sweep") {
    const std::string over = "--over " + o.over + (given("--over") ? "" : " (the default)");
    auto reject = [&](const char* flag, const std::string& why) {
      if (given(flag)) throw Error(std::string(flag) + " cannot be used with " + over + ": " + why);
    };
    if (o.over == "lr") {
      reject("--batch-sizes", "it sets the batch sizes of --over batch (--batch-size sets the batch of every run)");
      reject("--reference-batch", "it scales the learning rate with the batch size of --over batch");
    } else {
      reject("--lrs", "it sets the learning rates of --over lr (--lr sets the rate at --reference-batch)");
      reject("--batch-size", "every run trains at one of --batch-sizes");
    }
    if (o.full && o.over != "batch") throw Error("--full cannot be used with " + over + ": --full is the batch-size protocol");
    if (o.train.distributed && o.over != "batch")
      throw Error("--distributed cannot be used with " + over + ": it sweeps the per-rank batch size");
    if (o.train.distributed && o.full)
      throw Error("--full cannot be used with --distributed: --full is the one-process protocol (give --train-limit, "
                  "--epochs, --seeds and --batch-sizes for a larger local-vs-sync experiment)");
    if (!o.train.distributed && given("--ranks"))
      throw Error("--ranks goes with --distributed (the local-BatchNorm vs SyncBatchNorm experiment)");
  }
  if (o.full && o.data.name != "fashion-mnist")
    throw Error("--full cannot be used with --dataset " + o.data.name + ": --full is the Fashion-MNIST protocol "
                "(all 60k training images)");
  check_applicable(o, sub);
}

// --arch and the flags that go with one kind of model only.
void check_architecture(Options& o, CLI::App* sub) {
  auto given = [&](const char* flag) { return sub->get_option_no_throw(flag) != nullptr && sub->count(flag) > 0; };
  ModelSpec& m = o.train.model;
  if (m.arch == "mlp") {
    if (given("--model")) throw Error("--model describes a convolutional model: use it with --arch cnn (--hidden sets the MLP's widths)");
    if (given("--image-shape")) throw Error("--image-shape goes with --arch cnn (an MLP reads the features as they are)");
    return;
  }
  if (sub->get_name() == "study")
    throw Error("study runs its MLP and its CNN parts itself: --arch cnn goes with train, compare and sweep");
  if (given("--hidden")) throw Error("--hidden sets the widths of an MLP: with --arch cnn, describe the layers with --model");
  if (m.image.empty()) {
    if (o.data.name != "fashion-mnist")
      throw Error("--arch cnn needs the image shape of a sample: give --image-shape C,H,W (e.g. 1,28,28 for "
                  "784 grayscale pixels); the " + o.data.name + " data set has no image shape of its own");
    m.image = {1, 28, 28};
  }
  if (!o.eval_batch_given) o.train.eval_batch = kCnnEvalBatch;
}

// The output folder, quietness and command line of a command.
StudyContext context_of_command(const Options& o, int argc, char** argv) {
  StudyContext c;
  c.out = o.out;
  c.quiet = o.quiet;
  for (int i = 0; i < argc; ++i) c.command_line += (i ? " " : "") + std::string(i == 0 ? "normlab" : argv[i]);
  return c;
}

StudyContext context(const Options& o, const Splits& s, int argc, char** argv) {
  StudyContext c = context_of_command(o, argc, argv);
  c.dataset = describe(o.data, s);
  c.checkpoint_data = data_metadata(o.data, s);
  return c;
}

// The study's CNN part (Fashion-MNIST without --quick).
void add_cnn_part_options(CLI::App* a, Options& o) {
  a->add_flag("--no-cnn", o.no_cnn, "leave out the CNN part (Fashion-MNIST without --quick only)");
  a->add_option("--cnn-train-limit", o.cnn_train_limit, "the CNN part trains on the first N training images")
      ->check(whole(1, kMaxInt))
      ->capture_default_str();
  a->add_option("--cnn-epochs", o.cnn_epochs, "epochs of the CNN comparison (its sweep: 1)")
      ->check(whole(1, 1000))
      ->capture_default_str();
  a->add_option("--cnn-batch-size", o.cnn_batch_size,
                "batch size of the CNN comparison (its lr: --lr x batch / 128, as in the sweeps)")
      ->check(whole(1, kMaxBatch))
      ->capture_default_str();
  a->add_option("--cnn-batch-sizes", o.cnn_batch_sizes, "batch sizes of the CNN sweep")
      ->delimiter(',')
      ->check(whole(1, kMaxBatch))
      ->capture_default_str();
  a->add_option("--cnn-norms", o.cnn_norms, "norms of the CNN comparison")->delimiter(',')->capture_default_str();
  a->add_option("--cnn-sweep-norms", o.cnn_sweep_norms, "norms of the CNN sweep (1 seed: the first of --seeds)")
      ->delimiter(',')
      ->capture_default_str();
}

struct Subcommands {
  CLI::App *help = nullptr, *predict = nullptr, *eval = nullptr, *demo = nullptr, *train = nullptr, *compare = nullptr, *sweep = nullptr, *study = nullptr;
};

// Every subcommand and its flags, all writing into o.
Subcommands add_subcommands(CLI::App& app, Options& o) {
  const std::string norms = "norms to compare: " + norm_names();
  Subcommands s;
  app.set_version_flag("--version", std::string("normlab ") + NORMLAB_VERSION + " (commit " + git_commit() + ")",
                       "print the version and the git commit it was built from, and exit");
  s.help = app.add_subcommand("help", "print the help of normlab or of one subcommand (normlab help train)");
  s.help->add_option("subcommand", o.help_topic, "the subcommand: demo, train, compare, sweep or study")
      ->check(CLI::IsMember({"demo", "train", "compare", "sweep", "study", "eval", "predict", "help"}));
  s.demo = app.add_subcommand("demo", "train an MLP on XOR by hand and print the loss going down");
  s.demo->add_option("--steps", o.demo_steps, "SGD steps")->check(whole(1, 10000000));

  s.train = app.add_subcommand("train", "train one model: metrics to the terminal and CSV, a checkpoint");
  add_data_options(s.train, o);
  add_train_options(s.train, o);
  s.train->add_option("--norm", o.norm, "norm in the hidden layers: " + norm_names());
  s.train->add_option("--seed", o.seed, "seed of the initialization and the batch order")->check(seed_value());
  s.train->add_flag("--quick", o.quick, "a small synthetic preset (seconds)");
  s.train->add_flag("--distributed", o.train.distributed,
                    "data-parallel training over the processes of an mpirun job (mpirun -np 2 normlab train "
                    "--distributed ...): --batch-size is the global batch, each rank trains on its slice, gradients "
                    "are averaged over the ranks; rank 0 writes the results (--norm syncbatch: BatchNorm over the "
                    "global batch)");
  s.train->add_option("--checkpoint-every", o.checkpoint_every,
                      "write a checkpoint (model, optimizer, position in the data) to <out>/checkpoint after every N "
                      "epochs; one is also written when Ctrl-C stops the run")
      ->check(whole(1, kMaxInt))
      ->default_str("");
  s.train->add_option("--resume", o.resume_dir,
                      "continue a stopped run from its last checkpoint, with the same flags: the one in --out (or "
                      "the one a killed run left beside it), or the one in DIR; the results are those of a run "
                      "that never stopped")
      ->expected(0, 1)
      ->type_name("[DIR]")
      ->default_str("");
  s.train->add_option("--init-from", o.train.init_from,
                      "start from the weights in this safetensors file (a model.safetensors of the same model)")
      ->check(CLI::ExistingFile)
      ->default_str("");
  add_output_options(s.train, o);

  s.compare = app.add_subcommand("compare", "convergence: the same model under each norm, several seeds");
  add_data_options(s.compare, o);
  add_train_options(s.compare, o);
  s.compare->add_option("--norms", o.norms, norms)->delimiter(',');
  s.compare->add_option("--seeds", o.seeds, "seeds")->delimiter(',')->check(seed_value());
  s.compare->add_option("--target", o.target, "target accuracy for steps/epochs-to-target")->check(real(0, 1));
  s.compare->add_flag("--quick", o.quick, "a small synthetic preset (seconds)");
  add_output_options(s.compare, o);
  add_resume(s.compare, o);

  s.sweep = app.add_subcommand("sweep", "sensitivity: final accuracy against batch size or learning rate");
  add_data_options(s.sweep, o);
  add_train_options(s.sweep, o);
  s.sweep->add_option("--over", o.over, "what to sweep: batch or lr")->check(CLI::IsMember({"batch", "lr"}));
  add_batch_sizes(s.sweep, o, "batch sizes (--over batch)");
  preset_default(s.sweep->add_option("--lrs", o.lrs, "learning rates (--over lr)")->delimiter(',')->check(non_negative()),
                 "0.01,0.1,1 with --quick, else 0.01,0.03,0.1,0.3,1,3");
  s.sweep->add_option("--reference-batch", o.reference_batch, "lr = --lr x batch / this (linear scaling)")
      ->check(whole(1, kMaxBatch));
  s.sweep->add_option("--norms", o.norms, norms)->delimiter(',');
  preset_default(s.sweep->add_option("--seeds", o.seeds, "seeds")->delimiter(',')->check(seed_value()),
                 "0,1,2,3,4 with --full, else 0,1");
  s.sweep->add_flag("--distributed", o.train.distributed,
                    "in an mpirun job: BatchNorm with each rank's own statistics against SyncBatchNorm (and the "
                    "other --norms) in data-parallel runs over --ranks processes at per-rank batches --batch-sizes, "
                    "beside one process at the per-rank and the global batch (default --norms "
                    "batch,syncbatch,layer,group, --batch-sizes 2,4,8)");
  s.sweep->add_option("--ranks", o.ranks,
                      "--distributed: the numbers of processes a run trains over, each dividing the mpirun job's "
                      "(1: one process)")
      ->delimiter(',')
      ->check(whole(1, 1 << 20))
      ->default_str("every divisor of the job's size, e.g. 1,2,4 for mpirun -np 4");
  s.sweep->add_flag("--quick", o.quick, "a small synthetic preset (seconds)");
  s.sweep->add_flag("--full", o.full, "the complete protocol: all 60k images, 5 seeds, batch 2..256");
  add_output_options(s.sweep, o);
  add_resume(s.sweep, o);

  s.study = app.add_subcommand("study", "the default study (make run): compare + batch-size sweep, one report");
  add_data_options(s.study, o);
  add_train_options(s.study, o);
  s.study->add_option("--norms", o.norms, norms)->delimiter(',');
  s.study->add_option("--seeds", o.seeds, "seeds")->delimiter(',')->check(seed_value());
  add_batch_sizes(s.study, o, "batch sizes of the sweep");
  s.study->add_option("--target", o.target, "target accuracy of the comparison")->check(real(0, 1));
  preset_default(s.study->add_option("--sweep-train-limit", o.sweep_train_limit,
                                     "the sweep trains on the first N training samples (0: all)")
                     ->check(whole(0, kMaxInt)),
                 "20000 on fashion-mnist without --quick, else 0");
  add_cnn_part_options(s.study, o);
  s.study->add_flag("--quick", o.quick, "a small synthetic preset (seconds)");
  add_output_options(s.study, o);
  add_resume(s.study, o);

  s.predict = app.add_subcommand("predict", "a saved model's class probabilities for each row of a CSV file");
  s.predict->add_option("--checkpoint", o.checkpoint, "model.safetensors written by normlab train (trained with --csv)")
      ->required()
      ->check(non_empty());
  s.predict->add_option("--csv", o.input_csv, "CSV file with the model's feature columns (the label column optional)")
      ->required()
      ->check(non_empty());
  s.predict->add_option("--out", o.out, "output CSV file: line, predicted class, label, p_<class>")
      ->check(non_empty())
      ->default_str("out/predict/predictions.csv");
  s.predict->add_flag("--quiet", o.quiet, "print nothing");
  add_csv_format_options(s.predict, o.data.csv_format);

  s.eval = app.add_subcommand("eval", "a saved model's accuracy, per-class accuracy and confusion matrix");
  s.eval->add_option("--checkpoint", o.checkpoint, "model.safetensors written by normlab train")->required()->check(non_empty());
  s.eval->add_option("--csv", o.input_csv, "labelled CSV file (models trained on a CSV file; Fashion-MNIST models: "
                                          "the test set without it)")
      ->check(non_empty());
  add_csv_format_options(s.eval, o.data.csv_format);
  s.eval->add_option("--data-dir", o.data.fashion_dir, "folder of the Fashion-MNIST files (*-ubyte.gz)")->check(non_empty());
  s.eval->add_option("--eval-batch", o.train.eval_batch, "evaluation batch size")->check(whole(1, kMaxBatch))->capture_default_str();
  add_output_options(s.eval, o);
  return s;
}

// Presets and checks after parsing, before any data is read.
void finish_options(Options& o, CLI::App* sub) {
  auto given = [&](const char* flag) { return sub->get_option_no_throw(flag) != nullptr && sub->count(flag) > 0; };
  if (given("--csv") && !given("--dataset")) o.data.name = "csv";  // --csv FILE alone names the data set
  if (o.full) apply_full(o, sub);
  if (o.quick) apply_quick(o, sub);
  else if (o.data.name == "fashion-mnist") apply_fashion_defaults(o, sub, sub->get_name() == "study");
  check_conflicts(o, sub);
  if (o.train.distributed && !dist::launched())
    throw Error("--distributed trains over the processes of an mpirun job: start it as mpirun -np 2 normlab " +
                sub->get_name() + " --distributed ... (as root also with OMPI_ALLOW_RUN_AS_ROOT=1 "
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1, and --oversubscribe for more ranks than cores)");
  if (o.train.distributed && sub->get_name() == "sweep") {  // the local-vs-sync experiment's defaults
    if (!given("--batch-sizes")) o.batch_sizes = {2, 4, 8};
    if (!given("--norms")) o.norms = {"batch", "syncbatch", "layer", "group"};
    if (o.ranks.empty())
      for (int w = 1; w <= dist::job_size(); ++w)
        if (dist::job_size() % w == 0) o.ranks.push_back(w);
  }
  // The optimizer's own flags, and PyTorch's defaults for Adam and AdamW.
  const std::string opt = "--optimizer " + o.train.optimizer + (given("--optimizer") ? "" : " (the default)");
  for (const char* flag : {"--momentum", "--nesterov"})
    if (o.train.optimizer != "sgd" && given(flag))
      throw Error(std::string(flag) + " goes with --optimizer sgd, not " + opt + " (--betas sets Adam's moments)");
  for (const char* flag : {"--betas", "--eps"})
    if (o.train.optimizer == "sgd" && given(flag))
      throw Error(std::string(flag) + " goes with --optimizer adam or adamw, not " + opt);
  if (o.train.optimizer != "sgd") {
    if (!given("--lr")) o.train.lr = 1e-3;
    if (o.train.optimizer == "adamw" && !given("--weight-decay")) o.train.weight_decay = 1e-2;
    if (!o.adam_betas.empty()) o.train.beta1 = o.adam_betas[0], o.train.beta2 = o.adam_betas[1];
  }
  if (o.train.model.hidden.empty()) o.train.model.hidden = {64, 64};
  o.eval_batch_given = sub->get_option_no_throw("--eval-batch") != nullptr && sub->count("--eval-batch") > 0;
  check_architecture(o, sub);
  if (sub->get_name() == "train" && sub->count("--resume") > 0) {
    const fs::path where = o.resume_dir.empty() ? fs::path(o.out) : fs::path(o.resume_dir);
    const auto found = find_checkpoint(where);
    if (!found)
      throw Error("--resume: no checkpoint in " + where.string() + " (a train run writes one to <out>/checkpoint "
                  "with --checkpoint-every N, or when Ctrl-C stops it)");
    read_checkpoint(*found);  // a damaged one is a usage error, before anything is written
    o.resume = true;
  } else if (o.resume) {
    const fs::path records = fs::path(o.out) / (sub->get_name() == "study" ? "compare/records.json" : "records.json");
    if (!fs::exists(records))
      throw Error("--resume: " + o.out + " holds no results to continue (" + records.string() + " is missing)");
  }
}

// The comparison's settings; activation statistics about 50 times per run unless --stats-every.
CompareConfig compare_config(const Options& o, const Splits& data) {
  CompareConfig cc{.base = o.train, .norms = o.norms, .seeds = o.seeds, .target_accuracy = o.target};
  validate(cc.base, data);  // before steps_per_run divides by the batch size
  if (cc.base.stats_every == 0) cc.base.stats_every = std::max<int64_t>(1, steps_per_run(cc.base, data) / 50);
  return cc;
}

DdpSweepConfig ddp_sweep_config(const Options& o) {
  DdpSweepConfig c{.base = o.train, .per_rank_batches = o.batch_sizes, .ranks = o.ranks,
                   .reference_batch = o.reference_batch, .norms = o.norms, .seeds = o.seeds};
  c.base.stats_every = 0;
  c.base.distributed = false;  // set per run (more than one rank)
  return c;
}

SweepConfig sweep_config(const Options& o) {
  SweepConfig sc{.base = o.train, .over = o.over, .batch_sizes = o.batch_sizes, .lrs = o.lrs,
                 .reference_batch = o.reference_batch, .norms = o.norms, .seeds = o.seeds};
  sc.base.stats_every = 0;
  return sc;
}

// The study's CNN part (on Fashion-MNIST without --quick, unless --no-cnn): the comparison
// (--cnn-norms, --seeds, --cnn-epochs, --cnn-batch-size with lr = --lr x batch / 128: 312 steps
// per epoch at 32, where 128 gave 78, too few to tell the norms apart) and a one-seed batch-size
// sweep of 1 epoch (--cnn-sweep-norms,
// --cnn-batch-sizes; lr = --lr x batch / 128, BatchNorm evaluated three ways) on the first
// --cnn-train-limit training images.
StudyConfig study_config(const Options& o, const Splits& data) {
  StudyConfig st{compare_config(o, data), sweep_config(o), o.sweep_train_limit};
  st.cnn = !o.quick && !o.no_cnn && o.data.name == "fashion-mnist";
  if (!st.cnn) return st;
  TrainConfig base = o.train;
  base.model.arch = "cnn", base.model.image = {1, 28, 28}, base.model.layers = kDefaultCnn;
  if (!o.eval_batch_given) base.eval_batch = kCnnEvalBatch;
  base.epochs = o.cnn_epochs;
  Splits cnn = data;
  if (o.cnn_train_limit < data.train.size()) cnn.train = data::first_n(data.train, o.cnn_train_limit);
  st.cnn_train_limit = o.cnn_train_limit;
  TrainConfig cmp = base;
  cmp.batch_size = o.cnn_batch_size;
  cmp.lr = o.train.lr * static_cast<double>(o.cnn_batch_size) / 128.0;
  st.cnn_compare = CompareConfig{.base = cmp, .norms = o.cnn_norms, .seeds = o.seeds, .target_accuracy = o.target};
  validate(cmp, cnn);
  if (cmp.stats_every == 0) st.cnn_compare.base.stats_every = std::max<int64_t>(1, steps_per_run(cmp, cnn) / 50);
  base.epochs = 1, base.stats_every = 0;
  st.cnn_sweep = SweepConfig{.base = base, .over = "batch", .batch_sizes = o.cnn_batch_sizes, .reference_batch = 128,
                             .norms = o.cnn_sweep_norms, .seeds = {o.seeds.front()}};
  return st;
}

TrainConfig train_config(const Options& o, const Splits& data) {
  TrainConfig c = o.train;
  c.model.norm = o.norm;
  c.seed = o.seed;
  validate(c, data);
  if (c.stats_every == 0) c.stats_every = std::max<int64_t>(1, steps_per_run(c, data) / 50);
  if (!c.init_from.empty()) {  // the weights must fit the model: checked before anything is written
    autograd::Generator gen(c.seed);
    ModelSpec spec = c.model;
    spec.inputs = data.train.features(), spec.outputs = data.train.num_classes;
    const Model m = build_model(spec, gen);
    try {
      nn::load_module(c.init_from, *m.net);
    } catch (const Error& e) {
      throw Error(std::string("--init-from: ") + e.what());
    }
  }
  return c;
}

// Every run the subcommand will make, checked against the data before anything is written: a
// setting that cannot train is a usage error.
void check_settings(const Options& o, const std::string& name, const Splits& data) {
  try {
    if (name == "train") train_config(o, data);
    else if (name == "compare") compare_runs(compare_config(o, data), data);
    else if (name == "sweep" && o.train.distributed) ddp_sweep_runs(ddp_sweep_config(o), data);
    else if (name == "sweep") sweep_runs(sweep_config(o), data);
    else validate(study_config(o, data), data);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

// Runs the subcommand with its outputs in set.dir(); returns its report.
Report run_in(const Options& o, const std::string& name, const Splits& data, const StudyContext& ctx) {
  if (name == "train") return run_train(train_config(o, data), data, ctx);
  if (name == "compare") return run_compare(compare_config(o, data), data, ctx);
  if (name == "sweep" && o.train.distributed) return run_ddp_sweep(ddp_sweep_config(o), data, ctx);
  if (name == "sweep") return run_sweep(sweep_config(o), data, ctx);
  return run_study(study_config(o, data), o.data, data, ctx);
}

// Loads the data, runs the parsed subcommand (not demo) into a result set that replaces --out as
// a whole at the end, and returns the exit status.
int run_subcommand(Options& o, CLI::App* sub, int argc, char** argv) {
  const std::string name = sub->get_name();
  if (o.data.csv_format.task == data::Task::Regression && (name == "sweep" || name == "study"))
    throw UsageError("--task regression goes with train and compare (and eval, predict): the " + name +
                     " reports accuracy against batch size, a classification protocol");
  const Splits data = load_data(o.data);
  o.train.model.inputs = data.train.features();
  o.train.model.outputs = data.train.is_classification() ? data.train.num_classes : 1;
  o.train.task = data.train.is_classification() ? "classification" : "regression";
  check_settings(o, name, data);
  install_interrupt_handler();
  if (name == "train" && o.train.distributed && dist::rank() != 0) {  // the same training as rank 0, which alone writes the results
    train_run(train_config(o, data), data);
    return kExitOk;
  }
  if (dist::rank() != 0) {  // compare, sweep, study: this rank's share of the runs; rank 0 writes the results
    StudyContext ctx = context(o, data, argc, argv);
    ctx.quiet = true;
    ctx.out = fs::temp_directory_path() / ("normlab-rank" + std::to_string(dist::rank()) + "-" + std::to_string(::getpid()));
    if (o.resume) ctx.resume_from = fs::absolute(o.out);
    prepare_output_dir(ctx.out);
    run_in(o, name, data, ctx);
    std::error_code ec;
    fs::remove_all(ctx.out, ec);
    return kExitOk;
  }
  ResultSet set(o.out);
  StudyContext ctx = context(o, data, argc, argv);
  ctx.out = set.dir();
  if (o.resume) ctx.resume_from = set.out();
  ctx.checkpoint_every = o.checkpoint_every;
  if (name == "train" && o.resume)
    ctx.resume_checkpoint = *find_checkpoint(o.resume_dir.empty() ? set.out() : fs::path(o.resume_dir));
  const Report rep = run_in(o, name, data, ctx);
  set.commit();
  // A killed run's partial folder that this one continued: its results are now in --out.
  if (const fs::path from = ctx.resume_checkpoint.parent_path();
      !from.empty() && from.filename().string().find(".normlab-partial-") != std::string::npos) {
    std::error_code ec;
    fs::remove_all(from, ec);
  }
  std::printf("normlab: results in %s%s\n", o.out.c_str(), name == "train" ? "" : " (report.md)");
  if (rep.interrupted) {
    if (name == "train")
      std::fprintf(stderr, "normlab: interrupted: the finished epochs and the model at the interruption are in %s; the same command with --resume continues the run\n",
                   o.out.c_str());
    else
      std::fprintf(stderr, "normlab: interrupted: %zu of %zu runs finished, written to %s; the same command with "
                   "--resume trains the rest\n", rep.runs_done, rep.runs_total, o.out.c_str());
    return kExitInterrupted;
  }
  if (!rep.diverged) return kExitOk;
  std::fprintf(stderr, "normlab: the run diverged (its loss became NaN or infinite): no model was saved; its "
               "weights are in model.diverged.safetensors (exit status %d)\n", kExitDiverged);
  return kExitDiverged;
}

}  // namespace

namespace {

// The command line: its options and subcommands, parsed and checked.
struct Parsed {
  CLI::App app{"normlab: train small models on a CPU and see how BatchNorm and LayerNorm behave", "normlab"};
  Options o;
  Subcommands subs;
  CLI::App* sub = nullptr;  // the parsed subcommand; nullptr after --help
  int help_status = 0;      // --help's exit status
};

// Parses argv and checks the options (presets, conflicts); throws UsageError.
void parse(Parsed& p, int argc, char** argv) {
  p.app.require_subcommand(1);
  p.app.option_defaults()->always_capture_default();
  p.subs = add_subcommands(p.app, p.o);
  try {
    p.app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    p.help_status = p.app.exit(e);
    return;
  } catch (const CLI::ParseError& e) {
    const auto parsed = p.app.get_subcommands();
    throw UsageError(std::string(e.what()) + " (see: normlab " + (parsed.empty() ? "" : parsed.front()->get_name() + " ") +
                     "--help)");
  }
  p.sub = p.app.get_subcommands().front();
  if (p.sub == p.subs.predict && p.sub->count("--out") == 0) p.o.out = "out/predict/predictions.csv";
  if (p.sub == p.subs.demo || p.sub == p.subs.help || p.sub == p.subs.predict) return;
  if (p.sub->count("--out") == 0) p.o.out = "out/" + p.sub->get_name();
  if (p.sub == p.subs.eval) return;
  try {
    finish_options(p.o, p.sub);
  } catch (const UsageError&) {
    throw;
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

std::string check_command_line(int argc, char** argv) {
  Parsed p;
  parse(p, argc, argv);
  return p.sub ? p.sub->get_name() : "";
}

int run_cli(int argc, char** argv) {
  if (dist::launched()) dist::init();  // started by mpirun: join the job
  Parsed p;
  parse(p, argc, argv);
  if (!p.sub) return p.help_status;
  const bool split = p.sub == p.subs.compare || p.sub == p.subs.sweep || p.sub == p.subs.study;
  if (dist::world_size() > 1 && !split && !(p.sub == p.subs.train && p.o.train.distributed))
    throw UsageError("started by mpirun with " + std::to_string(dist::world_size()) + " processes: normlab train "
                     "needs --distributed (one model over the processes); compare, sweep and study split their runs "
                     "over them; " + p.sub->get_name() + " runs in one process");
  if (p.sub == p.subs.demo) return run_demo(p.o.demo_steps);
  if (p.sub == p.subs.predict) return run_predict(p.o.checkpoint, p.o.input_csv, p.o.data.csv_format, p.o.out, p.o.quiet);
  autograd::set_num_threads(p.o.threads);
  if (p.sub == p.subs.eval) {
    ResultSet set(p.o.out);
    StudyContext ctx = context_of_command(p.o, argc, argv);
    ctx.out = set.dir();
    run_eval(EvalOptions{.checkpoint = p.o.checkpoint, .csv = p.o.input_csv, .fashion_dir = p.o.data.fashion_dir,
                         .eval_batch = p.o.train.eval_batch, .csv_format = p.o.data.csv_format},
             ctx);
    set.commit();
    std::printf("normlab: results in %s (report.md)\n", p.o.out.c_str());
    return kExitOk;
  }
  if (p.sub == p.subs.help) {
    // The formatter directly: App::help() would print the help of the parsed subcommand, `help`.
    const auto format = p.app.get_formatter();
    const std::string help = p.o.help_topic.empty()
                                 ? format->make_help(&p.app, "normlab", CLI::AppFormatMode::Normal)
                                 : format->make_help(p.app.get_subcommand(p.o.help_topic), "normlab " + p.o.help_topic,
                                                     CLI::AppFormatMode::Normal);
    std::printf("%s", help.c_str());
    return kExitOk;
  }
  return run_subcommand(p.o, p.sub, argc, argv);
}

}  // namespace normlab::experiments
