#include "errors.hpp"

#include <cstdio>
#include <new>

namespace flashkm::cli {

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

}  // namespace flashkm::cli
