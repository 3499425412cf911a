// SPDX-License-Identifier: Apache-2.0
// What distinguishes the in-tree revisions, one traits struct each in the revision's namespace
// (vattn::kern: split-v1, vattn::kern_v2: split-v2). The shared headers are compiled once per
// revision inside that namespace (VATTN_KERN_NS, set by the revision's .cu: split_revision.cu,
// split_revision_v2.cu) and read every difference from `Traits`; the partial kernel itself is
// the one part that is not shared (split_partial.cuh, split_v2_partial.cuh).
#pragma once

namespace vattn::kern {
struct Traits {
  static constexpr int kRowsPerTile = 32;             // query rows (draft x head) per work item
  static constexpr int kMinTilesPerSplit = 4;         // the planner never cuts a request finer than this
  static constexpr int kSmemRowPad = 8;               // +16 B per K/V row: ldmatrix rows land on distinct banks
  static constexpr bool kSoftmaxInRegisters = false;  // S partials per d_qk quarter, P and row stats in smem
  static constexpr bool kPdl = false;                 // plain launches
  static constexpr bool kPackLoneRequest = false;
  static constexpr const char kName[] = "split-v1";
  static constexpr const char kDescription[] =
      "KV-split flash-decode (plan, partial, LSE reduce); mma.sync bf16, ldmatrix, cp.async; "
      "32 rows x 32 keys per stage, 2 stages, 8 warps";
};
}  // namespace vattn::kern

namespace vattn::kern_v2 {
struct Traits {
  static constexpr int kRowsPerTile = 64;
  // 2, not split-v1's 4: once Q and the partial went through the K/V stages an item's fixed
  // cost fell, and at B=1 P=4096 (T=1, 16) twice the splits were 9-14% faster on the H200;
  // no other shape's plan changes.
  static constexpr int kMinTilesPerSplit = 2;
  // K/V rows of 1152 B, nine whole 128 B lines, without padding: a quarter warp's 16 B copies
  // then fill one line, and the chunks of each line are swizzled (v2_chunk in
  // split_v2_partial.cuh) so that ldmatrix's eight rows still land on distinct banks.
  static constexpr int kSmemRowPad = 0;
  // The two warps of a row block swap S partials in fragment order and each keeps its rows'
  // statistics in registers; P never leaves the registers (split_v2_partial.cuh).
  static constexpr bool kSoftmaxInRegisters = true;
  static constexpr bool kPdl = true;  // partial and reduce launched with PDL (pdl.cuh)
  // A lone request gets a finer cut whose short last splits run two to a block (split_pack.h).
  static constexpr bool kPackLoneRequest = true;
  static constexpr const char kName[] = "split-v2";
  static constexpr const char kDescription[] =
      "KV-split flash-decode (plan, partial, LSE reduce); mma.sync bf16, ldmatrix, cp.async; "
      "64 rows x 32 keys per stage, 2 stages, 8 warps";
};
}  // namespace vattn::kern_v2
