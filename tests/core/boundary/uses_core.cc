// Compiled as if it were a file of src/core: the core's own headers and the public API compile.
#include "core/backend.hpp"
#include "core/engine.hpp"
#include "flashkm/flashkm.hpp"
