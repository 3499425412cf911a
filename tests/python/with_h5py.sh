#!/usr/bin/env bash
# Runs a command only when python3 can import h5py and numpy; otherwise exits 77, which the
# ctest registration maps to "skipped" (SKIP_RETURN_CODE 77), with the reason in the log.
if ! command -v python3 >/dev/null 2>&1; then
  echo "SKIP: python3 not found (these tests need python3 with h5py and numpy)"
  exit 77
fi
if ! python3 -c "import h5py, numpy" >/dev/null 2>&1; then
  echo "SKIP: python3 cannot import h5py and numpy (python3 -m pip install h5py numpy)"
  exit 77
fi
exec "$@"
# SPDX-License-Identifier: Apache-2.0
