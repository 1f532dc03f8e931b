// Renders a k-means run as one HTML page: tables written here, charts drawn by inline JS into SVG.
#include "report.hpp"

#include "json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <numeric>
#include <string_view>

namespace flashkm::cli {
namespace {

// A log axis only when the inertia spans this factor or more: below it, a log scale squashes
// the late iterations people look at, and a linear one already shows the curve well.
constexpr double kLogScaleRatio = 30;

constexpr char32_t kReplacement = 0xFFFD;

// File names are bytes, not text: any sequence that is not valid UTF-8 (stray continuation
// bytes, overlong forms, surrogates, beyond U+10FFFF) becomes U+FFFD, byte by byte, so the page
// stays valid UTF-8 and the JSON stays parsable.
std::u32string decode_utf8(std::string_view s) {
  static constexpr char32_t kMinForLength[] = {0, 0, 0x80, 0x800, 0x10000};
  std::u32string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const auto lead = static_cast<unsigned char>(s[i]);
    const std::size_t length = lead < 0x80            ? 1
                               : (lead >> 5) == 0x06  ? 2
                               : (lead >> 4) == 0x0E  ? 3
                               : (lead >> 3) == 0x1E  ? 4
                                                      : 0;
    bool ok = length != 0 && i + length <= s.size();
    char32_t cp = length == 1 ? lead : length == 2 ? lead & 0x1F : length == 3 ? lead & 0x0F : lead & 0x07;
    for (std::size_t j = 1; ok && j < length; ++j) {
      const auto next = static_cast<unsigned char>(s[i + j]);
      ok = (next & 0xC0) == 0x80;
      cp = (cp << 6) | (next & 0x3F);
    }
    ok = ok && cp >= kMinForLength[length] && cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
    out.push_back(ok ? cp : kReplacement);
    i += ok ? length : 1;
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// C0 and C1 controls (but for tab, LF, CR) are HTML parse errors, raw or as character references.
bool is_control(char32_t cp) {
  return (cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || (cp >= 0x7F && cp <= 0x9F);
}

// Text for element content and quoted attribute values.
std::string html(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (const char32_t cp : decode_utf8(raw)) {
    switch (cp) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: append_utf8(out, is_control(cp) ? kReplacement : cp);
    }
  }
  return out;
}

// A number for people: `digits` significant digits (non-finite values read "nan", "inf").
std::string shown(double v, int digits) {
  char buffer[40];
  return {buffer, std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::general, digits).ptr};
}

// The exact value, shortest form: inertia is what runs are compared by.
std::string shown_exact(double v) {
  char buffer[32];
  return {buffer, std::to_chars(buffer, buffer + sizeof buffer, v).ptr};
}

// 5000000 -> "5,000,000".
std::string grouped(std::uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// One bar of the cluster-size chart: `last_rank - first_rank + 1` clusters of consecutive size
// ranks (1 = largest).
struct SizeBar {
  std::size_t first_rank = 0, last_rank = 0;
  double mean = 0;
  std::uint64_t min = 0, max = 0;
  std::size_t cluster = 0;  // the cluster's index when the bar holds one cluster
};

struct SizeChart {
  std::vector<SizeBar> bars;
  std::size_t group = 1;  // clusters per bar
  std::uint64_t min = 0, max = 0;
  double median = 0;
  std::size_t empty = 0;
};

SizeChart size_chart(const std::vector<std::uint64_t>& sizes) {
  SizeChart chart;
  const std::size_t k = sizes.size();
  if (k == 0) return chart;
  std::vector<std::size_t> order(k);
  std::iota(order.begin(), order.end(), std::size_t{0});
  // Stable, so clusters of equal size keep index order and the page is the same run to run.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return sizes[a] > sizes[b]; });
  const auto size_at = [&](std::size_t rank) { return sizes[order[rank]]; };
  chart.max = size_at(0);
  chart.min = size_at(k - 1);
  chart.median = k % 2 == 1 ? static_cast<double>(size_at(k / 2))
                            : (static_cast<double>(size_at(k / 2 - 1)) + static_cast<double>(size_at(k / 2))) / 2;
  chart.empty = static_cast<std::size_t>(std::count(sizes.begin(), sizes.end(), std::uint64_t{0}));
  chart.group = (k + kMaxSizeBars - 1) / kMaxSizeBars;
  for (std::size_t first = 0; first < k; first += chart.group) {
    const std::size_t last = std::min(first + chart.group, k);
    double sum = 0;
    for (std::size_t rank = first; rank < last; ++rank) sum += static_cast<double>(size_at(rank));
    chart.bars.push_back({first + 1, last, sum / static_cast<double>(last - first), size_at(last - 1),
                          size_at(first), order[first]});
  }
  return chart;
}

// The history split by run, in run order.
std::map<int, std::vector<const IterationStats*>> runs_of(const std::vector<IterationStats>& history) {
  std::map<int, std::vector<const IterationStats*>> runs;
  for (const IterationStats& it : history) runs[it.init_run].push_back(&it);
  return runs;
}

bool wants_log_scale(const std::vector<IterationStats>& history) {
  double lo = INFINITY, hi = -INFINITY;
  for (const IterationStats& it : history) {
    if (!std::isfinite(it.inertia)) continue;
    lo = std::min(lo, it.inertia);
    hi = std::max(hi, it.inertia);
  }
  return lo > 0 && std::isfinite(hi) && hi >= kLogScaleRatio * lo;
}

// `raw` as valid UTF-8: invalid bytes become U+FFFD as in the page's text (controls are kept;
// the JSON escapes them).
std::string valid_utf8(std::string_view raw) {
  std::string out;
  for (const char32_t cp : decode_utf8(raw)) append_utf8(out, cp);
  return out;
}

// What the charts draw, and the summary, for anyone who wants the numbers back out of the page.
Json report_json(const ReportData& d, const SizeChart& sizes, bool log_scale) {
  Json j;
  j["summary"] = {{"input", valid_utf8(d.input)},
                  {"format", valid_utf8(d.format)},
                  {"rows", d.rows},
                  {"cols", d.cols},
                  {"k", d.k},
                  {"init", valid_utf8(d.init)},
                  {"n_init", d.n_init},
                  {"best_init", d.best_init},
                  {"n_iter", d.n_iter},
                  {"threads", d.threads},
                  {"converged", d.converged},
                  {"streamed", d.streamed},
                  {"stop_reason", valid_utf8(d.stop_reason)},
                  {"inertia", d.inertia},
                  {"seconds", d.seconds},
                  {"init_seconds", d.init_seconds},
                  {"target", valid_utf8(d.target)}};
  Json runs = Json::array();
  for (const auto& [run, its] : runs_of(d.history)) {
    Json iteration = Json::array(), inertia = Json::array();
    for (const IterationStats* it : its) {
      iteration.push_back(it->iteration);
      inertia.push_back(it->inertia);
    }
    runs.push_back({{"run", run}, {"best", run == d.best_init}, {"iteration", iteration}, {"inertia", inertia}});
  }
  j["inertia"] = {{"log_scale", log_scale}, {"runs", runs}};
  Json bars = Json::array();
  for (const SizeBar& bar : sizes.bars) {
    Json b = {{"r0", bar.first_rank}, {"r1", bar.last_rank}};
    if (sizes.group == 1) b["cluster"] = bar.cluster;
    b["mean"] = bar.mean;
    b["min"] = bar.min;
    b["max"] = bar.max;
    bars.push_back(b);
  }
  j["sizes"] = {{"k", d.cluster_sizes.size()}, {"group", sizes.group}, {"min", sizes.min},
                {"median", sizes.median},      {"max", sizes.max},     {"bars", bars}};
  return j;
}

constexpr std::string_view kStyle = R"css(
:root { color-scheme: light dark; --fg: #1d2330; --muted: #5d6675; --bg: #fff; --panel: #f6f7f9;
  --line: #dde1e7; --accent: #2463c9; --other: #a3abb8; --bar: #3f7fd6; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e4e8ee; --muted: #9aa4b2; --bg: #14171c; --panel: #1b1f26; --line: #323944;
    --accent: #73a9ff; --other: #5b6472; --bar: #5d96e8; } }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  background: var(--bg); max-width: 60rem; margin: 2rem auto; padding: 0 1.25rem; }
h1 { font-size: 1.5rem; margin: 0; }
h2 { font-size: 1.1rem; margin: 2.5rem 0 .5rem; }
.subtitle { color: var(--muted); margin: 0 0 1.5rem; overflow-wrap: anywhere; }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; }
th, td { padding: .3rem 1rem .3rem 0; text-align: left; border-bottom: 1px solid var(--line);
  vertical-align: top; }
.summary { width: 100%; }
.summary th { width: 1%; color: var(--muted); font-weight: 500; white-space: nowrap; }
.summary td { overflow-wrap: anywhere; }
.num { text-align: right; }
.iterations tr.best td { font-weight: 600; }
figure { margin: 0; }
svg { display: block; width: 100%; height: auto; background: var(--panel); border-radius: 6px; }
figcaption { color: var(--muted); font-size: .9rem; margin-top: .5rem; }
svg text { fill: var(--muted); font: 11px system-ui, sans-serif; }
svg text.title, svg text.note { fill: var(--fg); font-size: 12px; }
svg .grid { stroke: var(--line); }
svg .axis { stroke: var(--muted); }
svg .run { fill: none; stroke: var(--other); stroke-width: 1.25; stroke-linejoin: round; }
svg .run.best { stroke: var(--accent); stroke-width: 2.5; }
svg .dot { fill: var(--accent); }
svg .bar { fill: var(--bar); }
svg .range { stroke: var(--fg); stroke-width: 1; opacity: .55; }
svg .median { stroke: var(--fg); stroke-dasharray: 4 3; }
.swatch { display: inline-block; width: 1.2em; height: 3px; vertical-align: middle;
  background: var(--other); margin: 0 .3em; }
.swatch.best { background: var(--accent); height: 4px; }
details { margin: 2.5rem 0; }
summary { cursor: pointer; font-weight: 600; }
details table { margin-top: .75rem; }
footer { color: var(--muted); font-size: .85rem; margin: 3rem 0 1rem; }
)css";

// Installed in its own element before the drawing script, so that even a syntax error in that
// script is reported on the page (a test reads data-error from the dumped DOM).
constexpr std::string_view kErrorHook =
    "window.onerror = function (message, source, line) {\n"
    "  document.body.dataset.error = message + ' (line ' + line + ')';\n"
    "};\n";

constexpr std::string_view kDrawScript = R"js(
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('report-data').textContent);
  // Chart geometry in viewBox units; CSS scales the SVG to the page width.
  const W = 720, H = 320, M = {left: 78, right: 30, top: 16, bottom: 46};
  const PW = W - M.left - M.right, PH = H - M.top - M.bottom;
  const px = f => M.left + f * PW, py = f => M.top + (1 - f) * PH;
  // The kept run gets a dot per iteration up to this many; beyond it the dots merge into a smear.
  const MAX_DOTS = 60;

