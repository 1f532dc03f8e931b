// `flashkm fit`: cluster the rows of a file (in memory, 16-bit, streamed, or on MPI ranks), or
// a batch of independent problems from a 3-D .npy; write the centroids, labels and a report.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "errors.hpp"
#include "files.hpp"
#include "flashkm/flashkm.hpp"
#include "json.hpp"
#include "load_plan.hpp"
#include "memory.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "sizes.hpp"

namespace flashkm::cli {
namespace {

struct FitArgs {
  std::string input;
  std::optional<std::size_t> dim;
  std::size_t k = 0;
  std::string output = "centroids.npy";
  std::string labels;
  std::string init = "k-means++";
  int init_rounds = 5;
  double init_oversampling = 2.0;
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
  opt.init_rounds = a.init_rounds;
  opt.init_oversampling = a.init_oversampling;
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

std::size_t memory_limit(const FitArgs& a, const Ranks& ranks) {
  return a.memory_limit.empty() ? ranks.default_memory_limit() : parse_size(a.memory_limit);
}

template <class T>
int run_fit(const FitArgs& a, const io::DatasetInfo& info, const Ranks& ranks) {
  const auto t_start = Clock::now();
  const bool root = ranks.root();
  Progress progress(a.quiet || !root, a.max_iter, named_init(a.init) ? a.n_init : 1);
  const std::size_t n = info.rows, d = info.cols;
  // Plain variables, not a structured binding: lambdas below capture them (clang 14).
  const std::pair<std::size_t, std::size_t> range = ranks.my_rows(n);
  const std::size_t r0 = range.first, r1 = range.second;

  KMeansOptions opt;
  std::vector<double> weights;
  std::vector<T> init_c;
  std::size_t k = a.k;
  LoadPlan plan;
  ranks.together([&] {
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
        throw UsageError("-k " + std::to_string(k) + " but --init " + a.init + " holds " + std::to_string(file_k) +
                         " centroids");
      }
      k = file_k;
      opt.init = InitMethod::kExplicit;
      opt.init_centroids = MatrixView<T>(init_c.data(), k, d);
    }
    if (k == 0) throw UsageError("-k is required (or --init FILE.npy with the initial centroids)");
    if (k > n) {
      throw InvalidData(info.path + " has " + std::to_string(n) + " rows, fewer than k = " + std::to_string(k));
    }
    io::DatasetInfo mine = info;
    mine.rows = r1 - r0;
    PlanNeeds needs;
    needs.k = k;
    needs.weights = !weights.empty();
    // Auto prunes nothing where a row's distances are cheap, so it needs no room for bounds.
    needs.prune = a.prune == "on" || (a.prune == "auto" && k * info.cols >= kAutoPruneMinWork);
    needs.prune_auto = a.prune == "auto";  // where the bounds would not fit, prune less rather than fail
    needs.keep_half = !ranks.distributed();
    // k-means++ and k-means||'s rounds (since 2026-12-06) seed rows in memory with their sketch.
    needs.seed_sketch = a.init == "k-means++" || a.init == "k-means||";
    plan = plan_load<T>(mine, memory_limit(a, ranks), needs);
  });
  set_run_options(a, k, opt);
  if (!plan.prune_fits) opt.prune = Prune::kOff;
  if (!plan.sketch_fits) opt.seed_sketch = false;
  opt.callback = [&](const IterationStats& s) { return progress.iteration(s); };
  opt.seed_callback = [&](const SeedStats& s) { progress.seeding(s); };

