// Tests of the HTML report: escaping, strict JSON, size binning, and the elements the page's script needs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "json.hpp"
#include "report.hpp"

namespace flashkm::cli {
namespace {

ReportData sample_data() {
  ReportData d;
  d.input = "data/blobs.npy";
  d.format = "npy float32";
  d.rows = 5000;
  d.cols = 8;
  d.k = 3;
  d.init = "k-means++";
  d.n_init = 2;
  d.best_init = 1;
  d.n_iter = 3;
  d.threads = 4;
  d.converged = true;
  d.stop_reason = "tolerance";
  d.inertia = 1234.5;
  d.seconds = 0.25;
  d.target = "AVX2";
  const double inertia[2][3] = {{900, 850, 840}, {800, 700, 690}};
  for (int run = 0; run < 2; ++run) {
    for (int i = 0; i < 3; ++i) {
      IterationStats it;
      it.iteration = i + 1;
      it.inertia = inertia[run][i];
      it.center_shift = 1.0 / (i + 1);
      it.labels_changed = 100u >> i;
      it.seconds = 0.01;
      it.init_run = run;
      d.history.push_back(it);
    }
  }
  d.cluster_sizes = {1000, 3000, 1000};
  return d;
}

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

// The embedded JSON, as the page's script reads it.
std::string json_of(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"report-data\">";
  const std::size_t begin = page.find(open);
  EXPECT_NE(begin, std::string::npos);
  const std::size_t end = page.find("</script>", begin);
  return page.substr(begin + open.size(), end - begin - open.size());
}

// Outside string literals, JSON's only words are true, false and null: a NaN or Infinity
// written by a careless formatter would show up here as a bare word.
std::vector<std::string> bare_words(const std::string& json) {
  std::vector<std::string> words;
  std::string word;
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    // Exponents ("1e+20") are part of numbers, not words.
    const bool exponent = (c == 'e' || c == 'E') && i > 0 && json[i - 1] >= '0' && json[i - 1] <= '9';
    if (letter && !exponent) {
      word += c;
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
    if (c == '"') in_string = true;
  }
  return words;
}

void expect_strict_json_words(const std::string& json) {
  for (const std::string& word : bare_words(json)) {
    EXPECT_TRUE(word == "true" || word == "false" || word == "null") << "bare word '" << word << "' in " << json;
  }
}

TEST(Report, PageHasTheElementsItsScriptNeeds) {
  const std::string page = render_report_html(sample_data());
  EXPECT_EQ(page.rfind("<!DOCTYPE html>\n<html lang=\"en\">", 0), 0u);
  EXPECT_NE(page.find("<meta charset=\"utf-8\">"), std::string::npos);
  EXPECT_EQ(count(page, "id=\"inertia-chart\""), 1u);
  EXPECT_EQ(count(page, "id=\"sizes-chart\""), 1u);
  EXPECT_EQ(count(page, "id=\"report-data\""), 1u);
  EXPECT_NE(page.find("document.body.dataset.error"), std::string::npos);
  EXPECT_NE(page.find("<details>"), std::string::npos);
  // Three scripts: the error hook, the JSON, the drawing code.
  EXPECT_EQ(count(page, "<script"), 3u);
  EXPECT_EQ(count(page, "</script>"), 3u);
  EXPECT_EQ(page.substr(page.size() - 8), "</html>\n");
}

TEST(Report, LoadsNothingFromTheNetwork) {
  const std::string page = render_report_html(sample_data());
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);
}

TEST(Report, SummaryTable) {
  ReportData d = sample_data();
  std::string page = render_report_html(d);
  EXPECT_NE(page.find("5,000 &times; 8"), std::string::npos);
  EXPECT_NE(page.find("k-means++, best of 2 runs (run 1 kept)"), std::string::npos);
  EXPECT_NE(page.find("3 (6 over all runs)"), std::string::npos);
  EXPECT_NE(page.find("converged (tolerance)"), std::string::npos);
  EXPECT_NE(page.find("<td>1234.5</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>AVX2</td>"), std::string::npos);
  EXPECT_NE(page.find("<td>in memory</td>"), std::string::npos);
  d.streamed = true;
  d.converged = false;
  d.stop_reason = "max_iter";
  d.threads = 0;
  page = render_report_html(d);
  EXPECT_NE(page.find("<td>streamed from disk</td>"), std::string::npos);
  EXPECT_NE(page.find("not converged (max_iter)"), std::string::npos);
  EXPECT_NE(page.find("<td>all cores</td>"), std::string::npos);
}

// The seeding's own time in the summary (and the page's data), and each iteration's distances
// computed in the per-iteration table, grouped by thousands.
TEST(Report, SeedingTimeAndDistancesComputed) {
  ReportData d = sample_data();
  d.init_seconds = 0.125;
  for (std::size_t i = 0; i < d.history.size(); ++i) d.history[i].distances = 12345100u + i;  // i < 10
  const std::string page = render_report_html(d);
  EXPECT_NE(page.find("<th scope=\"row\">Seeding</th><td>0.125 s</td>"), std::string::npos);
  EXPECT_NE(json_of(page).find("\"init_seconds\":0.125"), std::string::npos) << json_of(page);
  EXPECT_EQ(count(page, "<th class=\"num\">distances computed</th>"), 1u);
  for (std::size_t i = 0; i < d.history.size(); ++i) {
    const std::string cell = "<td class=\"num\">12,345,10" + std::to_string(i) + "</td>";
    EXPECT_EQ(count(page, cell), 1u) << cell;
  }
}

TEST(Report, HostileFileNameIsEscaped) {
  ReportData d = sample_data();
  d.input = "</script><script>alert(1)</script><!-- & \"x\" 'y'.npy";
  d.format = "<b>npy</b>";
  d.init = "</SCRIPT><img onerror=alert(2)>";
  d.target = "</style>";
  d.stop_reason = "\"><x>";
  const std::string page = render_report_html(d);
  EXPECT_EQ(count(page, "</script>"), 3u);
  EXPECT_EQ(count(page, "<script"), 3u);
  EXPECT_EQ(page.find("<!--"), std::string::npos);
  EXPECT_EQ(page.find("</SCRIPT>"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(page.find("<b>npy"), std::string::npos);
  EXPECT_EQ(count(page, "</style>"), 1u);
  EXPECT_NE(page.find("<title>flashkm report: &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;!-- &amp; "
                      "&quot;x&quot; &#39;y&#39;.npy</title>"),
            std::string::npos);
  const std::string json = json_of(page);
  EXPECT_NE(json.find(R"("input":"\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e\u003c!-- \u0026 \"x\" 'y'.npy")"),
            std::string::npos)
      << json;
  expect_strict_json_words(json);
}

TEST(Report, InvalidUtf8AndControlsAreReplaced) {
  ReportData d = sample_data();
  // A stray byte, an overlong '/', a truncated 3-byte sequence, a C0 control, a line separator,
  // and a valid 4-byte character that must survive.
  d.input = "a\xff" "b\xc0\xaf" "c\x01" "d\xe2\x80\xa8" "e\xf0\x9f\x98\x80" "f\xe2\x82";
  const std::string page = render_report_html(d);
  const std::string fffd = "\xef\xbf\xbd";
  EXPECT_NE(page.find("<code>a" + fffd + "b" + fffd + fffd + "c" + fffd + "d\xe2\x80\xa8" "e\xf0\x9f\x98\x80" "f" +
                      fffd + fffd + "</code>"),
            std::string::npos);
  // The JSON holds the same characters (the control escaped, not replaced), written in ASCII.
  const std::string json = json_of(page);
  EXPECT_EQ(Json::parse(json)["summary"]["input"],
            "a" + fffd + "b" + fffd + fffd + "c\x01" "d\xe2\x80\xa8" "e\xf0\x9f\x98\x80" "f" + fffd + fffd)
      << json;
  EXPECT_NE(json.find(R"("input":"a\ufffdb\ufffd\ufffdc\u0001d\u2028e\ud83d\ude00f\ufffd\ufffd")"), std::string::npos)
      << json;
  for (const char c : json) EXPECT_LT(static_cast<unsigned char>(c), 0x80u);
}

TEST(Report, NonFiniteNumbersAreNullInJson) {
  ReportData d = sample_data();
  d.inertia = std::nan("");
  d.seconds = INFINITY;
  d.history.resize(3);
  d.history[0].inertia = INFINITY;
  d.history[1].inertia = -INFINITY;
  d.history[2].inertia = std::nan("");
  const std::string page = render_report_html(d);
  const std::string json = json_of(page);
  EXPECT_NE(json.find("\"inertia\":null,\"seconds\":null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"inertia\":[null,null,null]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"log_scale\":false"), std::string::npos) << json;
  expect_strict_json_words(json);
}

TEST(Report, SingleCluster) {
  ReportData d = sample_data();
  d.k = 1;
  d.cluster_sizes = {5000};
  const std::string page = render_report_html(d);
  const std::string json = json_of(page);
  EXPECT_EQ(Json::parse(json)["sizes"],
            Json::parse(R"({"k":1,"group":1,"min":5000,"median":5000,"max":5000,"bars":[{"r0":1,"r1":1,"cluster":0,"mean":5000,"min":5000,"max":5000}]})"))
      << json;
  EXPECT_NE(page.find("One bar per cluster, largest first. Points per cluster: min 5,000, median 5,000, max 5,000."),
            std::string::npos);
  expect_strict_json_words(json);
}

TEST(Report, EmptyHistoryAndSizes) {
  ReportData d = sample_data();
  d.history.clear();
  d.n_iter = 0;
  d.cluster_sizes.clear();
  const std::string page = render_report_html(d);
  const std::string json = json_of(page);
  EXPECT_NE(json.find("\"runs\":[]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"bars\":[]"), std::string::npos) << json;
  EXPECT_NE(page.find("Per-iteration statistics (0 rows)"), std::string::npos);
  EXPECT_NE(page.find("<p>No iterations were recorded.</p>"), std::string::npos);
  EXPECT_NE(page.find("No cluster sizes."), std::string::npos);
  EXPECT_EQ(count(page, "id=\"inertia-chart\""), 1u);
  expect_strict_json_words(json);
}

TEST(Report, SizesSortedLargestFirstTiesByIndex) {
  ReportData d = sample_data();
  d.cluster_sizes = {3, 7, 7, 1};
  const std::string json = json_of(render_report_html(d));
  EXPECT_EQ(Json::parse(json)["sizes"], Json::parse(R"({"k":4,"group":1,"min":1,"median":5,"max":7,"bars":[)"
                                                   R"({"r0":1,"r1":1,"cluster":1,"mean":7,"min":7,"max":7},)"
                                                   R"({"r0":2,"r1":2,"cluster":2,"mean":7,"min":7,"max":7},)"
                                                   R"({"r0":3,"r1":3,"cluster":0,"mean":3,"min":3,"max":3},)"
                                                   R"({"r0":4,"r1":4,"cluster":3,"mean":1,"min":1,"max":1}]})"))
      << json;
}

TEST(Report, AtMostMaxBarsOneClusterEach) {
  ReportData d = sample_data();
  d.cluster_sizes.assign(kMaxSizeBars, 10);
  const std::string page = render_report_html(d);
  EXPECT_EQ(count(json_of(page), "\"r0\":"), kMaxSizeBars);
  EXPECT_EQ(count(json_of(page), "\"cluster\":"), kMaxSizeBars);
  EXPECT_NE(page.find("One bar per cluster"), std::string::npos);
}

TEST(Report, LargeKIsBinned) {
  ReportData d = sample_data();
  const std::size_t k = 10007;
  d.k = k;
  d.cluster_sizes.resize(k);
  for (std::size_t i = 0; i < k; ++i) d.cluster_sizes[i] = i % 97;
  const std::string page = render_report_html(d);
  const std::string json = json_of(page);
  // ceil(10007 / 200) = 51 clusters per bar, ceil(10007 / 51) = 197 bars.
  EXPECT_EQ(count(json, "\"r0\":"), 197u);
  EXPECT_EQ(json.find("\"cluster\":"), std::string::npos);
  EXPECT_NE(json.find("\"group\":51"), std::string::npos);
  // Size 96 occurs 103 times, so the first two bars are all 96s; the last bar holds ranks
  // 9997..10007, all of them empty clusters.
  const Json bars = Json::parse(json)["sizes"]["bars"];
  ASSERT_EQ(bars.size(), 197u);
  EXPECT_EQ(bars[0], Json::parse(R"({"r0":1,"r1":51,"mean":96,"min":96,"max":96})"));
  EXPECT_EQ(bars[1]["r0"], 52);
  EXPECT_EQ(bars[1]["r1"], 102);
  EXPECT_EQ(bars[1]["mean"], 96);
  EXPECT_EQ(bars[196], Json::parse(R"({"r0":9997,"r1":10007,"mean":0,"min":0,"max":0})"));
  EXPECT_NE(page.find("Binned: 10,007 clusters are too many for a bar each"), std::string::npos);
  EXPECT_NE(page.find("grouped 51 per bar (197 bars;"), std::string::npos);
  EXPECT_NE(page.find("min 0, median 48, max 96. 104 clusters are empty."), std::string::npos);
  expect_strict_json_words(json);
}

TEST(Report, KeptRunIsMarked) {
  const std::string page = render_report_html(sample_data());
  const std::string json = json_of(page);
  EXPECT_EQ(Json::parse(json)["inertia"]["runs"],
            Json::parse(R"([{"run":0,"best":false,"iteration":[1,2,3],"inertia":[900,850,840]},)"
                        R"({"run":1,"best":true,"iteration":[1,2,3],"inertia":[800,700,690]}])"))
      << json;
  EXPECT_EQ(count(page, "<tr class=\"best\">"), 3u);
  EXPECT_NE(page.find("run 1 (kept)"), std::string::npos);
}

TEST(Report, LogScaleOnlyForWidePositiveRanges) {
  ReportData d = sample_data();
  d.history.resize(2);
  d.history[0].inertia = 3000;
  d.history[1].inertia = 100;
  std::string page = render_report_html(d);
  EXPECT_NE(json_of(page).find("\"log_scale\":true"), std::string::npos);
  EXPECT_NE(page.find("Log scale"), std::string::npos);
  d.history[1].inertia = 101;
  EXPECT_NE(json_of(render_report_html(d)).find("\"log_scale\":false"), std::string::npos);
  // A zero inertia (K = N) has no logarithm.
  d.history[1].inertia = 0;
  EXPECT_NE(json_of(render_report_html(d)).find("\"log_scale\":false"), std::string::npos);
}

}  // namespace
}  // namespace flashkm::cli