  function add(parent, name, attrs, text) {
    const node = document.createElementNS(parent.namespaceURI, name);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    parent.appendChild(node);
    return node;
  }

  function fmt(v, digits) {
    if (v === 0) return '0';
    const a = Math.abs(v);
    if (a >= 1e6 || a < 1e-3) {
      const [mantissa, exponent] = v.toExponential(digits - 1).split('e');
      return Number(mantissa) + 'e' + Number(exponent);
    }
    return String(Number(v.toPrecision(digits)));
  }

  // Steps of 1, 2 or 5 times a power of ten: tick labels people read at a glance.
  function nice_step(span, count) {
    const raw = span / count, magnitude = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5]) if (m * magnitude >= raw) return m * magnitude;
    return 10 * magnitude;
  }

  function ticks_between(lo, hi, step) {
    const ticks = [];
    for (let i = Math.ceil(lo / step - 1e-9); i * step <= hi + step * 1e-9; ++i) ticks.push(i * step);
    return ticks;
  }

  // A value axis widened to whole steps, labelled with just enough digits to tell ticks apart.
  function linear(lo, hi, count) {
    if (!(hi > lo)) { const pad = Math.abs(lo) * 0.05 || 1; lo -= pad; hi += pad; }
    const step = nice_step(hi - lo, count);
    lo = Math.floor(lo / step) * step;
    hi = Math.ceil(hi / step) * step;
    const digits = Math.min(15, Math.max(2, Math.ceil(Math.log10(Math.max(Math.abs(lo), Math.abs(hi)) / step)) + 1));
    return {ticks: ticks_between(lo, hi, step), map: v => (v - lo) / (hi - lo), label: t => fmt(t, digits)};
  }

  function logarithmic(lo, hi) {
    const a = Math.log10(lo), b = Math.log10(hi), pad = (b - a) * 0.04;
    // Over many decades the 2s and 5s only crowd the axis.
    const mantissas = b - a > 3 ? [1] : [1, 2, 5];
    const ticks = [];
    for (let e = Math.floor(a); e <= Math.ceil(b); ++e)
      for (const m of mantissas) {
        const t = m * Math.pow(10, e);
        if (t >= lo && t <= hi) ticks.push(t);
      }
    return {ticks, map: v => (Math.log10(v) - a + pad) / (b - a + 2 * pad), label: t => fmt(t, 3)};
  }

  // Positions 1..n (iterations, size ranks), each centred in its own slot.
  function slots(n, count) {
    const step = Math.max(1, nice_step(Math.max(n - 1, 1), count));
    const ticks = ticks_between(1, n, step);
    // Mark the first position unless a tick sits close to it already.
    if (ticks[0] - 1 > step / 2) ticks.unshift(1);
    return {ticks, map: v => (v - 0.5) / n, label: t => String(t)};
  }

  function frame(svg, x, y, x_title, y_title) {
    const g = add(svg, 'g', {class: 'frame'});
    for (const t of y.ticks) {
      const at = py(y.map(t)).toFixed(1);
      add(g, 'line', {class: 'grid', x1: M.left, x2: M.left + PW, y1: at, y2: at});
      add(g, 'text', {x: M.left - 6, y: at, 'text-anchor': 'end', 'dominant-baseline': 'middle'}, y.label(t));
    }
    for (const t of x.ticks) {
      const at = px(x.map(t)).toFixed(1);
      add(g, 'line', {class: 'axis', x1: at, x2: at, y1: M.top + PH, y2: M.top + PH + 4});
      add(g, 'text', {x: at, y: M.top + PH + 16, 'text-anchor': 'middle'}, x.label(t));
    }
    add(g, 'line', {class: 'axis', x1: M.left, x2: M.left + PW, y1: M.top + PH, y2: M.top + PH});
    add(g, 'line', {class: 'axis', x1: M.left, x2: M.left, y1: M.top, y2: M.top + PH});
    add(g, 'text', {class: 'title', x: M.left + PW / 2, y: H - 8, 'text-anchor': 'middle'}, x_title);
    add(g, 'text', {class: 'title', 'text-anchor': 'middle',
                    transform: `translate(16 ${M.top + PH / 2}) rotate(-90)`}, y_title);
  }

  function nothing(svg, message) {
    add(svg, 'text', {class: 'note', x: W / 2, y: H / 2, 'text-anchor': 'middle'}, message);
    return 0;
  }

  function draw_inertia(svg) {
    const log = data.inertia.log_scale, runs = data.inertia.runs;
    const usable = v => v !== null && (!log || v > 0);
    const values = runs.flatMap(r => r.inertia).filter(usable);
    if (values.length === 0) return nothing(svg, 'No iterations were recorded.');
    const lo = values.reduce((a, b) => Math.min(a, b)), hi = values.reduce((a, b) => Math.max(a, b));
    const n = runs.reduce((m, r) => r.iteration.reduce((a, b) => Math.max(a, b), m), 1);
    const x = slots(n, 8), y = log ? logarithmic(lo, hi) : linear(lo, hi, 6);
    frame(svg, x, y, 'iteration', log ? 'inertia (log scale)' : 'inertia');
    let drawn = 0;
    // The kept run last, so that it lies on top.
    for (const run of runs.filter(r => !r.best).concat(runs.filter(r => r.best))) {
      const points = [];
      run.iteration.forEach((it, i) => {
        if (usable(run.inertia[i])) points.push([px(x.map(it)), py(y.map(run.inertia[i]))]);
      });
      if (points.length === 0) continue;
      const line = add(svg, 'polyline', {class: run.best ? 'run best' : 'run', 'data-run': run.run,
                                         points: points.map(p => p[0].toFixed(1) + ',' + p[1].toFixed(1)).join(' ')});
      const last = run.inertia[run.inertia.length - 1];
      add(line, 'title', {}, `run ${run.run}${run.best ? ' (kept)' : ''}: ${run.iteration.length} iterations, ` +
                             `final inertia ${last === null ? 'not finite' : fmt(last, 6)}`);
      if (run.best && points.length <= MAX_DOTS)
        for (const [cx, cy] of points) add(svg, 'circle', {class: 'dot', cx: cx.toFixed(1), cy: cy.toFixed(1), r: 2.5});
      ++drawn;
    }
    return drawn;
  }

  function draw_sizes(svg) {
    const s = data.sizes;
    if (s.bars.length === 0) return nothing(svg, 'No cluster sizes were recorded.');
    const x = slots(s.k, 8), y = linear(0, Math.max(s.max, 1), 5);
    frame(svg, x, y, s.group > 1 ? `clusters by size, largest first (${s.group} per bar)` : 'clusters by size, largest first',
          'points');
    const slot = PW / s.k;
    let drawn = 0;
    for (const bar of s.bars) {
      const width = (bar.r1 - bar.r0 + 1) * slot, gap = width > 4 ? width * 0.15 : 0;
      const top = py(y.map(bar.mean));
      const rect = add(svg, 'rect', {class: 'bar', x: (px((bar.r0 - 1) / s.k) + gap / 2).toFixed(2), y: top.toFixed(2),
                                     width: (width - gap).toFixed(2), height: (M.top + PH - top).toFixed(2)});
      add(rect, 'title', {}, bar.cluster !== undefined
          ? `cluster ${bar.cluster}: ${bar.mean} points (rank ${bar.r0})`
          : `ranks ${bar.r0}\u2013${bar.r1}: mean ${fmt(bar.mean, 4)}, min ${bar.min}, max ${bar.max} points`);
      // A group's mean hides its outliers: a line spans its smallest to its largest cluster.
      if (bar.cluster === undefined && bar.max > bar.min) {
        const mid = (px((bar.r0 - 1) / s.k) + width / 2).toFixed(2);
        add(svg, 'line', {class: 'range', x1: mid, x2: mid, y1: py(y.map(bar.min)).toFixed(2),
                          y2: py(y.map(bar.max)).toFixed(2)});
      }
      ++drawn;
    }
    const at = py(y.map(s.median)).toFixed(1);
    add(svg, 'line', {class: 'median', x1: M.left, x2: M.left + PW, y1: at, y2: at});
    add(svg, 'text', {class: 'note', x: M.left + PW - 4, y: at - 5, 'text-anchor': 'end'}, `median ${s.median}`);
    return drawn;
  }

  for (const [id, draw] of [['inertia-chart', draw_inertia], ['sizes-chart', draw_sizes]]) {
    const svg = document.getElementById(id);
    svg.dataset.drawn = draw(svg);
  }
})();
)js";

