/* push: the daemon's Prometheus text to a Pushgateway from a thread of its own (libcurl, bounded
 * timeouts, exponential backoff) and to a node_exporter textfile by atomic rename. */
#include "push.h"
#include "curl_lazy.h"
#include "fileio.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One push may take this long at most: the thread must notice pusher_stop soon, and a collector
 * that needs more than 2 s for a few kilobytes is as good as down. */
#define PUSH_TIMEOUT_MS 2000L
/* Failures double the wait up to this, so a dead collector costs one request per 5 minutes. */
#define PUSH_MAX_BACKOFF 300.0
/* What the Pushgateway answers on an error is a short sentence; keep that much for the log. */
#define PUSH_REPLY_KEEP 200

/* Set by the first pusher_start; libcurl is loaded only when something is to be pushed. */
static const curl_api_t *libcurl;

struct pusher {
    pthread_t thread;
    pthread_mutex_t lock; /* guards everything below it */
    pthread_cond_t wake;  /* signalled by pusher_stop */
    bool stopping;
    char *text; /* latest snapshot, NULL before the first pusher_update */
    unsigned long ok, failed;
    double backoff; /* seconds of the current wait after failures, 0 when healthy */

    /* Owned by the thread once it runs (set up before, freed after). */
    char *url;
    double interval;
    CURL *curl;
    struct curl_slist *headers;
    char curl_error[CURL_ERROR_SIZE];
    char reply[PUSH_REPLY_KEEP + 1];
    size_t reply_len;
    bool failing; /* the last push failed: log changes of state only; no final push */
};

/* Until the daemon has a log module of its own, push problems go to stderr (the journal). */
static void push_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void push_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("coschedd: push: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* Keep the start of the collector's reply (its error text); never let curl print it to stdout. */
static size_t keep_reply(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct pusher *p = userdata;
    size_t n = size * nmemb;
    size_t room = PUSH_REPLY_KEEP - p->reply_len;
    size_t take = n < room ? n : room;
    memcpy(p->reply + p->reply_len, data, take);
    p->reply_len += take;
    /* the gateway ends its sentence with a newline; the log line adds its own */
    while (p->reply_len && (p->reply[p->reply_len - 1] == '\n' || p->reply[p->reply_len - 1] == '\r'))
        p->reply_len--;
    p->reply[p->reply_len] = '\0';
    return n;
}

/* base64url for the "@base64" form the Pushgateway wants for values holding '/' or empty. */
static void base64url(const char *in, char *out)
{
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n = strlen(in), o = 0;
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned char)in[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)in[i + 2];
        out[o++] = digits[(v >> 18) & 63];
        out[o++] = digits[(v >> 12) & 63];
        out[o++] = i + 1 < n ? digits[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < n ? digits[v & 63] : '=';
    }
    if (n == 0)
        out[o++] = '='; /* the Pushgateway's spelling of an empty value */
    out[o] = '\0';
}

/* {base}/metrics/job/coschedd/instance/{instance}: the instance URL-escaped, or in base64 when a
 * '/' would split it into two path segments even escaped (the Pushgateway decodes %2F first). */
static char *grouping_url(CURL *curl, const char *base_url, const char *instance)
{
    size_t base_len = strlen(base_url);
    while (base_len && base_url[base_len - 1] == '/')
        base_len--;
    char *url = NULL;
    int n;
    if (!*instance || strchr(instance, '/')) {
        char *encoded = malloc(4 * (strlen(instance) / 3 + 1) + 2);
        if (!encoded)
            return NULL;
        base64url(instance, encoded);
        n = asprintf(&url, "%.*s/metrics/job/coschedd/instance@base64/%s", (int)base_len, base_url, encoded);
        free(encoded);
    } else {
        char *escaped = libcurl->easy_escape(curl, instance, 0);
        if (!escaped)
            return NULL;
        n = asprintf(&url, "%.*s/metrics/job/coschedd/instance/%s", (int)base_len, base_url, escaped);
        libcurl->free(escaped);
    }
    return n < 0 ? NULL : url;
}

