// Test helpers: random data, a float64 textbook Lloyd, tie-aware label comparison.
#include "testlib.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "cpu/cpu_engine.hpp"

namespace flashkm::testing {

template <class T>
std::vector<T> blobs(std::size_t n, std::size_t d, std::size_t k, std::uint64_t seed, double spread,
                     double offset) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  std::vector<double> centres(k * d);
  for (double& v : centres) v = spread * g(rng);
  std::uniform_int_distribution<std::size_t> pick(0, k - 1);
  std::vector<T> X(n * d);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t c = pick(rng);
    for (std::size_t j = 0; j < d; ++j) X[i * d + j] = static_cast<T>(offset + centres[c * d + j] + g(rng));
  }
  return X;
}

template <class T>
std::vector<T> small_ints(std::size_t n, std::size_t d, std::uint64_t seed, int range) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> u(-range, range);
  std::vector<T> X(n * d);
  for (T& v : X) v = static_cast<T>(u(rng));
  return X;
}

template <class T>
std::vector<double> pick_rows(const std::vector<T>& X, std::size_t d, const std::vector<std::size_t>& ids) {
  std::vector<double> C(ids.size() * d);
  for (std::size_t c = 0; c < ids.size(); ++c) {
    for (std::size_t j = 0; j < d; ++j) C[c * d + j] = static_cast<double>(X[ids[c] * d + j]);
  }
  return C;
}

KMeansOptions explicit_init(const std::vector<double>& C0, std::size_t k, std::size_t d) {
  KMeansOptions o;
  o.n_clusters = k;
  o.init = InitMethod::kExplicit;
  o.init_centroids = MatrixView<double>(C0.data(), k, d);
  return o;
}

std::vector<std::size_t> distinct_ids(std::size_t n, std::size_t k, std::uint64_t seed) {
  std::vector<std::size_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(k);
  return ids;
}

template <class T, class U>
double sqdist(const T* x, const U* c, std::size_t d) {
  double s = 0;
  for (std::size_t j = 0; j < d; ++j) {
    const double e = static_cast<double>(x[j]) - static_cast<double>(c[j]);
    s += e * e;
  }
  return s;
}

template <class T, class U>
std::vector<std::int32_t> nearest(const std::vector<T>& X, std::size_t n, std::size_t d,
                                  const std::vector<U>& C, std::size_t k) {
  std::vector<std::int32_t> labels(n);
  for (std::size_t i = 0; i < n; ++i) {
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t c = 0; c < k; ++c) {
      const double s = sqdist(&X[i * d], &C[c * d], d);
      if (s < best) {
        best = s;
        labels[i] = static_cast<std::int32_t>(c);
      }
    }
  }
  return labels;
}

template <class T>
double mean_variance(const std::vector<T>& X, std::size_t n, std::size_t d) {
  double total = 0;
  for (std::size_t j = 0; j < d; ++j) {
    double m = 0;
    for (std::size_t i = 0; i < n; ++i) m += static_cast<double>(X[i * d + j]);
    m /= static_cast<double>(n);
    double v = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double e = static_cast<double>(X[i * d + j]) - m;
      v += e * e;
    }
    total += v / static_cast<double>(n);
  }
  return total / static_cast<double>(d);
}