void summary_row(std::string& out, std::string_view header, std::string_view value_html) {
  out += "<tr><th scope=\"row\">";
  out += header;
  out += "</th><td>";
  out += value_html;
  out += "</td></tr>\n";
}

std::string summary_table(const ReportData& d) {
  std::string t = "<table class=\"summary\">\n";
  summary_row(t, "Input", "<code>" + html(d.input) + "</code>");
  summary_row(t, "Format", html(d.format));
  summary_row(t, "Shape", grouped(d.rows) + " &times; " + grouped(d.cols));
  summary_row(t, "Clusters (k)", grouped(d.k));
  std::string init = html(d.init);
  if (d.n_init > 1)
    init += ", best of " + std::to_string(d.n_init) + " runs (run " + std::to_string(d.best_init) + " kept)";
  summary_row(t, "Initialisation", init);
  std::string iterations = std::to_string(d.n_iter);
  if (d.history.size() > static_cast<std::size_t>(std::max(d.n_iter, 0)))
    iterations += " (" + std::to_string(d.history.size()) + " over all runs)";
  summary_row(t, "Iterations", iterations);
  summary_row(t, "Stopped", (d.converged ? "converged (" : "not converged (") + html(d.stop_reason) + ")");
  summary_row(t, "Inertia", shown_exact(d.inertia));
  summary_row(t, "Time", shown(d.seconds, 4) + " s");
  summary_row(t, "Seeding", shown(d.init_seconds, 4) + " s");
  summary_row(t, "SIMD target", html(d.target));
  summary_row(t, "Threads", d.threads > 0 ? std::to_string(d.threads) : "all cores");
  summary_row(t, "Data", d.streamed ? "streamed from disk" : "in memory");
  return t + "</table>\n";
}