/* One PUT of text; true when the collector took it (2xx). Called without the lock held. */
static bool push_once(struct pusher *p, const char *text)
{
    p->reply_len = 0;
    p->reply[0] = '\0';
    p->curl_error[0] = '\0';
    libcurl->easy_setopt(p->curl, CURLOPT_POSTFIELDS, text);
    libcurl->easy_setopt(p->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(text));
    CURLcode rc = libcurl->easy_perform(p->curl);
    long status = 0;
    if (rc == CURLE_OK)
        libcurl->easy_getinfo(p->curl, CURLINFO_RESPONSE_CODE, &status);
    bool ok = rc == CURLE_OK && status >= 200 && status < 300;
    if (!ok && !p->failing) {
        if (rc != CURLE_OK)
            push_log("cannot PUT %s: %s", p->url, p->curl_error[0] ? p->curl_error : libcurl->easy_strerror(rc));
        else
            push_log("PUT %s answered HTTP %ld: %s", p->url, status, p->reply);
    } else if (ok && p->failing) {
        push_log("PUT %s works again", p->url);
    }
    p->failing = !ok;
    return ok;
}

/* Push the latest snapshot, if any, and account for the result. Called and returns with the lock. */
static void push_latest(struct pusher *p, double *wait)
{
    if (!p->text)
        return; /* nothing to say yet: not a failure */
    char *text = strdup(p->text);
    if (!text)
        return;
    pthread_mutex_unlock(&p->lock);
    bool ok = push_once(p, text);
    pthread_mutex_lock(&p->lock);
    free(text);
    if (ok) {
        p->ok++;
        *wait = p->interval;
        p->backoff = 0;
    } else {
        p->failed++;
        double cap = p->interval > PUSH_MAX_BACKOFF ? p->interval : PUSH_MAX_BACKOFF;
        *wait = *wait * 2 > cap ? cap : *wait * 2;
        p->backoff = *wait;
    }
}

