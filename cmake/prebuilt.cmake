# Included by the top-level CMakeLists.txt when FLASHKM_PREBUILT_DIR names a build tree of this
# source: the Python extension over that tree's static libraries, and that tree's command
# installed beside it. The tree must have been built from the same sources (the Makefile builds
# it first), with the MPI engine where this build wants flashkm.mpi.
if(NOT FLASHKM_BUILD_PYTHON OR FLASHKM_BUILD_TESTS OR FLASHKM_BUILD_BENCH)
  message(FATAL_ERROR "FLASHKM_PREBUILT_DIR builds the Python extension only: set "
                      "FLASHKM_BUILD_PYTHON=ON and FLASHKM_BUILD_TESTS=OFF, FLASHKM_BUILD_BENCH=OFF")
endif()
set(prebuilt_lib ${FLASHKM_PREBUILT_DIR}/libflashkm.a)
if(NOT EXISTS ${prebuilt_lib})
  message(FATAL_ERROR "FLASHKM_PREBUILT_DIR=${FLASHKM_PREBUILT_DIR} holds no libflashkm.a: "
                      "build that tree first (make build)")
endif()
# The library's own link interface (CMakeLists.txt links these PRIVATE into a static library).
add_library(flashkm::flashkm STATIC IMPORTED)
set_target_properties(flashkm::flashkm PROPERTIES
  IMPORTED_LOCATION ${prebuilt_lib}
  INTERFACE_INCLUDE_DIRECTORIES ${PROJECT_SOURCE_DIR}/include
  INTERFACE_COMPILE_FEATURES cxx_std_20
  INTERFACE_LINK_LIBRARIES "hwy::hwy;OpenMP::OpenMP_CXX")

option(FLASHKM_WITH_MPI "Build the MPI engine when MPI is found" ON)
set(prebuilt_mpi ${FLASHKM_PREBUILT_DIR}/libflashkm_mpi.a)
if(FLASHKM_WITH_MPI AND EXISTS ${prebuilt_mpi})
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
  if(DEFINED SKBUILD_SCRIPTS_DIR)
    install(PROGRAMS ${prebuilt_cli} DESTINATION ${SKBUILD_SCRIPTS_DIR})
  else()
    install(PROGRAMS ${prebuilt_cli} DESTINATION bin)
  endif()
endif()

add_subdirectory(python)