std::string inertia_caption(const ReportData& d, bool log_scale) {
  std::string c = "Inertia after each iteration";
  if (d.n_init > 1) {
    c += " of each of the " + std::to_string(d.n_init) + " runs: <span class=\"swatch best\"></span>run " +
         std::to_string(d.best_init) + " (kept), <span class=\"swatch\"></span>the others";
  }
  c += log_scale ? ". Log scale: the values span a factor of " + std::to_string(static_cast<int>(kLogScaleRatio)) +
                       " or more."
                 : ".";
  return c;
}

std::string sizes_caption(const ReportData& d, const SizeChart& sizes) {
  const std::size_t k = d.cluster_sizes.size();
  if (k == 0) return "No cluster sizes.";
  std::string c;
  if (sizes.group == 1) {
    c = "One bar per cluster, largest first.";
  } else {
    c = "Binned: " + grouped(k) + " clusters are too many for a bar each, so clusters sorted by size (largest first) are "
        "grouped " + grouped(sizes.group) + " per bar (" + std::to_string(sizes.bars.size()) +
        " bars; a bar's height is its group's mean size, its line the group's smallest to largest).";
  }
  // The median of an even count may fall halfway between two sizes.
  const std::string median = sizes.median == std::floor(sizes.median)
                                 ? grouped(static_cast<std::uint64_t>(sizes.median))
                                 : shown(sizes.median, 15);
  c += " Points per cluster: min " + grouped(sizes.min) + ", median " + median + ", max " +
       grouped(sizes.max) + ".";
  if (sizes.empty > 0) c += " " + grouped(sizes.empty) + (sizes.empty == 1 ? " cluster is" : " clusters are") + " empty.";
  return c;
}

