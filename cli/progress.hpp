// Progress lines on stderr (a live line on a terminal), interrupts, and human-readable sizes
// and durations.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "flashkm/options.hpp"

namespace flashkm::cli {

/// Prints one line per Lloyd iteration: iteration, inertia, centre shift, labels changed,
/// seconds per iteration and a bound on the time left (max_iter). On a terminal the line is
/// rewritten in place; otherwise (a pipe, a log file) each iteration gets its own line.
class Progress {
 public:
  Progress(bool quiet, int max_iter, int n_init);
  /// A phase that has no iterations of its own (reading, initialising).
  void phase(const std::string& what);
  /// The callback handed to fit(); returns false once an interrupt was requested.
  bool iteration(const IterationStats& s);
  /// The seeding callback handed to fit(): steps done, seconds so far and an estimate left.
  void seeding(const SeedStats& s);
  /// Ends a live line so that later output starts on a fresh line.
  void done();
  bool quiet() const { return quiet_; }

 private:
  bool quiet_;
  bool tty_;
  int max_iter_;
  int n_init_;
  bool live_ = false;
  int run_ = -1;
  std::chrono::steady_clock::time_point last_seed_line_{};
  void show(double fraction, const std::string& line);  // a live line with a bar, or a plain line
  double run_seconds_ = 0;
};

/// Installs SIGINT / SIGTERM handlers: the first signal asks the run to stop after the current
/// iteration (nothing is written), a second one ends the process at once.
void install_interrupt_handler();
bool interrupted();

/// "1.5 GiB", "12 MiB", "900 B".
std::string human_bytes(double bytes);
/// "2m05s", "1h02m", "0.42s".
std::string human_seconds(double s);

}  // namespace flashkm::cli
