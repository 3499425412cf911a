// SPDX-License-Identifier: Apache-2.0
/* The names of the in-tree kernel revisions, and which one a command, script or test means when
 * it is not told: one place, so the default cannot differ between the CLI, the bench and the tests.
 * Plain C, no include: the CPU-only build (no CUDA toolkit) includes it too.
 *
 *   VATTN_REVISION_DEFAULT   the shipped revision: what `--kernel` and $VATTN_KERNEL default to
 *   VATTN_REVISION_BASELINE  the revision the shipped one is measured against
 *   VATTN_REVISION_NAMES     every in-tree revision, as a comma-separated list of strings
 *   VATTN_REVISION_LIST      the same names as one string, for help texts and messages
 *
 * Each in-tree revision is one `#define VATTN_REVISION_<ID> "<name>"` line, and only those lines
 * define a macro as a lone string: tests/gpu/CMakeLists.txt reads them to register the GPU tests
 * once per revision. A new revision also needs its entry in vattn/gpu/revision.cpp.
 */
#ifndef VATTN_REVISIONS_H
#define VATTN_REVISIONS_H

#define VATTN_REVISION_SPLIT_V1 "split-v1"
#define VATTN_REVISION_SPLIT_V2 "split-v2"

#define VATTN_REVISION_DEFAULT VATTN_REVISION_SPLIT_V2
#define VATTN_REVISION_BASELINE VATTN_REVISION_SPLIT_V1

#define VATTN_REVISION_NAMES VATTN_REVISION_SPLIT_V1, VATTN_REVISION_SPLIT_V2
#define VATTN_REVISION_LIST VATTN_REVISION_SPLIT_V1 ", " VATTN_REVISION_SPLIT_V2

#endif /* VATTN_REVISIONS_H */
