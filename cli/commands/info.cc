// `flashkm info`: format, dtype, shape, size and statistics of a data file (one streamed pass
// in bounded memory), or the SIMD targets this CPU can run.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "common.hpp"
#include "errors.hpp"
#include "flashkm/flashkm.hpp"
#include "json.hpp"
#include "progress.hpp"

namespace flashkm::cli {
namespace {

struct InfoArgs {
  std::string input;
  std::optional<std::size_t> dim;
  bool json = false;
  bool targets = false;
};

int cmd_info(const InfoArgs& a) {
  if (a.targets) {
    if (a.json) {
      print_json(Json{{"targets", available_targets()}, {"half_targets", available_half_targets()}});
    } else {
      for (const std::string& t : available_targets()) std::printf("%s\n", t.c_str());
    }
    return 0;
  }
  if (a.input.empty()) throw UsageError("info: FILE is required (or --targets)");
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
    Json j;
    j["path"] = info.path;
    j["format"] = io::format_name(info.format);
    j["dtype"] = io::dtype_name(info.dtype);
    j["big_endian"] = info.big_endian;
    j["fortran_order"] = info.fortran_order;
    j["npy_version"] = info.npy_version;
    j["rows"] = info.rows;
    j["cols"] = d;
    j["batch"] = info.batch;
    j["file_bytes"] = info.file_size;
    j["data_offset"] = info.data_offset;
    j["min"] = lo;
    j["max"] = hi;
    j["mean"] = mean;
    j["std"] = stdev;
    j["mean_row_norm"] = mean_norm;
    j["non_finite"] = bad;
    if (bad) j["first_non_finite"] = first_bad;
    print_json(j);
    return 0;
  }
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
  return 0;
}

}  // namespace

Command add_info(CLI::App& app) {
  auto a = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand("info", "Format, dtype, shape, size and statistics of a data file");
  cmd->add_option("FILE", a->input, "data file");
  cmd->add_option("--dim", a->dim, "row length of a raw float32 file");
  cmd->add_flag("--json", a->json, "print JSON on stdout");
  cmd->add_flag("--targets", a->targets, "list the SIMD targets this CPU can run, best first (--json adds those for 16-bit input)");
  Command c;
  c.app = cmd;
  c.run = [a](const Ranks&) { return cmd_info(*a); };
  return c;
}

}  // namespace flashkm::cli
