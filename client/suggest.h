/* suggest: "did you mean 'status'?" for a mistyped command or subcommand. */
#ifndef COSCHED_SUGGEST_H
#define COSCHED_SUGGEST_H

#include <stddef.h>

/* What word is most likely a slip for, as "'status' or 'stats'": the one name it begins, else the
 * names nearest to it within two edits (a swap of neighbours counting one), else all the names it
 * begins. "" when none is. */
void suggest_names(const char *word, const char *const *names, size_t n, char *out, size_t len);

#endif
