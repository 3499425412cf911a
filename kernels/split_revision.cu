// SPDX-License-Identifier: Apache-2.0
// The in-tree revision "split-v1" (vattn::kern, Traits in split_traits.h): its partial kernel
// (split_partial.cuh) under the shared planner, reduce and host code (split_revision.cuh).
#define VATTN_KERN_NS kern
#define VATTN_REVISION_DEFAULT_SYMBOL vattn_revision_split_v1
#include "split_partial.cuh"
#include "split_revision.cuh"
