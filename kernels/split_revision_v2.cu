// SPDX-License-Identifier: Apache-2.0
// The in-tree revision "split-v2" (vattn::kern_v2, Traits in split_traits.h): its partial kernel
// (split_v2_partial.cuh) under the shared planner, reduce and host code (split_revision.cuh).
#define VATTN_KERN_NS kern_v2
#define VATTN_REVISION_DEFAULT_SYMBOL vattn_revision_split_v2
// The partial kernel first: the shared host code launches it by name.
#include "split_v2_partial.cuh"

#include "split_revision.cuh"
