# Cross build for 64-bit Arm Linux with Debian's cross compiler.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# What it needs on a Debian 12 x86-64 machine (scripts/test-aarch64.sh
# installs all of it):
#   gcc-aarch64-linux-gnu libc6-dev-arm64-cross     the compiler and its libc
#   libinih-dev:arm64 libcunit1-dev:arm64           the host's and the tests'
#                                                   libraries, from Debian's arm64
#                                                   archive through multiarch
#                                                   (dpkg --add-architecture arm64)
#   qemu-user                                       runs the tests (ctest)
#
# Libraries come from the multiarch folders (/usr/lib/aarch64-linux-gnu),
# not from a sysroot, so nothing is re-rooted: find_library looks in the
# aarch64 multiarch folder first (CMAKE_LIBRARY_ARCHITECTURE), and pkg-config
# is pointed at the arm64 .pc files only, so an x86 library can never be
# picked up by accident.
#
# Tests run through qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR). The CPU
# model qemu emulates decides which kernels the NEON backend chooses:
#   -cpu max          every extension qemu knows (dotprod, i8mm, ...)
#   -cpu cortex-a53   plain ARMv8.0 NEON, no dotprod
# Pick it per run with qemu's own environment variable (QEMU_CPU=cortex-a53
# ctest ...), which also reaches programs the tests start, or bake it in
# with -DANVIL_QEMU_CPU=cortex-a53. Unset, qemu emulates "max".

set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(ANVIL_CROSS_TRIPLE aarch64-linux-gnu)
if(NOT DEFINED CMAKE_C_COMPILER)
  set(CMAKE_C_COMPILER ${ANVIL_CROSS_TRIPLE}-gcc)
endif()
# C++ only compiles the SDK's C++ header check; it is skipped when the cross
# g++ is not installed.
find_program(ANVIL_CROSS_CXX ${ANVIL_CROSS_TRIPLE}-g++)
if(ANVIL_CROSS_CXX AND NOT DEFINED CMAKE_CXX_COMPILER)
  set(CMAKE_CXX_COMPILER ${ANVIL_CROSS_CXX})
endif()
set(CMAKE_LIBRARY_ARCHITECTURE ${ANVIL_CROSS_TRIPLE})

# Debian 12's aarch64 gcc 12.2 crashes (internal compiler error in
# vect_transform_reduction) when it auto-vectorizes an fmax() reduction over
# floats widened to double, a loop the test suites use. Loop vectorization
# is off for the cross build: it never changes results here (no
# -ffast-math, so float reductions are never reassociated), the NEON kernels
# are written with intrinsics, and straight-line (SLP) vectorization stays.
set(CMAKE_C_FLAGS_INIT "-fno-tree-loop-vectorize")
set(CMAKE_CXX_FLAGS_INIT "-fno-tree-loop-vectorize")

# pkg-config: the arm64 .pc files (multiarch) and arch-independent ones only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${ANVIL_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# The emulator ctest puts in front of every test program. No -L: the arm64
# libc from multiarch (libc6:arm64, which libinih-dev:arm64 pulls in) puts
# its loader at /lib/ld-linux-aarch64.so.1, so qemu runs the programs as an
# arm64 Debian would. `-L /usr/aarch64-linux-gnu` would mix two glibc builds
# (the cross package's loader with the multiarch libc.so.6 that ld.so.cache
# points at); their private interfaces differ, and the first pthread_create
# spins forever. ANVIL_QEMU_SYSROOT sets -L for a machine that has a
# complete sysroot and no multiarch libc.
set(ANVIL_QEMU qemu-aarch64 CACHE STRING "qemu user-mode emulator for aarch64")
set(ANVIL_QEMU_SYSROOT "" CACHE PATH "qemu -L prefix (empty: the multiarch libc in /lib)")
set(ANVIL_QEMU_CPU "" CACHE STRING "qemu -cpu model for the tests (empty: QEMU_CPU from the environment, else max)")
set(CMAKE_CROSSCOMPILING_EMULATOR ${ANVIL_QEMU})
if(ANVIL_QEMU_SYSROOT)
  list(APPEND CMAKE_CROSSCOMPILING_EMULATOR -L ${ANVIL_QEMU_SYSROOT})
endif()
if(ANVIL_QEMU_CPU)
  list(APPEND CMAKE_CROSSCOMPILING_EMULATOR -cpu ${ANVIL_QEMU_CPU})
endif()
