// SPDX-License-Identifier: Apache-2.0
// Outside user of the installed vattn package: generate a case, write it to an HDF5 case file,
// read it back, run the float64 oracle and compare it against itself. Prints PASS, exits 0.
// usage: vattn_consumer OUT.h5
#include <vattn/casefile/case_file.h>
#include <vattn/check/tolerance.h>
#include <vattn/gen/generate.h>
#include <vattn/oracle/cpu_oracle.h>
#include <vattn/recipe/recipe.h>

#include <cstdio>
#include <exception>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: vattn_consumer OUT.h5\n");
    return 2;
  }
  try {
    const vattn::Case c = vattn::generate_case(vattn::Recipe::parse("B=1 H=2 P=[33] T=[3]"), "consumer");
    vattn::CaseFileHeader header;
    header.source = "synthetic:install-test";
    vattn::write_case_file(argv[1], header, {c});

    const vattn::CaseFile file = vattn::read_case_file(argv[1]);
    if (file.cases.size() != 1) {
      std::fprintf(stderr, "FAIL: read %zu cases, wrote 1\n", file.cases.size());
      return 1;
    }
    const vattn::Case& back = file.cases[0];
    const vattn::Reference ref64 = vattn::oracle_fp64(back);
    const vattn::Reference bf16ref = vattn::reference_bf16_emulated(back);
    const std::vector<float> out(ref64.out.begin(), ref64.out.end());
    const std::vector<float> lse(ref64.lse.begin(), ref64.lse.end());
    const vattn::CompareReport report = vattn::compare(back, ref64, bf16ref, out, lse, "oracle_fp64 vs itself");
    std::printf("%s\n", report.summary_line().c_str());
    if (!report.pass || ref64.out.empty()) {
      std::fprintf(stderr, "FAIL: %s\n", report.detail().c_str());
      return 1;
    }
    std::printf("PASS: %zu outputs of case '%s' (%s) round-tripped and compared\n", ref64.out.size(), back.name.c_str(),
                file.header.source.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: %s\n", e.what());
    return 1;
  }
}
