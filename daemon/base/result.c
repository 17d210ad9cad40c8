/* result: building results; a message longer than the buffer is cut, never overflowed. */
#include "result.h"

#include <stdarg.h>
#include <stdio.h>

result_t result_ok(void)
{
    return (result_t){.code = RESULT_OK};
}

result_t result_fail(result_code_t code, const char *fmt, ...)
{
    result_t r = {.code = code};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.message, sizeof r.message, fmt, ap);
    va_end(ap);
    return r;
}
