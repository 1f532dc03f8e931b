# Included by the top-level CMakeLists.txt when FLASHKM_PREBUILT_DIR names a build tree of this
# source: the Python extension over that tree's static libraries, and that tree's command
# installed beside it. The tree must have been built from the same sources (the Makefile builds
# it first); flashkm.mpi is built where that tree has the MPI engine, unless FLASHKM_WITH_MPI=OFF
# is given here (`make test-wheel`: a portable wheel must not need libmpi): then neither is the
# MPI module built nor the tree's command installed (it links libmpi); the command is linked
# here from the tree's MPI-free archives, with its ranks.cc compiled without MPI.
if(NOT FLASHKM_BUILD_PYTHON OR FLASHKM_BUILD_TESTS OR FLASHKM_BUILD_BENCH)
  message(FATAL_ERROR "FLASHKM_PREBUILT_DIR builds the Python extension only: set "
                      "FLASHKM_BUILD_PYTHON=ON and FLASHKM_BUILD_TESTS=OFF, FLASHKM_BUILD_BENCH=OFF")
endif()
set(prebuilt_lib ${FLASHKM_PREBUILT_DIR}/libflashkm.a)
if(NOT EXISTS ${prebuilt_lib} OR NOT EXISTS ${FLASHKM_PREBUILT_DIR}/CMakeCache.txt)
  message(FATAL_ERROR "FLASHKM_PREBUILT_DIR=${FLASHKM_PREBUILT_DIR} holds no built libflashkm.a: "
                      "build that tree first (make build)")
endif()
# The tree must come from these sources, and it decides whether there is an MPI engine (its
# command links it too): a libflashkm_mpi.a left from a configuration with
# FLASHKM_WITH_MPI=ON is not used once that tree has it OFF.
load_cache(${FLASHKM_PREBUILT_DIR} READ_WITH_PREFIX prebuilt_ CMAKE_HOME_DIRECTORY FLASHKM_WITH_MPI)
file(REAL_PATH "${prebuilt_CMAKE_HOME_DIRECTORY}" prebuilt_source)
file(REAL_PATH "${PROJECT_SOURCE_DIR}" this_source)
if(NOT prebuilt_source STREQUAL this_source)
  message(FATAL_ERROR "FLASHKM_PREBUILT_DIR=${FLASHKM_PREBUILT_DIR} was built from ${prebuilt_source}, "
                      "not from ${this_source}")
endif()
# The library's own link interface (CMakeLists.txt links these PRIVATE into a static library:
# link-only, as there).
add_library(flashkm::flashkm STATIC IMPORTED)
set_target_properties(flashkm::flashkm PROPERTIES
  IMPORTED_LOCATION ${prebuilt_lib}
  INTERFACE_INCLUDE_DIRECTORIES ${PROJECT_SOURCE_DIR}/include
  INTERFACE_COMPILE_FEATURES cxx_std_20
  INTERFACE_LINK_LIBRARIES "$<LINK_ONLY:hwy::hwy>;$<LINK_ONLY:OpenMP::OpenMP_CXX>")

set(prebuilt_mpi ${FLASHKM_PREBUILT_DIR}/libflashkm_mpi.a)
set(prebuilt_has_mpi OFF)
if(prebuilt_FLASHKM_WITH_MPI AND EXISTS ${prebuilt_mpi})
  set(prebuilt_has_mpi ON)
endif()
# MPI unless it is turned off here (FLASHKM_WITH_MPI is otherwise the tree's business).
set(prebuilt_no_mpi OFF)
if(DEFINED FLASHKM_WITH_MPI AND NOT FLASHKM_WITH_MPI)
  set(prebuilt_no_mpi ON)
endif()
if(prebuilt_has_mpi AND NOT prebuilt_no_mpi)
  find_package(MPI COMPONENTS CXX REQUIRED)
  add_library(flashkm::mpi STATIC IMPORTED)
  set_target_properties(flashkm::mpi PROPERTIES
    IMPORTED_LOCATION ${prebuilt_mpi}
    INTERFACE_LINK_LIBRARIES "flashkm::flashkm;MPI::MPI_CXX")
endif()

if(FLASHKM_BUILD_CLI)
  if(prebuilt_has_mpi AND prebuilt_no_mpi)
    # The tree's command links libmpi: link one without it from the tree's archives (main and
    # the subcommands, their support code, the file readers; cli/CMakeLists.txt), compiling only
    # ranks.cc, the one source that sees <mpi.h>.
    include(${PROJECT_SOURCE_DIR}/cli/dependencies.cmake)
    set(prebuilt_cli_libs "")
    foreach(lib cli/libflashkm_cli_commands.a cli/libflashkm_cli_support.a src/io/libflashkm_io.a)
      if(NOT EXISTS ${FLASHKM_PREBUILT_DIR}/${lib})
        message(FATAL_ERROR "FLASHKM_PREBUILT_DIR=${FLASHKM_PREBUILT_DIR} holds no ${lib}: build that tree first")
      endif()
      list(APPEND prebuilt_cli_libs ${FLASHKM_PREBUILT_DIR}/${lib})
    endforeach()
    add_executable(flashkm_cli ${PROJECT_SOURCE_DIR}/cli/ranks.cc)
    set_target_properties(flashkm_cli PROPERTIES OUTPUT_NAME flashkm)
    target_include_directories(flashkm_cli PRIVATE ${PROJECT_SOURCE_DIR}/cli)
    # The archives in link order (each needs the next), then their own dependencies.
    target_link_libraries(flashkm_cli PRIVATE ${prebuilt_cli_libs} flashkm::flashkm CLI11::CLI11
                          nlohmann_json::nlohmann_json Threads::Threads ZLIB::ZLIB)
    target_compile_options(flashkm_cli PRIVATE -Wall -Wextra)
    install(TARGETS flashkm_cli RUNTIME DESTINATION ${flashkm_cli_destination})
  else()
    set(prebuilt_cli ${FLASHKM_PREBUILT_DIR}/cli/flashkm)
    if(NOT EXISTS ${prebuilt_cli})
      message(FATAL_ERROR "FLASHKM_PREBUILT_DIR=${FLASHKM_PREBUILT_DIR} holds no cli/flashkm")
    endif()
    install(PROGRAMS ${prebuilt_cli} DESTINATION ${flashkm_cli_destination})
  endif()
endif()

add_subdirectory(python)
