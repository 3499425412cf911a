// SPDX-License-Identifier: Apache-2.0
// `vattn fuzz --mix-from DIR`: the shapes of captured traffic (vattn case files) as the case
// stream's mix table (vattn/fuzz/gen/mix_table.h), and DIR/mix.json of a campaign, which keeps the
// table so --resume draws the same stream. mix.json is read back as untrusted input: every field
// checked, a clear error naming the file and the field.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vattn/fuzz/gen/mix_table.h"
#include "vattn/fuzz/protocol/protocol.h"

namespace vattn::fuzz {

constexpr const char* kMixSchema = "vattn-fuzz-mix";
constexpr int kMixVersion = 1;
constexpr int kMixSharePercent = 50;  // of a campaign's cases drawn from captured shapes

// What reading a folder of case files found.
struct MixSource {
  MixTable table;
  std::string dir;
  int64_t files = 0;                 // *.h5 files in the folder
  int64_t cases = 0;                 // cases read from them
  int64_t sampled = 0;               // cases in the table (all of them, or a uniform sample of kMaxMixShapes)
  std::vector<std::string> skipped;  // "FILE: why", for files that could not be read (in part or at all)
};

// Reads every *.h5 directly in `dir` (sorted by name), one isolated reader per file
// (vattn/casefile/isolated_reader.h): each case's H, P_b, T_b and whether some request's mask is
// not a chain. A file that cannot be read is skipped and named; the cases it gave before stay.
// With more cases than kMaxMixShapes, a uniform sample of them (reservoir, drawn from `seed`).
// Equal shapes become one entry with their count. Throws InputError (field --mix-from) for a
// missing folder, one without *.h5 files, or one where no case could be read.
MixSource read_mix_dir(const std::string& dir, uint64_t seed);

// mix.json (schema vattn-fuzz-mix, version 1): the table, where it came from, and when.
json mix_to_json(const MixSource& source);
// Writes `doc` to `path` through a fresh temporary in the same folder (O_EXCL, O_NOFOLLOW),
// renamed into place; returns the digest of the bytes written (mix_digest). Throws InputError.
std::string write_mix_file(const std::string& path, const json& doc);
// Reads and checks mix.json; `digest` (non-empty) must match the file's bytes. Throws InputError
// naming the file and the field (e.g. "shapes[3].P[0]").
MixTable load_mix_file(const std::string& path, const std::string& digest);
// FNV-1a 64 of the bytes, in hex: the campaign line records it, so a mix.json edited after the
// campaign started (and with it the stream) is refused, not silently used.
std::string mix_digest(const std::string& bytes);

}  // namespace vattn::fuzz
