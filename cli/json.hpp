// The JSON the command writes (--json of fit, predict and info; the report's embedded data),
// all built with nlohmann::json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flashkm/options.hpp"

namespace flashkm::cli {

/// Keys stay in the order they were added, as a reader of --json expects.
using Json = nlohmann::ordered_json;

/// The text of `j` (pretty-printed with `indent` spaces; compact when indent < 0). Strings that
/// are not valid UTF-8 (a path is bytes, not text) have each invalid byte replaced by U+FFFD,
/// so that the text always parses; `replaced`, when given, says whether that happened. NaN and
/// infinities are written as null.
std::string json_text(const Json& j, int indent, bool* replaced = nullptr);

/// Prints `j` on stdout, pretty-printed. When a string had to be repaired (json_text), says so
/// on stderr: "flashkm: warning: ... not valid UTF-8 ...".
void print_json(const Json& j);

/// Compact, ASCII-only JSON that is also safe inside an HTML <script> element: '<', '>' and '&'
/// are written as \u003c, \u003e, \u0026 (no "</script" or "<!--" can appear) and every
/// non-ASCII character as \uXXXX (U+2028/2029 included, for JavaScript parsers older than
/// ES2019). Invalid UTF-8 is replaced as in json_text.
std::string json_for_script(const Json& j);

/// The per-iteration history: one object per iteration of every run.
Json history_json(const std::vector<IterationStats>& history);

}  // namespace flashkm::cli
