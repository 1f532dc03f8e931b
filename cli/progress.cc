// Progress lines, interrupt handling and JSON text for the flashkm command.
#include "progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>

namespace flashkm::cli {
namespace {

volatile std::sig_atomic_t g_signals = 0;

extern "C" void on_signal(int sig) {
  g_signals = g_signals + 1;
  if (g_signals == 1) {
    static const char msg[] = "\nflashkm: stopping after this iteration; nothing will be written (again to abort)\n";
    const ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
  } else {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

}  // namespace

void install_interrupt_handler() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool interrupted() { return g_signals != 0; }

Progress::Progress(bool quiet, int max_iter, int n_init)
    : quiet_(quiet), tty_(isatty(STDERR_FILENO) != 0), max_iter_(max_iter), n_init_(n_init) {}

void Progress::phase(const std::string& what) {
  if (quiet_) return;
  done();
  std::fprintf(stderr, "%s\n", what.c_str());
}

bool Progress::iteration(const IterationStats& s) {
  if (s.init_run != run_) {
    run_ = s.init_run;
    run_seconds_ = 0;
  }
  run_seconds_ += s.seconds;
  if (!quiet_) {
    const double per = run_seconds_ / s.iteration;
    const double left = per * (max_iter_ - s.iteration);
    char run[32] = "";
    if (n_init_ > 1) std::snprintf(run, sizeof run, "run %d/%d  ", s.init_run + 1, n_init_);
    char line[256];
    std::snprintf(line, sizeof line,
                  "%siter %4d/%d  inertia %.6e  shift %.3e  changed %zu  distances %.3g%s  %.3f s/iter  ETA <= %s",
                  run, s.iteration, max_iter_, s.inertia, s.center_shift, s.labels_changed,
                  static_cast<double>(s.distances),
                  s.empty_relocated ? ("  relocated " + std::to_string(s.empty_relocated)).c_str() : "",
                  per, human_seconds(left).c_str());
    // The bar: iterations run against max_iter (a run usually converges before the end).
    show(static_cast<double>(s.iteration) / std::max(1, max_iter_), line);
  }
  return !interrupted();
}

void Progress::seeding(const SeedStats& s) {
  if (quiet_) return;
  // On a pipe or in a log, about ten lines a phase; on a terminal, at most ten updates a second.
  const auto now = std::chrono::steady_clock::now();
  const std::size_t every = std::max<std::size_t>(1, s.total / 10);
  const bool last = s.done == s.total;
  if (tty_ ? !last && now - last_seed_line_ < std::chrono::milliseconds(100) : !last && s.done % every != 0) return;
  last_seed_line_ = now;
  char run[32] = "";
  if (n_init_ > 1) std::snprintf(run, sizeof run, "run %d/%d  ", s.init_run + 1, n_init_);
  char line[256];
  std::snprintf(line, sizeof line, "%sseeding (%s) %zu/%zu %s  distances %.3g  %s  ETA %s", run, s.phase, s.done,
                s.total, std::strcmp(s.phase, "k-means||") == 0 ? "rounds" : "centres",
                static_cast<double>(s.distances), human_seconds(s.seconds).c_str(),
                human_seconds(s.seconds_left).c_str());
  show(static_cast<double>(s.done) / std::max<std::size_t>(1, s.total), line);
}

void Progress::show(double fraction, const std::string& line) {
  if (tty_) {
    constexpr int kWidth = 20;
    const int filled = std::clamp(static_cast<int>(fraction * kWidth), 0, kWidth);
    std::string bar(kWidth + 3, '.');
    bar.front() = '[';
    bar.replace(1, static_cast<std::size_t>(filled), static_cast<std::size_t>(filled), '#');
    bar.replace(kWidth + 1, 2, "] ");
    std::fprintf(stderr, "\r\033[K%s%s", bar.c_str(), line.c_str());
    live_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void Progress::done() {
  if (live_) {
    std::fputc('\n', stderr);
    live_ = false;
  }
}

std::string human_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::string human_seconds(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) % 3600 / 60);
  }
  return buf;
}

}  // namespace flashkm::cli
