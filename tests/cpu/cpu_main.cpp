// SPDX-License-Identifier: Apache-2.0
// Catch2 entry point for the CPU test binary.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
