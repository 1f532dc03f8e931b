// `flashkm predict`: the nearest centroid of every row of a file (in memory, 16-bit or streamed).
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
#include "sizes.hpp"

namespace flashkm::cli {
namespace {

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
int run_predict(const PredictArgs& a, const io::DatasetInfo& info, const Ranks& ranks) {
  const auto t0 = Clock::now();
  std::size_t k = 0;
  const std::vector<T> C = read_centroids<T>(a.centroids, info.cols, &k);
  const MatrixView<T> cv(C.data(), k, info.cols);
  PredictOptions opt;
  opt.n_threads = a.threads;
  opt.target = a.target;
  PlanNeeds needs;
  needs.k = k;
  needs.keep_half = true;
  const LoadPlan plan = plan_load<T>(
      info, a.memory_limit.empty() ? ranks.default_memory_limit() : parse_size(a.memory_limit), needs);
  std::vector<std::int32_t> labels;
  try {
    labels = load<T>(plan, info, a.dim, 0, info.rows)->predict(cv, opt);
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
    std::fprintf(stderr, "flashkm predict: %zu rows of %s against %zu centroids%s in %.2f s; wrote %s\n", info.rows,
                 info.path.c_str(), k, plan.streamed() ? " (streamed)" : "", seconds, a.output.c_str());
  }
  if (a.json) {
    Json j;
    j["command"] = "predict";
    j["input"] = info.path;
    j["centroids"] = a.centroids;
    j["rows"] = info.rows;
    j["cols"] = info.cols;
    j["k"] = k;
    j["seconds"] = seconds;
    j["streamed"] = plan.streamed();
    j["holding"] = plan.describe();
    j["memory_limit"] = plan.limit;
    j["peak_rss"] = peak_rss();
    j["cluster_sizes"] = sizes;
    j["outputs"]["labels"] = a.output;
    print_json(j);
  }
  return 0;
}

int cmd_predict(const PredictArgs& a, const Ranks& ranks) {
  if (a.threads < 0) throw UsageError("--threads must be >= 0 (0 = all cores)");
  if (!a.memory_limit.empty()) parse_size(a.memory_limit);
  check_output(a.output, {a.input, a.centroids}, "output");
  const io::DatasetInfo info = io::probe(a.input, a.dim);
  const io::DatasetInfo cinfo = io::probe(a.centroids);
  if (info.batch > 1 || cinfo.batch > 1) {
    throw UsageError("predict takes 2-D data and centroids; for a batch (3-D) input, predict each problem");
  }
  if (info.dtype == io::DType::kF64 || info.format == io::Format::kCsv || cinfo.dtype == io::DType::kF64) {
    return run_predict<double>(a, info, ranks);
  }
  return run_predict<float>(a, info, ranks);
}

}  // namespace

Command add_predict(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  CLI::App* cmd = app.add_subcommand("predict", "Write the nearest centroid of every row of INPUT");
  cmd->add_option("INPUT", a->input, "data file")->required();
  cmd->add_option("--centroids", a->centroids, "centroids (K x D, any input format)")->required();
  cmd->add_option("-o,--output", a->output, "labels output (.npy, int32)")->required();
  cmd->add_option("--threads", a->threads, "threads (0 = all cores)")->capture_default_str();
  cmd->add_option("--memory-limit", a->memory_limit, "stream the input when it does not fit in SIZE");
  cmd->add_option("--dim", a->dim, "row length of a raw float32 file");
  cmd->add_option("--target", a->target, "force a SIMD target");
  cmd->add_flag("--json", a->json, "print a JSON summary on stdout");
  cmd->add_flag("-q,--quiet", a->quiet, "no summary on stderr");
  Command c;
  c.app = cmd;
  c.run = [a](const Ranks& ranks) { return cmd_predict(*a, ranks); };
  return c;
}

}  // namespace flashkm::cli
