# Every third-party dependency comes from a Debian 12 package (scripts/install-deps).
find_package(Threads REQUIRED)
find_package(absl CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)
find_package(spdlog CONFIG REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(nlohmann_json CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(tomlplusplus CONFIG REQUIRED)
find_package(ONNX CONFIG REQUIRED)
find_package(GTest CONFIG REQUIRED)
find_package(benchmark CONFIG REQUIRED)
find_package(OpenCL REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(SYSTEMD REQUIRED IMPORTED_TARGET libsystemd)
pkg_check_modules(SQLITE3 REQUIRED IMPORTED_TARGET sqlite3)
pkg_check_modules(CBC REQUIRED IMPORTED_TARGET cbc)

# XNNPACK and its companions ship no CMake config in Debian 12.
find_library(XNNPACK_LIBRARY NAMES XNNPACK REQUIRED)
find_library(PTHREADPOOL_LIBRARY NAMES pthreadpool REQUIRED)
find_library(CPUINFO_LIBRARY NAMES cpuinfo REQUIRED)
add_library(psched_xnnpack INTERFACE)
target_link_libraries(psched_xnnpack INTERFACE ${XNNPACK_LIBRARY} ${PTHREADPOOL_LIBRARY}
                      ${CPUINFO_LIBRARY} Threads::Threads)
add_library(psched::xnnpack ALIAS psched_xnnpack)
add_library(psched_cpuinfo INTERFACE)
target_link_libraries(psched_cpuinfo INTERFACE ${CPUINFO_LIBRARY})
add_library(psched::cpuinfo ALIAS psched_cpuinfo)

# oneDNN (libdnnl-dev, x86 only): faster JIT convs for some configurations
# (executor/cpu/kernel_choice.h). Optional: without it every conv runs on XNNPACK. Debian's
# build uses OpenMP, whose omp_set_num_threads the kernels call.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  find_package(dnnl CONFIG QUIET)
  find_package(OpenMP QUIET COMPONENTS CXX)
  if(dnnl_FOUND AND OpenMP_CXX_FOUND)
    add_library(psched_onednn INTERFACE)
    target_link_libraries(psched_onednn INTERFACE DNNL::dnnl OpenMP::OpenMP_CXX)
    add_library(psched::onednn ALIAS psched_onednn)
  endif()
endif()

# Debian's XGBoost CMake config names a CLI binary the -dev package does not ship; link the
# C API library directly.
find_library(XGBOOST_LIBRARY NAMES xgboost REQUIRED)
add_library(psched_xgboost INTERFACE)
target_link_libraries(psched_xgboost INTERFACE ${XGBOOST_LIBRARY})
add_library(psched::xgboost ALIAS psched_xgboost)