  if (!progress.quiet()) {
    progress.phase("flashkm fit: " + info.path + " (" + describe(info) + ", " + std::to_string(n) + " x " +
                   std::to_string(d) + ", " + human_bytes(static_cast<double>(info.file_size)) + "), k = " +
                   std::to_string(k) + ", init " + a.init + ", " + plan.describe() + " (memory limit " +
                   human_bytes(static_cast<double>(plan.limit)) + (ranks.distributed() ? " per rank" : "") + ")");
  }
  std::unique_ptr<Rows<T>> rows;
  KMeansResult<T> result;
  try {
    ranks.together([&] { rows = load<T>(plan, info, a.dim, r0, r1); });
    result = rows->fit(opt, ranks);
  } catch (const io::FormatError&) {
    throw;
  } catch (const InvalidData& e) {
    rethrow_in(info.path, e);
  }
  progress.done();
  result.labels = ranks.gather_labels(std::move(result.labels));
  // Distributed, the stop is a decision all ranks took together; a signal may reach ranks at
  // different moments.
  if ((!ranks.distributed() && interrupted()) || result.stop_reason == StopReason::kCallback) {
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
  const int n_init = opt.init == InitMethod::kExplicit ? 1 : a.n_init;
  if (!a.report.empty()) {
    ReportData r;
    r.input = info.path;
    r.format = describe(info);
    r.rows = n;
    r.cols = d;
    r.k = k;
    r.init = a.init;
    r.n_init = n_init;
    r.best_init = result.best_init;
    r.n_iter = result.n_iter;
    r.threads = a.threads;
    r.converged = result.converged;
    r.streamed = plan.streamed();
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

  const StreamStats* stream = rows->stream_stats();
  double iter_seconds = 0;
  for (const auto& h : result.history) iter_seconds += h.seconds;
  const auto [min_size, max_size] = std::minmax_element(sizes.begin(), sizes.end());
  if (!progress.quiet()) {
    std::fprintf(stderr, "%s after %d iterations (%s); inertia %.9e; %.2f s in all, %.3f s per iteration\n",
                 result.converged ? "converged" : "stopped", result.n_iter, to_string(result.stop_reason),
                 result.inertia, seconds, result.n_iter ? iter_seconds / static_cast<double>(result.history.size()) : 0.0);
    std::fprintf(stderr, "cluster sizes: min %llu, max %llu; target %s\n", static_cast<unsigned long long>(*min_size),
                 static_cast<unsigned long long>(*max_size), result.target.c_str());
    if (stream) {
      std::fprintf(stderr, "streamed %zu passes in chunks of %zu rows: read %s, reader busy %.2f s, compute waited %.2f s\n",
                   stream->passes, stream->chunk_rows, human_bytes(static_cast<double>(stream->bytes_read)).c_str(),
                   stream->read_seconds, stream->wait_seconds);
    }
    std::fprintf(stderr, "wrote %s (%zu x %zu %s)%s%s%s%s\n", a.output.c_str(), k, d, io::dtype_name(out_type),
                 a.labels.empty() ? "" : ", ", a.labels.c_str(), a.report.empty() ? "" : ", ", a.report.c_str());
  }
  if (a.json) {
    Json j;
    j["command"] = "fit";
    j["input"] = info.path;
    j["format"] = io::format_name(info.format);
    j["dtype"] = io::dtype_name(info.dtype);
    j["rows"] = n;
    j["cols"] = d;
    j["k"] = k;
    j["init"] = a.init;
    j["init_rounds"] = a.init_rounds;  // k-means||'s (also for large-K k-means++ under --distributed)
    j["init_oversampling"] = a.init_oversampling;
    j["n_init"] = n_init;
    j["best_init"] = result.best_init;
    j["n_iter"] = result.n_iter;
    j["converged"] = result.converged;
    j["stop_reason"] = to_string(result.stop_reason);
    j["inertia"] = result.inertia;
    j["seconds"] = seconds;
    j["init_seconds"] = result.init_seconds;
    j["read_seconds"] = rows->read_seconds();
    j["target"] = result.target;
    j["threads"] = a.threads;
    j["ranks"] = ranks.count();
    j["streamed"] = plan.streamed();
    j["holding"] = plan.describe();
    j["seed_sketch"] = opt.seed_sketch;
    j["memory_limit"] = plan.limit;
    j["peak_rss"] = peak_rss();
    if (stream) {
      j["stream"] = {{"passes", stream->passes},
                     {"chunk_rows", stream->chunk_rows},
                     {"bytes_read", stream->bytes_read},
                     {"read_seconds", stream->read_seconds},
                     {"wait_seconds", stream->wait_seconds}};
    }
    j["cluster_sizes"] = sizes;
    j["outputs"]["centroids"] = a.output;
    if (!a.labels.empty()) j["outputs"]["labels"] = a.labels;
    if (!a.report.empty()) j["outputs"]["report"] = a.report;
    j["history"] = history_json(result.history);
    print_json(j);
  }
  return 0;
}

// A 3-D .npy (B, N, D): B independent problems clustered at once (flashkm::fit_batch), in
// memory; centroids (B, K, D) and labels (B, N) out.
template <class T>
int run_fit_batch(const FitArgs& a, const io::DatasetInfo& info, const Ranks& ranks) {
  const auto t_start = Clock::now();
  if (ranks.distributed()) throw UsageError("--distributed does not take a batch (3-D) input");
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
                        std::to_string(d) + ") for this batch; it holds " + std::to_string(c.info().batch) + " x " +
                        std::to_string(c.rows() / c.info().batch) + " x " + std::to_string(c.cols()));
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
  PlanNeeds needs;
  needs.k = k;
  needs.weights = !weights.empty();
  const LoadPlan plan = plan_load<T>(info, memory_limit(a, ranks), needs);
  if (plan.streamed()) {
    throw UsageError("a batch (3-D) input is clustered in memory, but " + info.path + " needs more than --memory-limit " +
                     human_bytes(static_cast<double>(plan.limit)));
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
    Json j;
    j["command"] = "fit";
    j["input"] = info.path;
    j["batch"] = B;
    j["rows"] = n;
    j["cols"] = d;
    j["k"] = k;
    j["seconds"] = seconds;
    j["members"] = Json::array();
    for (const auto& r : results) {
      j["members"].push_back({{"inertia", r.inertia},
                              {"n_iter", r.n_iter},
                              {"converged", r.converged},
                              {"stop_reason", to_string(r.stop_reason)}});
    }
    j["outputs"]["centroids"] = a.output;
    if (!a.labels.empty()) j["outputs"]["labels"] = a.labels;
    print_json(j);
  }
  return 0;
}

int cmd_fit(const FitArgs& a, const Ranks& ranks) {
  io::DatasetInfo info;
  // Under MPI every rank finds a bad option together, and rank 0 alone reports it.
  ranks.together([&] {
    if (a.n_init < 1) throw UsageError("--n-init must be >= 1");
    if (a.max_iter < 1) throw UsageError("--max-iter must be >= 1");
    if (a.prune != "auto" && a.prune != "on" && a.prune != "off") {
      throw UsageError("--prune must be auto, on or off, not '" + a.prune + "'");
    }
    if (!(a.tol >= 0)) throw UsageError("--tol must be >= 0");
    if (a.threads < 0) throw UsageError("--threads must be >= 0 (0 = all cores)");
    if (!a.memory_limit.empty()) parse_size(a.memory_limit);
    std::vector<std::string> inputs = {a.input, a.weights};
    if (!named_init(a.init)) inputs.push_back(a.init);
    check_output(a.output, inputs, "output");
    check_output(a.labels, inputs, "--labels");
    check_output(a.report, inputs, "--report");
    if (!a.labels.empty() && a.labels == a.output) throw UsageError("--labels and -o name the same file");
    info = io::probe(a.input, a.dim);
  });
  const bool f64 = info.dtype == io::DType::kF64 || info.format == io::Format::kCsv;
  if (info.batch > 1) return f64 ? run_fit_batch<double>(a, info, ranks) : run_fit_batch<float>(a, info, ranks);
  return f64 ? run_fit<double>(a, info, ranks) : run_fit<float>(a, info, ranks);
}

}  // namespace

Command add_fit(CLI::App& app) {
  auto a = std::make_shared<FitArgs>();
  CLI::App* cmd = app.add_subcommand("fit", "Cluster the rows of INPUT; write the centroids (and labels)");
  cmd->add_option("INPUT", a->input, "data file")->required();
  cmd->add_option("-k,--n-clusters", a->k, "number of clusters K (1 <= K <= rows)");
  cmd->add_option("-o,--output", a->output, "centroids output (.npy, K x D)")->capture_default_str();
  cmd->add_option("--labels", a->labels, "also write each row's cluster (.npy, int32)");
  cmd->add_option("--init", a->init,
                  "k-means++, k-means|| (faster for large K: --init-rounds rounds of about "
                  "--init-oversampling x K rows, then k-means++ on them), random, or a file of K x D initial "
                  "centroids (any input format; (B, K, D) for a batch)")
      ->capture_default_str();
  cmd->add_option("--init-rounds", a->init_rounds, "k-means||: rounds of drawing (>= 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--init-oversampling", a->init_oversampling, "k-means||: rows drawn per round, as a multiple of K (> 0)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--n-init", a->n_init, "runs from different seeds; the lowest inertia wins")->capture_default_str();
  cmd->add_option("--max-iter", a->max_iter, "Lloyd iterations per run at most")->capture_default_str();
  cmd->add_option("--tol", a->tol, "stop when the squared centroid shift <= tol x mean feature variance")
      ->capture_default_str();
  cmd->add_option("--seed", a->seed, "seed of the initialisation")->capture_default_str();
  cmd->add_option("--threads", a->threads, "threads (0 = all cores); results do not depend on it")
      ->capture_default_str();
  cmd->add_option("--weights", a->weights, "per-row sample weights (.npy, 1-D, rows values)");
  cmd->add_option("--memory-limit", a->memory_limit,
                  "stream the input when it does not fit in SIZE (e.g. 512M, 4G; default: half the "
                  "available memory, shared by the ranks of a node under --distributed); streamed "
                  "results are bitwise those in memory");
  cmd->add_option("--dim", a->dim, "row length of a raw float32 file");
  cmd->add_option("--report", a->report, "write a self-contained HTML report (inertia curve, cluster sizes)");
  cmd->add_option("--target", a->target, "force a SIMD target (see `flashkm info --targets`)");
  cmd->add_option("--prune", a->prune,
                  "auto, on or off: skip the distances that bounds prove useless (Euclidean and cosine); "
                  "the result is bitwise the same either way")
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "print a JSON summary with the whole history on stdout");
  cmd->add_flag("--distributed", a->distributed,
                "under mpirun: each rank reads and clusters its share of the rows (MPI engine); "
                "rank 0 writes the outputs");
  cmd->add_flag("-q,--quiet", a->quiet, "no progress or summary on stderr");
  Command c;
  c.app = cmd;
  c.run = [a](const Ranks& ranks) { return cmd_fit(*a, ranks); };
  c.distributed = [a] { return a->distributed; };
  return c;
}

}  // namespace flashkm::cli
