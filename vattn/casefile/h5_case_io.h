// SPDX-License-Identifier: Apache-2.0
// Pieces of the case-file reader that the writer reuses (write_case_output edits an existing
// file, which must first be recognised as a case file). Implemented in case_file_read.cpp.
#pragma once

#include <hdf5.h>

#include <string>

#include "vattn/casefile/case_file.h"
#include "vattn/casefile/h5_handle.h"

namespace vattn::h5 {

// Opens an existing case file; InputError when it is missing, not HDF5, or unreadable.
File open_case_file(const std::string& path, bool writable);
// Reads the root attributes; refuses another format or an unknown major version.
CaseFileHeader read_header(hid_t file, const std::string& path);

// Names of the schema's root and case attributes.
constexpr const char* kOptionalHeaderKeys[] = {"model", "gpu", "notes"};
constexpr const char* kCaseIntAttrKeys[] = {"layer", "step", "tp_rank"};

}  // namespace vattn::h5
