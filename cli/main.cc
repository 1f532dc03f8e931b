// The flashkm command: fit / predict / info / demo over data files, streaming files larger
// than the memory limit (see README, "The flashkm command"). The subcommands live in
// commands/, one file each; this file wires them to CLI11 and maps errors to exit codes.
#include <CLI/CLI.hpp>
#include <exception>
#include <memory>
#include <vector>

#include "commands/commands.hpp"
#include "errors.hpp"
#include "progress.hpp"
#include "ranks.hpp"

namespace flashkm::cli {
namespace {

int run(int argc, char** argv) {
  CLI::App app{"flashkm: exact Lloyd k-means close to the hardware's limit, on files of any size.\n"
               "Inputs: .npy (float16/32/64, v1-3, either byte order, C or Fortran order), .fvecs, .bvecs,\n"
               "raw little-endian float32 (.raw/.bin/.f32, with --dim), .csv/.txt (small data).\n"
               "Outputs are .npy files written atomically. Exit codes: 0 ok, 1 data or I/O error, 2 usage error,\n"
               "130 interrupted.",
               "flashkm"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "flashkm 0.1.0");
  const std::vector<Command> commands = {add_fit(app), add_predict(app), add_info(app), add_demo(app)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  install_interrupt_handler();
  for (const Command& c : commands) {
    if (!c.app->parsed()) continue;
    const std::unique_ptr<Ranks> ranks = c.distributed() ? mpi_ranks(&argc, &argv) : single_process();
    try {
      return c.run(*ranks);
    } catch (...) {
      return ranks->fail(std::current_exception());
    }
  }
  return kExitUsage;  // unreachable: CLI11 requires one subcommand
}

}  // namespace
}  // namespace flashkm::cli

int main(int argc, char** argv) {
  try {
    return flashkm::cli::run(argc, argv);
  } catch (...) {
    return flashkm::cli::report_error(std::current_exception(), true);
  }
}
