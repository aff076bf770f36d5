# Cross build for arm64 boards on a Debian 12 amd64 host (`make test-arm64`, docs/boards.md):
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# What it needs is installed by `scripts/install-deps --arch arm64`: g++-aarch64-linux-gnu,
# the arm64 libraries through Debian multiarch (/usr/lib/aarch64-linux-gnu), the few that
# cannot sit beside their amd64 versions unpacked into PSCHED_CROSS_ROOT, and qemu-user-static.
# Code generators run on the host: protoc and grpc_cpp_plugin are the amd64 ones in /usr/bin
# (the arm64 gRPC CMake config names the same path). Built binaries that must run during the
# build (test discovery, the default config, man pages) and the tests run under qemu.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(PSCHED_CROSS_ROOT "/opt/psched-cross/arm64"
    CACHE PATH "Root the non-co-installable arm64 packages are unpacked into (install-deps)")
if(NOT EXISTS "${PSCHED_CROSS_ROOT}/usr/lib/aarch64-linux-gnu/libXNNPACK.so")
  message(FATAL_ERROR "${PSCHED_CROSS_ROOT} has no arm64 XNNPACK: run "
                      "`scripts/install-deps --arch arm64` first")
endif()

# Libraries, headers and CMake packages: the multiarch ones under / and the unpacked ones;
# programs: the host's.
set(CMAKE_FIND_ROOT_PATH "${PSCHED_CROSS_ROOT}" "/")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config (libsystemd, sqlite3, cbc) must read the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# The unpacked libraries' own dependencies (libXNNPACK.so needs libpthreadpool.so.0) are
# found there when linking.
set(CMAKE_EXE_LINKER_FLAGS_INIT
    "-Wl,-rpath-link,${PSCHED_CROSS_ROOT}/usr/lib/aarch64-linux-gnu")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${CMAKE_EXE_LINKER_FLAGS_INIT}")

# qemu-user with -L: a path the program opens is looked up under PSCHED_CROSS_ROOT first, so
# the arm64 dynamic loader (/lib/ld-linux-aarch64.so.1, multiarch libc6:arm64) finds the
# unpacked libraries there and every other arm64 library in /usr/lib/aarch64-linux-gnu.
find_program(PSCHED_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${PSCHED_QEMU_AARCH64};-L;${PSCHED_CROSS_ROOT}")
