/* log: coschedd's messages on stderr, with sd-daemon priority prefixes ("<3>") when stderr goes
 * to the journal, plain "coschedd: " otherwise. */
#ifndef COSCHED_LOG_H
#define COSCHED_LOG_H

void log_init(void);
void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
