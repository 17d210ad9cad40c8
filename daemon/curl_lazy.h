/* curl_lazy: libcurl loaded on first use (dlopen). A daemon that pushes nothing then never maps
 * libcurl and the TLS, LDAP and Kerberos libraries it brings along (about 5 MiB of RSS). */
#ifndef COSCHED_CURL_LAZY_H
#define COSCHED_CURL_LAZY_H

#include <stddef.h>
#include <curl/curl.h>

typedef struct curl_api {
    CURLcode (*global_init)(long flags);
    void (*global_cleanup)(void);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL *curl);
    CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
    void (*easy_cleanup)(CURL *curl);
    const char *(*easy_strerror)(CURLcode code);
    char *(*easy_escape)(CURL *curl, const char *string, int length);
    void (*free)(void *p);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *string);
    void (*slist_free_all)(struct curl_slist *list);
} curl_api_t;

/* The loaded library's functions (loaded once, thread-safe), or NULL with the reason in err. */
const curl_api_t *curl_api(char *err, size_t errlen);

#endif
