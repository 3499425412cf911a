// SPDX-License-Identifier: Apache-2.0
/* Linked into every executable of a VATTN_SANITIZE build (vattn_portable_exe): the sanitizers'
 * defaults, before ASAN_OPTIONS / UBSAN_OPTIONS (which still override them).
 *  - handle_segv/handle_abort=0: deliberate crashes (the fuzzer's host:faulty targets, the corrupt
 *    HDF5 read tests) must stay signals the supervisor and the read watchdog see as such;
 *  - suppressions (cmake/asan.supp): reports from inside libhdf5 (not instrumented), which the
 *    corrupt-file tests drive through deliberately broken files, are not vattn's;
 *  - halt_on_error / abort: a report fails the run (UBSan prints and carries on by default). */
const char* __asan_default_options(void);
const char* __ubsan_default_options(void);
__attribute__((used, visibility("default"))) const char* __asan_default_options(void) {
  return "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_abort=0:halt_on_error=1"
         ":suppressions=" VATTN_ASAN_SUPPRESSIONS;
}
__attribute__((used, visibility("default"))) const char* __ubsan_default_options(void) {
  return "halt_on_error=1:print_stacktrace=1";
}
