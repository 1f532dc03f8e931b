// The subcommands of `flashkm`, one file each (fit.cc, predict.cc, info.cc, demo.cc). Each adds
// itself to the CLI11 app and returns what runs when it was chosen on the command line.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>

#include "ranks.hpp"

namespace flashkm::cli {

struct Command {
  CLI::App* app = nullptr;
  /// Runs the parsed command on `ranks`; returns the exit code.
  std::function<int(const Ranks& ranks)> run;
  /// Whether the parsed command runs on MPI ranks (fit --distributed).
  std::function<bool()> distributed = [] { return false; };
};

Command add_fit(CLI::App& app);
Command add_predict(CLI::App& app);
Command add_info(CLI::App& app);
Command add_demo(CLI::App& app);

}  // namespace flashkm::cli
