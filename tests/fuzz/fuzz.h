/* fuzz: what every harness in tests/fuzz shares. A harness defines LLVMFuzzerTestOneInput;
 * built with clang's -fsanitize=fuzzer it is a libFuzzer target (tests/fuzz/run.sh), built
 * with replay_main.c it replays the seed corpus in the normal test suite. */
#ifndef COSCHED_FUZZ_H
#define COSCHED_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a file the code under test can open by name: an anonymous memfd, named
 * /proc/self/fd/N in path. Returns the descriptor (close it after), or -1. */
int fuzz_input_file(const uint8_t *data, size_t size, char *path, size_t pathlen);

/* The input as a NUL-terminated string (the caller frees it). */
char *fuzz_input_string(const uint8_t *data, size_t size);

/* Stop the run with a message when a property the harness checks does not hold: a finding,
 * like a crash, that both libFuzzer and the replay report. */
void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
