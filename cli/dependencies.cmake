# The command's own dependencies, found by cli/CMakeLists.txt and, where the wheel links the
# command from a build tree's archives, by cmake/prebuilt.cmake.
find_package(CLI11 CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)
