#include "json.hpp"

#include <cstdio>

namespace flashkm::cli {
namespace {

std::string dump(const Json& j, int indent, bool ascii, bool* replaced) {
  try {
    if (replaced) *replaced = false;
    return j.dump(indent, ' ', ascii, Json::error_handler_t::strict);
  } catch (const Json::type_error&) {  // 316: invalid UTF-8 in a string
    if (replaced) *replaced = true;
    return j.dump(indent, ' ', ascii, Json::error_handler_t::replace);
  }
}

}  // namespace

std::string json_text(const Json& j, int indent, bool* replaced) { return dump(j, indent, false, replaced); }

void print_json(const Json& j) {
  bool replaced = false;
  const std::string text = json_text(j, 2, &replaced) + "\n";
  if (replaced) {
    std::fprintf(stderr,
                 "flashkm: warning: a name in the JSON output is not valid UTF-8; its invalid bytes are "
                 "written as U+FFFD\n");
  }
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
}

std::string json_for_script(const Json& j) {
  const std::string ascii = dump(j, -1, true, nullptr);
  // '<', '>' and '&' can only occur inside JSON strings, where \u escapes mean the same.
  std::string out;
  out.reserve(ascii.size());
  for (const char c : ascii) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

Json history_json(const std::vector<IterationStats>& history) {
  Json h = Json::array();
  for (const IterationStats& s : history) {
    h.push_back({{"run", s.init_run},
                 {"iteration", s.iteration},
                 {"inertia", s.inertia},
                 {"center_shift", s.center_shift},
                 {"labels_changed", s.labels_changed},
                 {"distances", s.distances},
                 {"empty_relocated", s.empty_relocated},
                 {"seconds", s.seconds}});
  }
  return h;
}

}  // namespace flashkm::cli