template <class T>
RefLloyd reference_lloyd(const std::vector<T>& X, std::size_t n, std::size_t d,
                         std::vector<double> C, std::size_t k, int max_iter, double tol_abs,
                         const std::vector<double>& weights, double zero_dist) {
  auto w = [&](std::size_t i) { return weights.empty() ? 1.0 : weights[i]; };
  RefLloyd out;
  std::vector<std::int32_t> labels(n, -1);
  std::vector<double> dist(n);
  auto assign = [&](const std::vector<double>& cent) {
    std::size_t changed = 0;
    double inertia = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double best = std::numeric_limits<double>::infinity();
      std::int32_t arg = 0;
      for (std::size_t c = 0; c < k; ++c) {
        const double s = sqdist(&X[i * d], &cent[c * d], d);
        if (s < best) {
          best = s;
          arg = static_cast<std::int32_t>(c);
        }
      }
      changed += labels[i] != arg;
      labels[i] = arg;
      dist[i] = best;
      inertia += w(i) * best;
    }
    return std::pair{changed, inertia};
  };
  bool final_needed = true;
  for (int it = 1; it <= max_iter; ++it) {
    const auto [changed, inertia] = assign(C);
    out.n_iter = it;
    out.inertia = inertia;
    std::vector<double> sums(k * d, 0.0), ws(k, 0.0), next(k * d);
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < d; ++j) sums[labels[i] * d + j] += w(i) * static_cast<double>(X[i * d + j]);
      ws[labels[i]] += w(i);
    }
    std::vector<char> fixed(k, 0);
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return dist[a] > dist[b]; });
    std::size_t next_cand = 0, relocated = 0;
    for (std::size_t c = 0; c < k; ++c) {
      if (ws[c] != 0.0) continue;
      while (next_cand < n && dist[order[next_cand]] > zero_dist) {
        const std::size_t p = order[next_cand++];
        const std::size_t donor = labels[p];
        if (fixed[donor] || (w(p) > 0 && !(ws[donor] - w(p) > 0))) continue;
        for (std::size_t j = 0; j < d; ++j) {
          sums[donor * d + j] -= w(p) * static_cast<double>(X[p * d + j]);
          next[c * d + j] = static_cast<double>(X[p * d + j]);
        }
        ws[donor] -= w(p);
        fixed[c] = 1;
        ++relocated;
        break;
      }
    }
    double shift = 0;
    for (std::size_t c = 0; c < k; ++c) {
      for (std::size_t j = 0; j < d; ++j) {
        if (!fixed[c]) next[c * d + j] = ws[c] > 0 ? sums[c * d + j] / ws[c] : C[c * d + j];
        const double e = next[c * d + j] - C[c * d + j];
        shift += e * e;
      }
    }
    if (it > 1 && changed == 0 && relocated == 0) {
      final_needed = false;
      break;
    }
    C = next;
    if (shift <= tol_abs) break;
  }
  if (final_needed) out.inertia = assign(C).second;
  out.centroids = C;
  out.labels = labels;
  return out;
}

template <class T, class U>
std::size_t expect_labels_match(const std::vector<T>& X, std::size_t d, const std::vector<U>& C,
                                const std::vector<std::int32_t>& got,
                                const std::vector<std::int32_t>& want, double rel_tie,
                                double abs_tie) {
  std::size_t ties = 0;
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    const double a = sqdist(&X[i * d], &C[got[i] * d], d);
    const double b = sqdist(&X[i * d], &C[want[i] * d], d);
    const bool tie = std::abs(a - b) <= rel_tie * std::max(a, b) + abs_tie;
    EXPECT_TRUE(tie) << "point " << i << ": label " << got[i] << " (d=" << a << ") vs reference "
                     << want[i] << " (d=" << b << ")";
    ties += tie;
  }
  return ties;
}

