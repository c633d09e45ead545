// gradscope: diagnostics for training runs, over saved runs. It links no LibTorch and no
// XGBoost (their libraries took most of a report's time to load): `gradscope demo` runs the
// gradscope-demo executable beside it (demo_launcher.cpp).
#include "cli_main.h"
#include "commands.h"

int main(int argc, char** argv) {
  using namespace gradscope::cli;
  return cli_main(argc, argv, [](CLI::App& app, int& exit_code) {
    add_demo_command(app, exit_code);
    add_report_command(app, exit_code);
    add_animate_command(app, exit_code);
    add_export_command(app, exit_code);
    add_diff_command(app, exit_code);
    add_ls_command(app, exit_code);
    add_html_command(app, exit_code);
    add_trees_command(app, exit_code);
    add_compress_command(app, exit_code);
    add_upgrade_command(app, exit_code);
    add_lsp_command(app, exit_code);
  });
}
