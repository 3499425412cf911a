// SPDX-License-Identifier: Apache-2.0
// The in-tree revision "split-v2": split_revision.cu built with VATTN_SPLIT_V2 (its own
// namespace, symbol vattn_revision_split_v2, split_v2_partial.cuh as the partial kernel).
#define VATTN_SPLIT_V2
#include "split_revision.cu"
