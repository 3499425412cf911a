// SPDX-License-Identifier: Apache-2.0
// split-v1 inside a split-v2 revision library: split-v2 hands decode batches to it (see
// decode_batch() in split_revision.cu). The library's compile switches belong to its split-v2
// translation unit (the export, the name, a planted bug), so they are cleared here: this is
// split-v1 as shipped, under its built-in symbol vattn_revision_split_v1, not exported.
#undef VATTN_SPLIT_V2
#undef VATTN_PDL
#undef VATTN_EXPORT_GET_REVISION
#undef VATTN_REVISION_NAME
#undef VATTN_REVISION_SYMBOL
#undef VATTN_PLANT_SKIP_RESCALE
#undef VATTN_PLANT_DROP_LAST_KEY
#undef VATTN_PLANT_MASK_OVERREAD
#undef VATTN_PLANT_LOG2_MERGE
#undef VATTN_PLANT_EMPTY_SPLIT_NAN
#undef VATTN_PLANT_IGNORE_FORCED_SPLITS
#undef VATTN_PLANT_NO_NONFINITE_GUARD
#undef VATTN_PLANT_CRASH
#undef VATTN_PLANT_HANG
#undef VATTN_PLANT_BF16_PARTIALS
#undef VATTN_UNSAFE_ALLOC
#undef VATTN_UNSAFE_SYNC
#undef VATTN_UNSAFE_D2H
#undef VATTN_UNSAFE_HOST_GRID
#include "split_revision.cu"