std::string iteration_table(const ReportData& d) {
  std::string t = "<details>\n<summary>Per-iteration statistics (" + std::to_string(d.history.size()) +
                  (d.history.size() == 1 ? " row" : " rows") + ")</summary>\n";
  if (d.history.empty()) return t + "<p>No iterations were recorded.</p>\n</details>\n";
  t += "<table class=\"iterations\">\n<thead><tr><th class=\"num\">run</th><th class=\"num\">iteration</th>"
       "<th class=\"num\">inertia</th><th class=\"num\">center shift</th><th class=\"num\">labels changed</th>"
       "<th class=\"num\">distances computed</th><th class=\"num\">empty relocated</th><th class=\"num\">seconds</th></tr></thead>\n<tbody>\n";
  for (const IterationStats& it : d.history) {
    t += it.init_run == d.best_init ? "<tr class=\"best\">" : "<tr>";
    t += "<td class=\"num\">" + std::to_string(it.init_run) + "</td><td class=\"num\">" +
         std::to_string(it.iteration) + "</td><td class=\"num\">" + shown(it.inertia, 10) +
         "</td><td class=\"num\">" + shown(it.center_shift, 4) + "</td><td class=\"num\">" +
         grouped(it.labels_changed) + "</td><td class=\"num\">" + grouped(it.distances) +
         "</td><td class=\"num\">" + grouped(it.empty_relocated) +
         "</td><td class=\"num\">" + shown(it.seconds, 3) + "</td></tr>\n";
  }
  return t + "</tbody>\n</table>\n</details>\n";
}

}  // namespace