template std::vector<float> blobs<float>(std::size_t, std::size_t, std::size_t, std::uint64_t, double, double);
template std::vector<double> blobs<double>(std::size_t, std::size_t, std::size_t, std::uint64_t, double, double);
template std::vector<float> small_ints<float>(std::size_t, std::size_t, std::uint64_t, int);
template std::vector<double> small_ints<double>(std::size_t, std::size_t, std::uint64_t, int);
template std::vector<double> pick_rows<float>(const std::vector<float>&, std::size_t, const std::vector<std::size_t>&);
template std::vector<double> pick_rows<double>(const std::vector<double>&, std::size_t, const std::vector<std::size_t>&);
template RefLloyd reference_lloyd<float>(const std::vector<float>&, std::size_t, std::size_t, std::vector<double>, std::size_t, int, double, const std::vector<double>&, double);
template RefLloyd reference_lloyd<double>(const std::vector<double>&, std::size_t, std::size_t, std::vector<double>, std::size_t, int, double, const std::vector<double>&, double);
template std::vector<std::int32_t> nearest<float, float>(const std::vector<float>&, std::size_t, std::size_t, const std::vector<float>&, std::size_t);
template std::vector<std::int32_t> nearest<double, double>(const std::vector<double>&, std::size_t, std::size_t, const std::vector<double>&, std::size_t);
template std::vector<std::int32_t> nearest<float, double>(const std::vector<float>&, std::size_t, std::size_t, const std::vector<double>&, std::size_t);
template double mean_variance<float>(const std::vector<float>&, std::size_t, std::size_t);
template double mean_variance<double>(const std::vector<double>&, std::size_t, std::size_t);
template double sqdist<float, double>(const float*, const double*, std::size_t);
template double sqdist<double, double>(const double*, const double*, std::size_t);
template double sqdist<float, float>(const float*, const float*, std::size_t);
template std::size_t expect_labels_match<float, double>(const std::vector<float>&, std::size_t, const std::vector<double>&, const std::vector<std::int32_t>&, const std::vector<std::int32_t>&, double, double);
template std::size_t expect_labels_match<double, double>(const std::vector<double>&, std::size_t, const std::vector<double>&, const std::vector<std::int32_t>&, const std::vector<std::int32_t>&, double, double);
template std::size_t expect_labels_match<float, float>(const std::vector<float>&, std::size_t, const std::vector<float>&, const std::vector<std::int32_t>&, const std::vector<std::int32_t>&, double, double);

std::vector<float> load_fashion_mnist(std::size_t max_rows, std::size_t& n, std::size_t& d) {
  const char* path = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  gzFile f = gzopen(path, "rb");
  if (!f) return {};
  unsigned char hdr[16];
  gzread(f, hdr, 16);
  auto be32 = [&](int o) { return (std::size_t(hdr[o]) << 24) | (hdr[o + 1] << 16) | (hdr[o + 2] << 8) | hdr[o + 3]; };
  n = std::min(max_rows, be32(4));
  d = be32(8) * be32(12);
  std::vector<unsigned char> raw(n * d);
  gzread(f, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(f);
  std::vector<float> X(n * d);
  for (std::size_t i = 0; i < X.size(); ++i) X[i] = float(raw[i]) / 255.0f;
  return X;
}

std::vector<std::uint16_t> to_half(std::vector<float>& X, HalfType type) {
  std::vector<std::uint16_t> H(X.size());
  for (std::size_t i = 0; i < X.size(); ++i) {
    std::uint32_t b;
    std::memcpy(&b, &X[i], 4);
    if (type == HalfType::kBFloat16) {
      H[i] = static_cast<std::uint16_t>(b >> 16);
      b &= 0xffff0000u;
    } else {
      const int e = static_cast<int>((b >> 23) & 0xff) - 127 + 15;
      const std::uint32_t sign = (b >> 16) & 0x8000u;
      EXPECT_LT(e, 31) << X[i] << " is beyond float16's range";
      if (e <= 0) {
        H[i] = static_cast<std::uint16_t>(sign);
        b &= 0x80000000u;
      } else {
        H[i] = static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(e) << 10) | ((b >> 13) & 0x3ffu));
        b &= 0xffffe000u;
      }
    }
    std::memcpy(&X[i], &b, 4);
  }
  return H;
}

template <class T>
std::string update_path(const std::vector<T>& X, std::size_t n, std::size_t d, std::size_t k) {
  auto engine = detail::make_cpu_engine<T>(MatrixView<T>(X.data(), n, d), {}, 2, "");
  std::vector<double> c(k * d, 0.0), sums(k * d), w(k);
  std::size_t changed = 0;
  engine->begin_run(Prune::kOff, k);
  engine->assign_update(c.data(), k, sums.data(), w.data(), &changed);
  return engine->update_path();
}

template std::string update_path<float>(const std::vector<float>&, std::size_t, std::size_t, std::size_t);
template std::string update_path<double>(const std::vector<double>&, std::size_t, std::size_t, std::size_t);

}  // namespace flashkm::testing
