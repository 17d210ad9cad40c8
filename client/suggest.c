/* suggest: the distance is optimal string alignment (Levenshtein plus adjacent swaps), on names
 * short enough that a small table on the stack holds them. */
#include "suggest.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define LONGEST 32

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;
    return m < c ? m : c;
}

static size_t distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > LONGEST || lb > LONGEST)
        return (size_t)-1;
    size_t d[LONGEST + 1][LONGEST + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < d[i][j])
                d[i][j] = d[i - 2][j - 2] + 1;
        }
    return d[la][lb];
}

void suggest_names(const char *word, const char *const *names, size_t n, char *out, size_t len)
{
    const char *prefixed = NULL;
    size_t prefixes = 0, best = 3;
    for (size_t i = 0; i < n; i++) {
        if (*word && strncmp(names[i], word, strlen(word)) == 0) {
            prefixed = names[i];
            prefixes++;
        }
        size_t d = distance(word, names[i]);
        if (d < best)
            best = d;
    }
    out[0] = '\0';
    if (prefixes == 1) {
        snprintf(out, len, "'%s'", prefixed);
        return;
    }
    bool by_prefix = prefixes > 1 && best >= 3; /* "st": every name it begins */
    for (size_t i = 0; i < n && (best < 3 || by_prefix); i++)
        if (by_prefix ? strncmp(names[i], word, strlen(word)) == 0 : distance(word, names[i]) == best) {
            size_t used = strlen(out);
            snprintf(out + used, len - used, "%s'%s'", used ? " or " : "", names[i]);
        }
}
