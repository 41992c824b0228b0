// `normlab demo`: a tiny network trained by hand on XOR, its loss printed as it falls.
#include "experiments/commands/command.h"
#include "experiments/commands/flags.h"
#include "experiments/studies/demo.h"

namespace normlab::experiments::commands {

using namespace studies;  // what the commands run

namespace {

class DemoCommand : public Command {
 public:
  void add_flags(CLI::App& a) override {
    a.add_option("--steps", steps_, "SGD steps")->check(whole(1, 10000000));
  }
  int run(const Invocation&) override { return run_demo(steps_); }

 private:
  int steps_ = 300;
};

}  // namespace

std::unique_ptr<Command> make_demo_command() { return std::make_unique<DemoCommand>(); }

}  // namespace normlab::experiments::commands
