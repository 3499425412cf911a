#!/usr/bin/env bash
# Kept for old habits: the overnight campaign is `vattn fuzz` now (fuzz/README.md).
exec "$(cd "$(dirname "$0")/.." && pwd)/build/vattn" fuzz "$@"
# SPDX-License-Identifier: Apache-2.0
