/* curl_lazy: dlopen libcurl.so.4 once and look up the dozen functions push.c uses. */
#include "curl_lazy.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static curl_api_t api;
static char load_error[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof load_error, "cannot load libcurl: %s", dlerror());
        return;
    }
    static const struct {
        const char *name;
        size_t offset;
    } symbols[] = {
        {"curl_global_init", offsetof(curl_api_t, global_init)},
        {"curl_global_cleanup", offsetof(curl_api_t, global_cleanup)},
        {"curl_easy_init", offsetof(curl_api_t, easy_init)},
        {"curl_easy_setopt", offsetof(curl_api_t, easy_setopt)},
        {"curl_easy_perform", offsetof(curl_api_t, easy_perform)},
        {"curl_easy_getinfo", offsetof(curl_api_t, easy_getinfo)},
        {"curl_easy_cleanup", offsetof(curl_api_t, easy_cleanup)},
        {"curl_easy_strerror", offsetof(curl_api_t, easy_strerror)},
        {"curl_easy_escape", offsetof(curl_api_t, easy_escape)},
        {"curl_free", offsetof(curl_api_t, free)},
        {"curl_slist_append", offsetof(curl_api_t, slist_append)},
        {"curl_slist_free_all", offsetof(curl_api_t, slist_free_all)},
    };
    curl_api_t loaded;
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        void *f = dlsym(h, symbols[i].name);
        if (!f) {
            snprintf(load_error, sizeof load_error, "libcurl lacks %s", symbols[i].name);
            return; /* the handle stays open: dlclose of a half-used libcurl buys nothing */
        }
        memcpy((char *)&loaded + symbols[i].offset, &f, sizeof f);
    }
    api = loaded;
}

const curl_api_t *curl_api(char *err, size_t errlen)
{
    pthread_once(&once, load);
    if (!api.global_init) {
        snprintf(err, errlen, "%s", load_error);
        return NULL;
    }
    return &api;
}