std::string render_report_html(const ReportData& data) {
  const SizeChart sizes = size_chart(data.cluster_sizes);
  const bool log_scale = wants_log_scale(data.history);
  return
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // The page must open offline and years later: the browser is told to load nothing.
      "<meta http-equiv=\"Content-Security-Policy\" "
      "content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'\">\n"
      "<title>flashkm report: " +
      html(data.input) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n<script>\n" +
      std::string(kErrorHook) + "</script>\n<header>\n<h1>k-means report</h1>\n<p class=\"subtitle\">" +
      html(data.input) + "</p>\n</header>\n<main>\n<noscript><p>The charts need JavaScript; the tables carry the "
      "same numbers.</p></noscript>\n<h2>Summary</h2>\n" + summary_table(data) +
      "<h2>Inertia per iteration</h2>\n<figure>\n"
      "<svg id=\"inertia-chart\" viewBox=\"0 0 720 320\" role=\"img\" aria-labelledby=\"inertia-caption\"></svg>\n"
      "<figcaption id=\"inertia-caption\">" + inertia_caption(data, log_scale) + "</figcaption>\n</figure>\n"
      "<h2>Cluster sizes</h2>\n<figure>\n"
      "<svg id=\"sizes-chart\" viewBox=\"0 0 720 320\" role=\"img\" aria-labelledby=\"sizes-caption\"></svg>\n"
      "<figcaption id=\"sizes-caption\">" + sizes_caption(data, sizes) + "</figcaption>\n</figure>\n" +
      iteration_table(data) + "</main>\n<footer>Written by flashkm. This page loads nothing from the network.</footer>\n"
      "<script type=\"application/json\" id=\"report-data\">" + json_for_script(report_json(data, sizes, log_scale)) +
      "</script>\n<script>" + std::string(kDrawScript) + "</script>\n</body>\n</html>\n";
}

}  // namespace flashkm::cli
