// The flashkm command: fit / predict / info / demo over data files, streaming files larger
// than the memory limit (see README, "The flashkm command").
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "demo.hpp"
#include "file_source.hpp"
#include "flashkm/flashkm.hpp"
#include "io/dataset.hpp"
#ifdef FLASHKM_HAVE_MPI
#include "flashkm/distributed.hpp"
#endif
#include "progress.hpp"
#include "report.hpp"

namespace flashkm::cli {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Peak resident set size of this process so far, in bytes.
std::size_t peak_rss() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::size_t>(ru.ru_maxrss) * 1024;
}

// Exit codes: 0 success, 1 data or I/O errors, 2 usage errors, 130 interrupted.
constexpr int kExitData = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInterrupted = 130;

// A command line that parses but makes no sense (exit code 2, as the library's
// InvalidArgument; deriving from it keeps the code when MPI ranks agree on the error).
class UsageError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// An error of the engine about the data, re-thrown with the file it came from.
template <class E>
[[noreturn]] void rethrow_in(const std::string& file, const E& e) {
  throw E(file + ": " + e.what());
}

// --distributed: the helpers below make one code path serve a single process and MPI ranks.
bool is_root(bool distributed) {
#ifdef FLASHKM_HAVE_MPI
  if (distributed) return mpi::rank() == 0;
#endif
  (void)distributed;
  return true;
}

// Runs fn; distributed, on every rank together, so that an error on one rank stops all of
// them with the same exception instead of leaving the others waiting.
void together(bool distributed, const std::function<void()>& fn) {
#ifdef FLASHKM_HAVE_MPI
  if (distributed) {
    mpi::collectively(fn);
    return;
  }
#endif
  (void)distributed;
  fn();
}

// The rows this process clusters: all of them, or this rank's even share.
std::pair<std::size_t, std::size_t> my_rows(bool distributed, std::size_t n) {
#ifdef FLASHKM_HAVE_MPI
  if (distributed) return mpi::shard_range(n);
#endif
  (void)distributed;
  return {0, n};
}

template <class T, class X>
KMeansResult<T> fit_rows(bool distributed, X&& x, const KMeansOptions& opt) {
#ifdef FLASHKM_HAVE_MPI
  if (distributed) return mpi::fit(std::forward<X>(x), opt);
#endif
  (void)distributed;
  return fit(std::forward<X>(x), opt);
}

// All labels, in row order, on the root (the other ranks get theirs back).
std::vector<std::int32_t> all_labels(bool distributed, std::vector<std::int32_t> mine) {
#ifdef FLASHKM_HAVE_MPI
  if (distributed) return mpi::gather_to_root(mine);
#endif
  (void)distributed;
  return mine;
}

// "512M", "2G", "1.5GiB", "100000" (bytes); powers of 1024.
std::size_t parse_size(const std::string& text) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw UsageError("--memory-limit '" + text + "' is not a size (e.g. 512M, 4G, 1.5GiB)");
  }
  std::string unit = text.substr(pos);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::toupper(c); });
  double mult = 1;
  if (unit == "" || unit == "B") mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TB" || unit == "TIB") mult = 1024.0 * 1024 * 1024 * 1024;
  else throw UsageError("--memory-limit '" + text + "': unknown unit '" + text.substr(pos) + "' (use K, M, G or T)");
  if (!(v > 0) || v * mult > 1e18) throw UsageError("--memory-limit '" + text + "' must be a positive size");
  return static_cast<std::size_t>(v * mult);
}

// Half of the memory available now (MemAvailable), the default memory limit; shared by the
// MPI ranks on this node when distributed.
std::size_t default_memory_limit(bool distributed);

std::size_t node_memory_half() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  std::size_t kb = 0;
  while (f >> key >> kb) {
    if (key == "MemAvailable:") return kb * 1024 / 2;
    f.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  return static_cast<std::size_t>(pages) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) / 2;
}

std::size_t default_memory_limit(bool distributed) {
#ifdef FLASHKM_HAVE_MPI
  if (distributed) return node_memory_half() / static_cast<std::size_t>(mpi::ranks_on_this_node());
#endif
  (void)distributed;
  return node_memory_half();
}