static void deadline_after(struct timespec *ts, double seconds)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    double whole = floor(seconds);
    ts->tv_sec += (time_t)whole;
    ts->tv_nsec += (long)((seconds - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

static void *push_thread(void *arg)
{
    struct pusher *p = arg;
    double wait = p->interval;
    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        struct timespec deadline;
        deadline_after(&deadline, wait);
        int rc = 0;
        while (!p->stopping && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&p->wake, &p->lock, &deadline);
        if (p->stopping)
            break;
        push_latest(p, &wait);
    }
    /* The last snapshot goes out on the way down: the final state of a run is the one wanted.
     * Not when the collector is failing: stop (or a reload) would wait out another timeout. */
    if (!p->failing)
        push_latest(p, &wait);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static void pusher_free(struct pusher *p)
{
    libcurl->slist_free_all(p->headers);
    if (p->curl)
        libcurl->easy_cleanup(p->curl);
    free(p->url);
    free(p->text);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
    libcurl->global_cleanup();
}

static bool set_up_curl(struct pusher *p)
{
    p->headers = libcurl->slist_append(NULL, "Content-Type: text/plain; version=0.0.4");
    /* An empty Expect: stops curl waiting for a "100 Continue" the gateway need not send. */
    struct curl_slist *more = p->headers ? libcurl->slist_append(p->headers, "Expect:") : NULL;
    if (!more)
        return false;
    p->headers = more;
    CURL *c = p->curl;
    return libcurl->easy_setopt(c, CURLOPT_URL, p->url) == CURLE_OK &&
           libcurl->easy_setopt(c, CURLOPT_CUSTOMREQUEST, "PUT") == CURLE_OK &&
           libcurl->easy_setopt(c, CURLOPT_HTTPHEADER, p->headers) == CURLE_OK &&
           libcurl->easy_setopt(c, CURLOPT_TIMEOUT_MS, PUSH_TIMEOUT_MS) == CURLE_OK &&
           libcurl->easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, PUSH_TIMEOUT_MS) == CURLE_OK &&
           /* no SIGALRM for resolver timeouts: signals belong to the daemon's event loop */
           libcurl->easy_setopt(c, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
           libcurl->easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
           libcurl->easy_setopt(c, CURLOPT_WRITEFUNCTION, keep_reply) == CURLE_OK &&
           libcurl->easy_setopt(c, CURLOPT_WRITEDATA, p) == CURLE_OK &&
           libcurl->easy_setopt(c, CURLOPT_ERRORBUFFER, p->curl_error) == CURLE_OK &&
           libcurl->easy_setopt(c, CURLOPT_USERAGENT, "coschedd") == CURLE_OK;
}

pusher_t *pusher_start(const char *base_url, const char *instance, double interval, char *err, size_t errlen)
{
    if (!base_url || (strncmp(base_url, "http://", 7) && strncmp(base_url, "https://", 8))) {
        snprintf(err, errlen, "push URL '%s' must start with http:// or https://", base_url ? base_url : "(null)");
        return NULL;
    }
    if (!(interval > 0) || !isfinite(interval)) {
        snprintf(err, errlen, "push interval %g must be more than 0 seconds", interval);
        return NULL;
    }
    libcurl = curl_api(err, errlen);
    if (!libcurl)
        return NULL;
    /* Thread-safe in this libcurl, and reference-counted: each pusher holds one reference. */
    if (libcurl->global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "cannot initialise libcurl");
        return NULL;
    }
    struct pusher *p = calloc(1, sizeof *p);
    if (!p) {
        libcurl->global_cleanup();
        snprintf(err, errlen, "cannot start the push thread: out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* a clock step must not stall or rush pushes */
    pthread_cond_init(&p->wake, &attr);
    pthread_condattr_destroy(&attr);
    p->interval = interval;
    p->curl = libcurl->easy_init();
    p->url = p->curl ? grouping_url(p->curl, base_url, instance ? instance : "") : NULL;
    if (!p->url || !set_up_curl(p)) {
        snprintf(err, errlen, "cannot set up the push to %s: libcurl refused the settings", base_url);
        pusher_free(p);
        return NULL;
    }
    int rc = pthread_create(&p->thread, NULL, push_thread, p);
    if (rc) {
        snprintf(err, errlen, "cannot start the push thread: %s", strerror(rc));
        pusher_free(p);
        return NULL;
    }
    return p;
}

void pusher_update(pusher_t *p, const char *text)
{
    if (!p || !text)
        return;
    char *copy = strdup(text); /* copied outside the lock, so the lock is only a pointer swap */
    if (!copy)
        return;
    pthread_mutex_lock(&p->lock);
    char *old = p->text;
    p->text = copy;
    pthread_mutex_unlock(&p->lock);
    free(old);
}

void pusher_stats(pusher_t *p, unsigned long *ok, unsigned long *failed, double *backoff)
{
    if (!p) {
        *ok = *failed = 0;
        *backoff = 0;
        return;
    }
    pthread_mutex_lock(&p->lock);
    *ok = p->ok;
    *failed = p->failed;
    *backoff = p->backoff;
    pthread_mutex_unlock(&p->lock);
}

void pusher_stop(pusher_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->thread, NULL);
    pusher_free(p);
}

/* ---- node_exporter textfile ---- */

/* node_exporter reads *.prom files: fileio's temp name ".NAME.XXXXXX" is never read, and the
 * rename makes the new content appear whole. */
int push_textfile_write(const char *path, const char *text, bool private, char *err, size_t errlen)
{
    if (fileio_write_atomic(path, text, strlen(text), private ? 0640 : 0644, err, errlen) < 0)
        return -1;
    if (!private)
        return 0;
    /* node_exporter reads it as the directory's group (prometheus, on Debian) */
    char *dir = strdup(path);
    struct stat st;
    int rc = 0;
    if (!dir || stat(dirname(dir), &st) < 0 || chown(path, (uid_t)-1, st.st_gid) < 0) {
        snprintf(err, errlen, "cannot give %s to its directory's group: %s", path, strerror(errno));
        rc = -1;
    }
    free(dir);
    return rc;
}
