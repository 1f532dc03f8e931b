// Compiled as if it were a file of src/core (with the core room's include root only): it must
// NOT compile, because the core may not include the CPU backend's private headers.
#include "cpu/cpu_engine.hpp"