// Fails early, before a long run, when an output could not be written: its directory must
// exist and be writable, and it must not overwrite an input.
void check_output(const std::string& out, const std::vector<std::string>& inputs, const char* what) {
  if (out.empty()) return;
  const std::size_t slash = out.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : out.substr(0, slash);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    throw io::FileError(std::string(what) + " '" + out + "': directory '" + dir + "' does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    throw io::FileError(std::string(what) + " '" + out + "': directory '" + dir + "' is not writable");
  }
  if (stat(out.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    throw io::FileError(std::string(what) + " '" + out + "' is a directory");
  }
  for (const std::string& in : inputs) {
    struct stat a, b;
    if (!in.empty() && stat(in.c_str(), &a) == 0 && stat(out.c_str(), &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino) {
      throw UsageError(std::string(what) + " '" + out + "' is the input file '" + in + "'; refusing to overwrite it");
    }
  }
}

std::string describe(const io::DatasetInfo& info) {
  std::string s = std::string(io::format_name(info.format)) + " " + io::dtype_name(info.dtype);
  if (info.big_endian) s += " big-endian";
  if (info.fortran_order) s += " Fortran-order";
  return s;
}

// Bytes per row the engine and the command keep besides X: labels (run + best), distances,
// k-means++'s closest distances and its per-row ones, random init's keys, weights; seeding's
// owners (4), row norms (8) and recorded lowerings (at most one per two rows: 8) or k-means||'s
// round buffers (9).
std::size_t per_row_bytes(std::size_t elem, bool weights) {
  return 2 * sizeof(std::int32_t) + 3 * elem + 16 + 20 + (weights ? sizeof(double) : 0);
}

// How X will be held: in memory, or streamed with this many bytes of chunk buffers.
struct Plan {
  bool streamed = false;
  std::size_t buffer_bytes = 0;
  std::size_t limit = 0;
};

// x_elem: bytes per value of X held in memory (2 for float16 kept 16-bit, else sizeof(T)).
// Bytes per row of the pruning bounds (an upper bound and up to 64 group lower bounds, float
// each): the engine keeps them within a row of X itself (8 bytes for the narrowest rows).
std::size_t prune_row_bytes(std::size_t cols, std::size_t elem, bool prune) {
  return prune ? std::max<std::size_t>(8, std::min<std::size_t>(4 * 65, cols * elem)) : 0;
}

template <class T>
Plan plan_memory(const io::DatasetInfo& info, std::size_t limit, std::size_t k, bool weights, bool csv,
                 std::size_t x_elem = sizeof(T), bool prune = false) {
  Plan p;
  p.limit = limit;
  const double x_bytes = static_cast<double>(info.rows) * static_cast<double>(info.cols) * static_cast<double>(x_elem);
  const double fixed = static_cast<double>(info.rows) * static_cast<double>(per_row_bytes(sizeof(T), weights) +
                                                                            prune_row_bytes(info.cols, sizeof(T), prune)) +
                       8.0 * static_cast<double>(k) * static_cast<double>(info.cols) * 8.0;
  if (csv || x_bytes + fixed <= static_cast<double>(limit)) return p;
  p.streamed = true;
  const double left = static_cast<double>(limit) - fixed;
  const std::size_t granule = row_source_granule(info.cols, sizeof(T));
  const double need = 2.0 * static_cast<double>(granule) * static_cast<double>(info.cols) * sizeof(T);
  if (left < need) {
    throw UsageError("--memory-limit " + human_bytes(static_cast<double>(limit)) + " is too small for " +
                     info.path + " (" + std::to_string(info.rows) + " x " + std::to_string(info.cols) +
                     "): streaming needs " + human_bytes(fixed) + " for per-row arrays and centroids plus " +
                     human_bytes(need) + " for two chunks of " + std::to_string(granule) + " rows");
  }
  p.buffer_bytes = static_cast<std::size_t>(left);
  return p;
}

template <class T>
std::vector<T> read_all(const io::Dataset& data) {
  std::vector<T> X(data.rows() * data.cols());
  data.read_rows<T>(0, data.rows(), X.data());
  return X;
}

// Centroids from a .npy/.fvecs/... file as a K x D matrix of T.
template <class T>
std::vector<T> read_centroids(const std::string& path, std::size_t dim, std::size_t* k) {
  io::Dataset c(path);
  if (c.cols() != dim) {
    throw InvalidData(path + ": centroids have " + std::to_string(c.cols()) + " columns but the data has " +
                      std::to_string(dim));
  }
  *k = c.rows();
  return read_all<T>(c);
}

std::vector<std::uint64_t> cluster_sizes(const std::vector<std::int32_t>& labels, std::size_t k) {
  std::vector<std::uint64_t> sizes(k, 0);
  for (std::int32_t l : labels) ++sizes[static_cast<std::size_t>(l)];
  return sizes;
}

struct FitArgs {
  std::string input;
  std::optional<std::size_t> dim;
  std::size_t k = 0;
  std::string output = "centroids.npy";
  std::string labels;
  std::string init = "k-means++";
  int n_init = 1;
  int max_iter = 300;
  double tol = 1e-4;
  std::uint64_t seed = 0;
  int threads = 0;
  std::string weights;
  std::string memory_limit;
  std::string report;
  std::string target;
  std::string prune = "auto";
  bool json = false;
  bool quiet = false;
  bool distributed = false;
};

// The fit options the command line sets directly.
void set_run_options(const FitArgs& a, std::size_t k, KMeansOptions& opt) {
  opt.n_clusters = k;
  opt.n_init = a.n_init;
  opt.max_iter = a.max_iter;
  opt.tol = a.tol;
  opt.seed = a.seed;
  opt.n_threads = a.threads;
  opt.target = a.target;
  opt.prune = a.prune == "on" ? Prune::kOn : a.prune == "off" ? Prune::kOff : Prune::kAuto;
}

// --init's names (anything else is a file of initial centroids).
bool named_init(const std::string& init) { return init == "k-means++" || init == "k-means||" || init == "random"; }

InitMethod init_of(const std::string& init) {
  if (init == "k-means||") return InitMethod::kMeansParallel;
  return init == "random" ? InitMethod::kRandom : InitMethod::kMeansPlusPlus;
}

template <class T>
int run_fit(const FitArgs& a, const io::DatasetInfo& info) {
  const auto t_start = Clock::now();
  const bool dist = a.distributed;
  const bool root = is_root(dist);
  Progress progress(a.quiet || !root, a.max_iter, named_init(a.init) ? a.n_init : 1);
  const std::size_t n = info.rows, d = info.cols;
  // Plain variables, not a structured binding: lambdas below capture them (clang 14).
  const std::pair<std::size_t, std::size_t> range = my_rows(dist, n);
  const std::size_t r0 = range.first, r1 = range.second;

  // float16 data held in memory stays 16-bit (half the memory; AMX tiles where the CPU has
  // them), with bitwise the float32 result; streamed or distributed it is widened.
  const bool half_input = std::is_same_v<T, float> && info.dtype == io::DType::kF16 && !dist;
  KMeansOptions opt;
  std::vector<double> weights;
  std::vector<T> init_c;
  std::size_t k = a.k;
  std::size_t limit = 0;
  Plan plan;
  bool prune_off = false;  // the memory limit leaves no room for the pruning bounds
  together(dist, [&] {
    if (!a.weights.empty()) {
      weights = io::read_npy_vector(a.weights, n);
      weights = std::vector<double>(weights.begin() + static_cast<std::ptrdiff_t>(r0),
                                    weights.begin() + static_cast<std::ptrdiff_t>(r1));
      opt.sample_weight = weights;
    }
    if (named_init(a.init)) {
      opt.init = init_of(a.init);
    } else {
      std::size_t file_k = 0;
      init_c = read_centroids<T>(a.init, d, &file_k);
      if (k != 0 && k != file_k) {
        throw UsageError("-k " + std::to_string(k) + " but --init " + a.init + " holds " +
                         std::to_string(file_k) + " centroids");
      }
      k = file_k;
      opt.init = InitMethod::kExplicit;
      opt.init_centroids = MatrixView<T>(init_c.data(), k, d);
    }
    if (k == 0) throw UsageError("-k is required (or --init FILE.npy with the initial centroids)");
    if (k > n) {
      throw InvalidData(info.path + " has " + std::to_string(n) + " rows, fewer than k = " + std::to_string(k));
    }
    limit = a.memory_limit.empty() ? default_memory_limit(dist) : parse_size(a.memory_limit);
    io::DatasetInfo mine = info;
    mine.rows = r1 - r0;
    // The pruning bounds are planned for; where they would not fit, auto prunes less (not at
    // all) rather than fail.
    const bool csv = info.format == io::Format::kCsv;
    const std::size_t x_elem = half_input ? sizeof(std::uint16_t) : sizeof(T);
    try {
      plan = plan_memory<T>(mine, limit, k, !weights.empty(), csv, x_elem, a.prune != "off");
    } catch (const UsageError&) {
      if (a.prune != "auto") throw;
      plan = plan_memory<T>(mine, limit, k, !weights.empty(), csv, x_elem, false);
      prune_off = true;
    }
  });
  set_run_options(a, k, opt);
  if (prune_off) opt.prune = Prune::kOff;
  opt.callback = [&](const IterationStats& s) { return progress.iteration(s); };
  opt.seed_callback = [&](const SeedStats& s) { progress.seeding(s); };

  KMeansResult<T> result;
  StreamStats stream;
  double read_seconds = 0;
  if (!progress.quiet()) {
    progress.phase("flashkm fit: " + info.path + " (" + describe(info) + ", " + std::to_string(n) + " x " +
                   std::to_string(d) + ", " + human_bytes(static_cast<double>(info.file_size)) + "), k = " +
                   std::to_string(k) + ", init " + a.init + (plan.streamed ? ", streamed" : ", in memory") +
                   " (memory limit " + human_bytes(static_cast<double>(limit)) +
                   (dist ? " per rank" : "") + ")");
  }
  std::unique_ptr<FileRowSource<T>> src;
  std::vector<T> X;
  std::vector<std::uint16_t> H;
  const bool half = half_input && !plan.streamed;
  try {
    together(dist, [&] {
      if (plan.streamed) {
        src = std::make_unique<FileRowSource<T>>(info.path, a.dim, plan.buffer_bytes, r0, r1 - r0);
      } else {
        io::Dataset data(info.path, a.dim);
        const auto t0 = Clock::now();
        if (half) {
          H.resize((r1 - r0) * d);
          data.read_rows<std::uint16_t>(r0, r1, H.data());
        } else {
          X.resize((r1 - r0) * d);
          data.read_rows<T>(r0, r1, X.data());
        }
        read_seconds = since(t0);
      }
    });
    if constexpr (std::is_same_v<T, float>) {
      if (half) result = fit(HalfView{H.data(), r1 - r0, d, d, HalfType::kFloat16}, opt);
    }
    if (!half) {
      result = src ? fit_rows<T>(dist, *src, opt) : fit_rows<T>(dist, MatrixView<T>(X.data(), r1 - r0, d), opt);
    }
  } catch (const io::FormatError&) {
    throw;
  } catch (const InvalidData& e) {
    rethrow_in(info.path, e);
  }
  if (src) stream = src->stats();
  progress.done();
  result.labels = all_labels(dist, std::move(result.labels));
  // Distributed, the stop is a decision all ranks took together; a signal may reach ranks at
  // different moments.
  if ((!dist && interrupted()) || result.stop_reason == StopReason::kCallback) {
    if (root) std::fprintf(stderr, "flashkm: interrupted after %d iterations; no output written\n", result.n_iter);
    return kExitInterrupted;
  }
  if (!root) return 0;

  // Outputs as one set: all written to temporary files, then all renamed into place.
  const io::DType out_type = sizeof(T) == 8 ? io::DType::kF64 : io::DType::kF32;
  io::OutputSet outputs;
  outputs.add_npy(a.output, out_type, {k, d}, result.centroids.data());
  if (!a.labels.empty()) outputs.add_npy_int32(a.labels, {n}, result.labels.data());
  const std::vector<std::uint64_t> sizes = cluster_sizes(result.labels, k);
  const double seconds = since(t_start);
  if (!a.report.empty()) {
    ReportData r;
    r.input = info.path;
    r.format = describe(info);
    r.rows = n;
    r.cols = d;
    r.k = k;
    r.init = a.init;
    r.n_init = opt.init == InitMethod::kExplicit ? 1 : a.n_init;
    r.best_init = result.best_init;
    r.n_iter = result.n_iter;
    r.threads = a.threads;
    r.converged = result.converged;
    r.streamed = plan.streamed;
    r.stop_reason = to_string(result.stop_reason);
    r.inertia = result.inertia;
    r.seconds = seconds;
    r.init_seconds = result.init_seconds;
    r.target = result.target;
    r.history = result.history;
    r.cluster_sizes = sizes;
    outputs.add_text(a.report, render_report_html(r));
  }
  outputs.commit();

  double iter_seconds = 0;
  for (const auto& h : result.history) iter_seconds += h.seconds;
  const auto [min_size, max_size] = std::minmax_element(sizes.begin(), sizes.end());
  if (!progress.quiet()) {
    std::fprintf(stderr, "%s after %d iterations (%s); inertia %.9e; %.2f s in all, %.3f s per iteration\n",
                 result.converged ? "converged" : "stopped", result.n_iter, to_string(result.stop_reason),
                 result.inertia, seconds, result.n_iter ? iter_seconds / static_cast<double>(result.history.size()) : 0.0);
    std::fprintf(stderr, "cluster sizes: min %llu, max %llu; target %s\n",
                 static_cast<unsigned long long>(*min_size), static_cast<unsigned long long>(*max_size),
                 result.target.c_str());
    if (plan.streamed) {
      std::fprintf(stderr, "streamed %zu passes in chunks of %zu rows: read %s, reader busy %.2f s, compute waited %.2f s\n",
                   stream.passes, stream.chunk_rows, human_bytes(static_cast<double>(stream.bytes_read)).c_str(),
                   stream.read_seconds, stream.wait_seconds);
    }
    std::fprintf(stderr, "wrote %s (%zu x %zu %s)%s%s%s%s\n", a.output.c_str(), k, d, io::dtype_name(out_type),
                 a.labels.empty() ? "" : ", ", a.labels.c_str(), a.report.empty() ? "" : ", ", a.report.c_str());
  }
  if (a.json) {
    std::string j = "{\n  \"command\": \"fit\",\n";
    j += "  \"input\": " + json_string(info.path) + ",\n";
    j += "  \"format\": " + json_string(io::format_name(info.format)) + ",\n";
    j += "  \"dtype\": " + json_string(io::dtype_name(info.dtype)) + ",\n";
    j += "  \"rows\": " + std::to_string(n) + ",\n  \"cols\": " + std::to_string(d) + ",\n";
    j += "  \"k\": " + std::to_string(k) + ",\n  \"init\": " + json_string(a.init) + ",\n";
    j += "  \"n_init\": " + std::to_string(opt.init == InitMethod::kExplicit ? 1 : a.n_init) +
         ",\n  \"best_init\": " + std::to_string(result.best_init) + ",\n";
    j += "  \"n_iter\": " + std::to_string(result.n_iter) + ",\n";
    j += std::string("  \"converged\": ") + (result.converged ? "true" : "false") + ",\n";
    j += "  \"stop_reason\": " + json_string(to_string(result.stop_reason)) + ",\n";
    j += "  \"inertia\": " + json_number(result.inertia) + ",\n";
    j += "  \"seconds\": " + json_number(seconds) + ",\n";
    j += "  \"init_seconds\": " + json_number(result.init_seconds) + ",\n";
    j += "  \"read_seconds\": " + json_number(plan.streamed ? stream.read_seconds : read_seconds) + ",\n";
    j += "  \"target\": " + json_string(result.target) + ",\n";
    j += "  \"threads\": " + std::to_string(a.threads) + ",\n";
#ifdef FLASHKM_HAVE_MPI
    j += "  \"ranks\": " + std::to_string(dist ? mpi::size() : 1) + ",\n";
#else
    j += "  \"ranks\": 1,\n";
#endif
    j += std::string("  \"streamed\": ") + (plan.streamed ? "true" : "false") + ",\n";
    j += "  \"memory_limit\": " + std::to_string(limit) + ",\n";
    j += "  \"peak_rss\": " + std::to_string(peak_rss()) + ",\n";
    if (plan.streamed) {
      j += "  \"stream\": {\"passes\": " + std::to_string(stream.passes) + ", \"chunk_rows\": " +
           std::to_string(stream.chunk_rows) + ", \"bytes_read\": " + std::to_string(stream.bytes_read) +
           ", \"read_seconds\": " + json_number(stream.read_seconds) + ", \"wait_seconds\": " +
           json_number(stream.wait_seconds) + "},\n";
    }
    j += "  \"cluster_sizes\": [";
    for (std::size_t c = 0; c < k; ++c) {
      j += c ? ", " : "";
      j += std::to_string(sizes[c]);
    }
    j += "],\n  \"outputs\": {\"centroids\": " + json_string(a.output);
    if (!a.labels.empty()) j += ", \"labels\": " + json_string(a.labels);
    if (!a.report.empty()) j += ", \"report\": " + json_string(a.report);
    j += "},\n  \"history\": " + json_history(result.history) + "\n}\n";
    std::fputs(j.c_str(), stdout);
  }
  return 0;
}

// A 3-D .npy (B, N, D): B independent problems clustered at once (flashkm::fit_batch), in
// memory; centroids (B, K, D) and labels (B, N) out.
template <class T>
int run_fit_batch(const FitArgs& a, const io::DatasetInfo& info) {
  const auto t_start = Clock::now();
  if (a.distributed) throw UsageError("--distributed does not take a batch (3-D) input");
  if (!a.report.empty()) throw UsageError("--report is not available for a batch (3-D) input");
  const std::size_t B = info.batch, n = info.rows / info.batch, d = info.cols;
  KMeansOptions opt;
  std::vector<double> weights;
  if (!a.weights.empty()) {
    weights = io::read_npy_vector(a.weights, info.rows);
    opt.sample_weight = weights;
  }
  std::vector<T> init_c;
  std::size_t k = a.k;
  if (named_init(a.init)) {
    opt.init = init_of(a.init);
  } else {
    io::Dataset c(a.init);
    if (c.info().batch != B || c.cols() != d) {
      throw InvalidData(a.init + ": initial centroids must be a 3-D array (" + std::to_string(B) + ", K, " +
                        std::to_string(d) + ") for this batch; it holds " + std::to_string(c.info().batch) +
                        " x " + std::to_string(c.rows() / c.info().batch) + " x " + std::to_string(c.cols()));
    }
    const std::size_t file_k = c.rows() / B;
    if (k != 0 && k != file_k) {
      throw UsageError("-k " + std::to_string(k) + " but --init " + a.init + " holds " + std::to_string(file_k) +
                       " centroids per problem");
    }
    k = file_k;
    init_c = read_all<T>(c);
    opt.init = InitMethod::kExplicit;
  }
  if (k == 0) throw UsageError("-k is required (or --init FILE.npy with the initial centroids)");
  if (k > n) {
    throw InvalidData(info.path + " has " + std::to_string(n) + " rows per problem, fewer than k = " +
                      std::to_string(k));
  }
  set_run_options(a, k, opt);
  const std::size_t limit = a.memory_limit.empty() ? default_memory_limit(false) : parse_size(a.memory_limit);
  const Plan plan = plan_memory<T>(info, limit, k, !weights.empty(), false);
  if (plan.streamed) {
    throw UsageError("a batch (3-D) input is clustered in memory, but " + info.path + " needs more than --memory-limit " +
                     human_bytes(static_cast<double>(limit)));
  }
  if (!a.quiet) {
    std::fprintf(stderr, "flashkm fit: %s (%s, batch of %zu problems of %zu x %zu), k = %zu, init %s\n",
                 info.path.c_str(), describe(info).c_str(), B, n, d, k, a.init.c_str());
  }
  io::Dataset data(info.path, a.dim);
  const std::vector<T> X = read_all<T>(data);
  std::vector<KMeansResult<T>> results;
  try {
    results = fit_batch(BatchView<T>{X.data(), B, n, d}, opt,
                        init_c.empty() ? BatchView<T>{} : BatchView<T>{init_c.data(), B, k, d});
  } catch (const InvalidData& e) {
    rethrow_in(info.path, e);
  }
  if (interrupted()) {
    std::fprintf(stderr, "flashkm: interrupted; no output written\n");
    return kExitInterrupted;
  }
  std::vector<T> centroids;
  std::vector<std::int32_t> labels;
  centroids.reserve(B * k * d);
  labels.reserve(B * n);
  for (const auto& r : results) {
    centroids.insert(centroids.end(), r.centroids.begin(), r.centroids.end());
    labels.insert(labels.end(), r.labels.begin(), r.labels.end());
  }
  const io::DType out_type = sizeof(T) == 8 ? io::DType::kF64 : io::DType::kF32;
  io::OutputSet outputs;
  outputs.add_npy(a.output, out_type, {B, k, d}, centroids.data());
  if (!a.labels.empty()) outputs.add_npy_int32(a.labels, {B, n}, labels.data());
  outputs.commit();
  const double seconds = since(t_start);
  int converged = 0;
  for (const auto& r : results) converged += r.converged;
  if (!a.quiet) {
    std::fprintf(stderr, "%zu problems in %.2f s; %d converged; wrote %s (%zu x %zu x %zu %s)%s%s\n", B, seconds,
                 converged, a.output.c_str(), B, k, d, io::dtype_name(out_type), a.labels.empty() ? "" : ", ",
                 a.labels.c_str());
  }
  if (a.json) {
    std::string j = "{\n  \"command\": \"fit\",\n  \"input\": " + json_string(info.path) +
                    ",\n  \"batch\": " + std::to_string(B) + ",\n  \"rows\": " + std::to_string(n) +
                    ",\n  \"cols\": " + std::to_string(d) + ",\n  \"k\": " + std::to_string(k) +
                    ",\n  \"seconds\": " + json_number(seconds) + ",\n  \"members\": [";
    for (std::size_t b = 0; b < B; ++b) {
      j += b ? ",\n    " : "\n    ";
      j += "{\"inertia\": " + json_number(results[b].inertia) + ", \"n_iter\": " +
           std::to_string(results[b].n_iter) + ", \"converged\": " + (results[b].converged ? "true" : "false") +
           ", \"stop_reason\": " + json_string(to_string(results[b].stop_reason)) + "}";
    }
    j += "\n  ]\n}\n";
    std::fputs(j.c_str(), stdout);
  }
  return 0;
}

int cmd_fit(const FitArgs& a) {
  if (a.n_init < 1) throw UsageError("--n-init must be >= 1");
  if (a.max_iter < 1) throw UsageError("--max-iter must be >= 1");
  if (a.prune != "auto" && a.prune != "on" && a.prune != "off") {
    throw UsageError("--prune must be auto, on or off, not '" + a.prune + "'");
  }
  if (!(a.tol >= 0)) throw UsageError("--tol must be >= 0");
  if (a.threads < 0) throw UsageError("--threads must be >= 0 (0 = all cores)");
  if (!a.memory_limit.empty()) parse_size(a.memory_limit);
  io::DatasetInfo info;
  together(a.distributed, [&] {
    std::vector<std::string> inputs = {a.input, a.weights};
    if (!named_init(a.init)) inputs.push_back(a.init);
    check_output(a.output, inputs, "output");
    check_output(a.labels, inputs, "--labels");
    check_output(a.report, inputs, "--report");
    if (!a.labels.empty() && a.labels == a.output) throw UsageError("--labels and -o name the same file");
    info = io::probe(a.input, a.dim);
  });
  const bool f64 = info.dtype == io::DType::kF64 || info.format == io::Format::kCsv;
  if (info.batch > 1) return f64 ? run_fit_batch<double>(a, info) : run_fit_batch<float>(a, info);
  return f64 ? run_fit<double>(a, info) : run_fit<float>(a, info);
}

struct PredictArgs {
  std::string input;
  std::optional<std::size_t> dim;
  std::string centroids;
  std::string output;
  int threads = 0;
  std::string memory_limit;
  std::string target;
  bool json = false;
  bool quiet = false;
};

template <class T>
int run_predict(const PredictArgs& a, const io::DatasetInfo& info) {
  const auto t0 = Clock::now();
  std::size_t k = 0;
  const std::vector<T> C = read_centroids<T>(a.centroids, info.cols, &k);
  const MatrixView<T> cv(C.data(), k, info.cols);
  PredictOptions opt;
  opt.n_threads = a.threads;
  opt.target = a.target;
  const std::size_t limit = a.memory_limit.empty() ? default_memory_limit(false) : parse_size(a.memory_limit);
  const bool half_input = std::is_same_v<T, float> && info.dtype == io::DType::kF16;
  const Plan plan = plan_memory<T>(info, limit, k, false, info.format == io::Format::kCsv,
                                   half_input ? sizeof(std::uint16_t) : sizeof(T));
  std::vector<std::int32_t> labels;
  try {
    if (plan.streamed) {
      FileRowSource<T> src(info.path, a.dim, plan.buffer_bytes);
      labels = predict(src, cv, opt);
    } else if (half_input) {
      // float16 rows stay 16-bit in memory, as in fit.
      io::Dataset data(info.path, a.dim);
      const std::vector<std::uint16_t> H = read_all<std::uint16_t>(data);
      if constexpr (std::is_same_v<T, float>) {
        labels = predict(HalfView{H.data(), info.rows, info.cols, info.cols, HalfType::kFloat16}, cv, opt);
      }
    } else {
      io::Dataset data(info.path, a.dim);
      const std::vector<T> X = read_all<T>(data);
      labels = predict(MatrixView<T>(X.data(), info.rows, info.cols), cv, opt);
    }
  } catch (const io::FormatError&) {
    throw;
  } catch (const InvalidData& e) {
    rethrow_in(info.path, e);
  }
  if (interrupted()) {
    std::fprintf(stderr, "flashkm: interrupted; no output written\n");
    return kExitInterrupted;
  }
  io::write_npy_int32(a.output, {info.rows}, labels.data());
  const std::vector<std::uint64_t> sizes = cluster_sizes(labels, k);
  const double seconds = since(t0);
  if (!a.quiet) {
    std::fprintf(stderr, "flashkm predict: %zu rows of %s against %zu centroids%s in %.2f s; wrote %s\n",
                 info.rows, info.path.c_str(), k, plan.streamed ? " (streamed)" : "", seconds, a.output.c_str());
  }
  if (a.json) {
    std::string j = "{\n  \"command\": \"predict\",\n  \"input\": " + json_string(info.path) +
                    ",\n  \"rows\": " + std::to_string(info.rows) + ",\n  \"cols\": " + std::to_string(info.cols) +
                    ",\n  \"k\": " + std::to_string(k) + ",\n  \"seconds\": " + json_number(seconds) +
                    ",\n  \"streamed\": " + (plan.streamed ? "true" : "false") +
                    ",\n  \"memory_limit\": " + std::to_string(limit) + ",\n  \"peak_rss\": " +
                    std::to_string(peak_rss()) + ",\n  \"cluster_sizes\": [";
    for (std::size_t c = 0; c < k; ++c) {
      j += c ? ", " : "";
      j += std::to_string(sizes[c]);
    }
    j += "],\n  \"outputs\": {\"labels\": " + json_string(a.output) + "}\n}\n";
    std::fputs(j.c_str(), stdout);
  }
  return 0;
}

int cmd_predict(const PredictArgs& a) {
  if (a.threads < 0) throw UsageError("--threads must be >= 0 (0 = all cores)");
  if (!a.memory_limit.empty()) parse_size(a.memory_limit);
  check_output(a.output, {a.input, a.centroids}, "output");
  const io::DatasetInfo info = io::probe(a.input, a.dim);
  const io::DatasetInfo cinfo = io::probe(a.centroids);
  if (info.batch > 1 || cinfo.batch > 1) {
    throw UsageError("predict takes 2-D data and centroids; for a batch (3-D) input, predict each problem");
  }
  if (info.dtype == io::DType::kF64 || info.format == io::Format::kCsv || cinfo.dtype == io::DType::kF64) {
    return run_predict<double>(a, info);
  }
  return run_predict<float>(a, info);
}

struct InfoArgs {
  std::string input;
  std::optional<std::size_t> dim;
  bool json = false;
};

int cmd_info(const InfoArgs& a) {
  const io::DatasetInfo info = io::probe(a.input, a.dim);
  io::Dataset data(a.input, a.dim);
  // One streamed pass in bounded memory: min, max, mean and standard deviation of all values,
  // the mean row norm, and the first non-finite value.
  const std::size_t d = info.cols;
  const std::size_t step = std::max<std::size_t>(1, (std::size_t{32} << 20) / (d * sizeof(double)));
  std::vector<double> buf;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0, sq = 0, norms = 0;
  std::size_t bad = 0;
  std::string first_bad;
  for (std::size_t r0 = 0; r0 < info.rows; r0 += step) {
    const std::size_t r1 = std::min(info.rows, r0 + step);
    buf.resize((r1 - r0) * d);
    data.read_rows<double>(r0, r1, buf.data());
    for (std::size_t i = 0; i < r1 - r0; ++i) {
      double nrm = 0;
      for (std::size_t j = 0; j < d; ++j) {
        const double v = buf[i * d + j];
        if (!std::isfinite(v)) {
          if (bad++ == 0) first_bad = "row " + std::to_string(r0 + i) + ", column " + std::to_string(j);
          continue;
        }
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        sum += v;
        sq += v * v;
        nrm += v * v;
      }
      norms += std::sqrt(nrm);
    }
  }
  const double count = static_cast<double>(info.rows) * static_cast<double>(d) - static_cast<double>(bad);
  const double mean = count > 0 ? sum / count : 0;
  const double stdev = count > 0 ? std::sqrt(std::max(0.0, sq / count - mean * mean)) : 0;
  const double mean_norm = norms / static_cast<double>(info.rows);
  if (a.json) {
    std::string j = "{\n  \"path\": " + json_string(info.path) + ",\n  \"format\": " +
                    json_string(io::format_name(info.format)) + ",\n  \"dtype\": " + json_string(io::dtype_name(info.dtype)) +
                    ",\n  \"big_endian\": " + (info.big_endian ? "true" : "false") +
                    ",\n  \"fortran_order\": " + (info.fortran_order ? "true" : "false") +
                    ",\n  \"npy_version\": " + std::to_string(info.npy_version) +
                    ",\n  \"rows\": " + std::to_string(info.rows) + ",\n  \"cols\": " + std::to_string(d) +
                    ",\n  \"batch\": " + std::to_string(info.batch) + ",\n  \"file_bytes\": " + std::to_string(info.file_size) +
                    ",\n  \"data_offset\": " + std::to_string(info.data_offset) +
                    ",\n  \"min\": " + json_number(lo) + ",\n  \"max\": " + json_number(hi) +
                    ",\n  \"mean\": " + json_number(mean) + ",\n  \"std\": " + json_number(stdev) +
                    ",\n  \"mean_row_norm\": " + json_number(mean_norm) +
                    ",\n  \"non_finite\": " + std::to_string(bad) + "\n}\n";
    std::fputs(j.c_str(), stdout);
  } else {
    std::printf("file        %s\n", info.path.c_str());
    std::printf("format      %s%s\n", describe(info).c_str(),
                info.npy_version ? (" (npy version " + std::to_string(info.npy_version) + ")").c_str() : "");
    if (info.batch > 1) {
      std::printf("shape       %zu x %zu x %zu (a batch of %zu problems)\n", info.batch, info.rows / info.batch, d,
                  info.batch);
    } else {
      std::printf("shape       %zu x %zu\n", info.rows, d);
    }
    std::printf("size        %s (%llu bytes; data from byte %llu)\n", human_bytes(static_cast<double>(info.file_size)).c_str(),
                static_cast<unsigned long long>(info.file_size), static_cast<unsigned long long>(info.data_offset));
    std::printf("values      min %.6g, max %.6g, mean %.6g, std %.6g\n", lo, hi, mean, stdev);
    std::printf("row norm    mean %.6g\n", mean_norm);
    if (bad) {
      std::printf("non-finite  %zu values (first at %s): fit would refuse this file\n", bad, first_bad.c_str());
    } else {
      std::printf("non-finite  none\n");
    }
  }
  return 0;
}

struct DemoArgs {
  int threads = 0;
  bool quiet = false;
};

void demo_run(const char* title, const std::vector<float>& X, std::size_t n, std::size_t d, std::size_t k,
              const DemoArgs& a) {
  std::printf("\n== %s: N = %zu, D = %zu, K = %zu (target %s)\n", title, n, d, k, default_target().c_str());
  std::fflush(stdout);
  Progress progress(a.quiet, 300, 1);
  KMeansOptions o;
  o.n_clusters = k;
  o.seed = 1;
  o.n_threads = a.threads;
  o.callback = [&](const IterationStats& s) { return progress.iteration(s); };
  o.seed_callback = [&](const SeedStats& s) { progress.seeding(s); };
  progress.phase("k-means++ initialisation, then Lloyd iterations:");
  const auto t0 = Clock::now();
  const auto r = fit(MatrixView<float>(X.data(), n, d), o);
  progress.done();
  const double secs = since(t0);
  double iter_secs = 0;
  for (const auto& h : r.history) iter_secs += h.seconds;
  const auto sizes = cluster_sizes(r.labels, k);
  const auto [mn, mx] = std::minmax_element(sizes.begin(), sizes.end());
  std::printf("  inertia %.6e after %d iterations (%s); %.2f s in all (%.2f s initialising), %.3f s per iteration;"
              " cluster sizes %llu..%llu\n",
              r.inertia, r.n_iter, to_string(r.stop_reason), secs, secs - iter_secs,
              iter_secs / static_cast<double>(r.history.size()), static_cast<unsigned long long>(*mn),
              static_cast<unsigned long long>(*mx));
}

int cmd_demo(const DemoArgs& a) {
  const std::size_t n = 1000000, d = 64, k = 256;
  demo_run("generated blobs", make_blobs(n, d, k, 7), n, d, k, a);
  if (interrupted()) return kExitInterrupted;
  std::vector<float> fm;
  std::size_t fn = 0, fd = 0;
  if (load_fashion_mnist(fm, fn, fd)) {
    demo_run("Fashion-MNIST", fm, fn, fd, 10, a);
  } else {
    std::printf("\n(Fashion-MNIST is not installed: apt-get install dataset-fashion-mnist)\n");
  }
  return interrupted() ? kExitInterrupted : 0;
}

// Prints an error (if `print`) and returns the exit code for it.
int report_error(std::exception_ptr error, bool print) {
  const char* kind = "error";
  int code = kExitData;
  std::string what;
  try {
    std::rethrow_exception(error);
  } catch (const UsageError& e) {
    what = std::string(e.what()) + "\nRun with --help for usage.";
    code = kExitUsage;
  } catch (const InvalidArgument& e) {
    what = e.what();
    code = kExitUsage;
  } catch (const Error& e) {
    what = e.what();
  } catch (const std::bad_alloc&) {
    what = "out of memory (try a smaller --memory-limit to stream the input)";
  } catch (const std::exception& e) {
    kind = "internal error";
    what = e.what();
  }
  if (print) std::fprintf(stderr, "flashkm: %s: %s\n", kind, what.c_str());
  return code;
}

int run(int argc, char** argv) {
  CLI::App app{"flashkm: exact Lloyd k-means close to the hardware's limit, on files of any size.\n"
               "Inputs: .npy (float16/32/64, v1-3, either byte order, C or Fortran order), .fvecs, .bvecs,\n"
               "raw little-endian float32 (.raw/.bin/.f32, with --dim), .csv/.txt (small data).\n"
               "Outputs are .npy files written atomically. Exit codes: 0 ok, 1 data or I/O error, 2 usage error,\n"
               "130 interrupted.",
               "flashkm"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "flashkm 0.1.0");

  FitArgs fa;
  CLI::App* fit_cmd = app.add_subcommand("fit", "Cluster the rows of INPUT; write the centroids (and labels)");
  fit_cmd->add_option("INPUT", fa.input, "data file")->required();
  fit_cmd->add_option("-k,--n-clusters", fa.k, "number of clusters K (1 <= K <= rows)");
  fit_cmd->add_option("-o,--output", fa.output, "centroids output (.npy, K x D)")->capture_default_str();
  fit_cmd->add_option("--labels", fa.labels, "also write each row's cluster (.npy, int32)");
  fit_cmd->add_option("--init", fa.init,
                      "k-means++, k-means|| (faster for large K: 5 rounds of about 2K rows, then k-means++ "
                      "on them), random, or a .npy file of K x D initial centroids")
      ->capture_default_str();
  fit_cmd->add_option("--n-init", fa.n_init, "runs from different seeds; the lowest inertia wins")->capture_default_str();
  fit_cmd->add_option("--max-iter", fa.max_iter, "Lloyd iterations per run at most")->capture_default_str();
  fit_cmd->add_option("--tol", fa.tol, "stop when the squared centroid shift <= tol x mean feature variance")
      ->capture_default_str();
  fit_cmd->add_option("--seed", fa.seed, "seed of the initialisation")->capture_default_str();
  fit_cmd->add_option("--threads", fa.threads, "threads (0 = all cores); results do not depend on it")
      ->capture_default_str();
  fit_cmd->add_option("--weights", fa.weights, "per-row sample weights (.npy, 1-D, rows values)");
  fit_cmd->add_option("--memory-limit", fa.memory_limit,
                      "stream the input when it does not fit in SIZE (e.g. 512M, 4G; default: half the "
                      "available memory); streamed results are bitwise those in memory");
  fit_cmd->add_option("--dim", fa.dim, "row length of a raw float32 file");
  fit_cmd->add_option("--report", fa.report, "write a self-contained HTML report (inertia curve, cluster sizes)");
  fit_cmd->add_option("--target", fa.target, "force a SIMD target (see `flashkm info --targets`)");
  fit_cmd->add_option("--prune", fa.prune,
                      "auto, on or off: skip the distances that bounds prove useless (Euclidean and cosine); "
                      "the result is bitwise the same either way")
      ->capture_default_str();
  fit_cmd->add_flag("--json", fa.json, "print a JSON summary with the whole history on stdout");
  fit_cmd->add_flag("--distributed", fa.distributed,
                    "under mpirun: each rank reads and clusters its share of the rows (MPI engine); "
                    "rank 0 writes the outputs");
  fit_cmd->add_flag("-q,--quiet", fa.quiet, "no progress or summary on stderr");

  PredictArgs pa;
  CLI::App* predict_cmd = app.add_subcommand("predict", "Write the nearest centroid of every row of INPUT");
  predict_cmd->add_option("INPUT", pa.input, "data file")->required();
  predict_cmd->add_option("--centroids", pa.centroids, "centroids (.npy, K x D)")->required();
  predict_cmd->add_option("-o,--output", pa.output, "labels output (.npy, int32)")->required();
  predict_cmd->add_option("--threads", pa.threads, "threads (0 = all cores)")->capture_default_str();
  predict_cmd->add_option("--memory-limit", pa.memory_limit, "stream the input when it does not fit in SIZE");
  predict_cmd->add_option("--dim", pa.dim, "row length of a raw float32 file");
  predict_cmd->add_option("--target", pa.target, "force a SIMD target");
  predict_cmd->add_flag("--json", pa.json, "print a JSON summary on stdout");
  predict_cmd->add_flag("-q,--quiet", pa.quiet, "no summary on stderr");

  InfoArgs ia;
  bool targets = false;
  CLI::App* info_cmd = app.add_subcommand("info", "Format, dtype, shape, size and statistics of a data file");
  info_cmd->add_option("FILE", ia.input, "data file");
  info_cmd->add_option("--dim", ia.dim, "row length of a raw float32 file");
  info_cmd->add_flag("--json", ia.json, "print JSON on stdout");
  info_cmd->add_flag("--targets", targets, "list the SIMD targets this CPU can run, best first");

  DemoArgs da;
  CLI::App* demo_cmd = app.add_subcommand(
      "demo", "Cluster built-in data: 1,000,000 x 64 generated blobs (K = 256), then Fashion-MNIST "
              "(70,000 x 784, K = 10) when Debian's dataset-fashion-mnist is installed");
  demo_cmd->add_option("--threads", da.threads, "threads (0 = all cores)")->capture_default_str();
  demo_cmd->add_flag("-q,--quiet", da.quiet, "no per-iteration progress");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  install_interrupt_handler();
  bool print_errors = true;
#ifdef FLASHKM_HAVE_MPI
  std::unique_ptr<mpi::Environment> env;
  if (fit_cmd->parsed() && fa.distributed) {
    env = std::make_unique<mpi::Environment>(&argc, &argv);
    print_errors = mpi::rank() == 0;  // every rank throws the same error; one prints it
  }
#else
  if (fit_cmd->parsed() && fa.distributed) {
    throw UsageError("--distributed: this flashkm was built without MPI (install libopenmpi-dev and rebuild)");
  }
#endif
  try {
    if (fit_cmd->parsed()) return cmd_fit(fa);
    if (predict_cmd->parsed()) return cmd_predict(pa);
    if (info_cmd->parsed()) {
      if (targets) {
        for (const std::string& t : available_targets()) std::printf("%s\n", t.c_str());
        return 0;
      }
      if (ia.input.empty()) throw UsageError("info: FILE is required (or --targets)");
      return cmd_info(ia);
    }
    return cmd_demo(da);
  } catch (...) {
#ifdef FLASHKM_HAVE_MPI
    if (env) {
      // An error every rank threw together (mpi::collectively) is printed once, by rank 0. One
      // thrown on this rank alone may leave others waiting in a collective: end the job.
      bool agreed = false;
      try {
        throw;
      } catch (const mpi::AgreedError&) {
        agreed = true;
      } catch (...) {
      }
      if (!agreed) {
        std::fprintf(stderr, "flashkm: rank %d of %d failed alone; ending the job\n", mpi::rank(), mpi::size());
        mpi::abort(report_error(std::current_exception(), true));
      }
    }
#endif
    return report_error(std::current_exception(), print_errors);
  }
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
