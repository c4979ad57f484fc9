/* vfy_report: how the verify filter reports a violation (one line + a backtrace), counts
 * violations per rule, and writes the summary at adapter close. */
#ifndef VFY_REPORT_H
#define VFY_REPORT_H

#include <stdbool.h>
#include "vfy_rules.h"

enum flt_verify_action { VFY_ACTION_REPORT = 0, VFY_ACTION_ABORT = 1 };

/* Where reports go: path NULL or "" = stderr; "%p" in path is replaced by the pid. Returns 0 or
 * -errno (the file could not be opened; reports then go to stderr). Called once at load. */
int flt_verify_report_open(const char *path, enum flt_verify_action action, bool backtraces);
void flt_verify_report_close(void);

/* One violation: "ndk-verify: <severity> <rule> [<section>: <page>] <object> <call>: <detail>"
 * then the caller's backtrace. Any thread, any context (takes the report lock, which is held
 * around nothing but the write). With action=abort, aborts the process after an error. */
void flt_verify_report(enum flt_verify_rule rule, const char *object, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Violations of rule so far (all adapters of the process). */
unsigned long flt_verify_report_count(enum flt_verify_rule rule);

/* "ndk-verify: summary: ..." one line per rule that fired, or one line saying none did. */
void flt_verify_report_summary(const char *what);

#endif
