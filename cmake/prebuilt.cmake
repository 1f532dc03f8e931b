# Included by the top-level CMakeLists.txt when FLASHKM_PREBUILT_DIR names a build tree of this
# source: the Python extension over that tree's static libraries, and that tree's command
# installed beside it. The tree must have been built from the same sources (the Makefile builds
# it first); flashkm.mpi is built where that tree has the MPI engine.
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
if(prebuilt_FLASHKM_WITH_MPI AND EXISTS ${prebuilt_mpi})
  find_package(MPI COMPONENTS CXX REQUIRED)
  add_library(flashkm::mpi STATIC IMPORTED)
  set_target_properties(flashkm::mpi PROPERTIES
    IMPORTED_LOCATION ${prebuilt_mpi}
    INTERFACE_LINK_LIBRARIES "flashkm::flashkm;MPI::MPI_CXX")
endif()

if(FLASHKM_BUILD_CLI)
  set(prebuilt_cli ${FLASHKM_PREBUILT_DIR}/cli/flashkm)
  if(NOT EXISTS ${prebuilt_cli})
    message(FATAL_ERROR "FLASHKM_PREBUILT_DIR=${FLASHKM_PREBUILT_DIR} holds no cli/flashkm")
  endif()
  install(PROGRAMS ${prebuilt_cli} DESTINATION ${flashkm_cli_destination})
endif()

add_subdirectory(python)
