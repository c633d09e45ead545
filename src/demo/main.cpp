// gradscope-demo: the `gradscope demo` command on its own, since it trains with LibTorch and
// XGBoost and the run tool loads neither. `gradscope demo ...` execs it with its own argv, so
// it parses the very words the user typed and its exit code and signals are the user's.
#include "cli_main.h"
#include "commands.h"

int main(int argc, char** argv) {
  return gradscope::cli::cli_main(argc, argv, gradscope::cli::add_demo_command);
}
