#ifndef TOUCHSTONE_CSECCOMP_SHIM_H
#define TOUCHSTONE_CSECCOMP_SHIM_H
// libseccomp (Debian libseccomp-dev): the daemon's print checker confines
// itself with a filter built through it. Also the process calls around the
// checker that Glibc's module does not import (pidfd_open).
#include <seccomp.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>

// SCMP_ACT_ERRNO and SCMP_ACT_KILL_PROCESS are macros Swift does not import.
static inline uint32_t ts_scmp_act_errno(uint16_t error) { return SCMP_ACT_ERRNO(error); }
static inline uint32_t ts_scmp_act_kill_process(void) { return SCMP_ACT_KILL_PROCESS; }
static inline uint32_t ts_scmp_act_kill_thread(void) { return SCMP_ACT_KILL_THREAD; }
static inline uint32_t ts_scmp_act_allow(void) { return SCMP_ACT_ALLOW; }

// prctl is variadic.
static inline int ts_set_no_new_privs(void) { return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); }

// One rule with one argument comparison (seccomp_rule_add is variadic).
static inline int ts_scmp_rule_arg(scmp_filter_ctx ctx, uint32_t action, int syscall, unsigned int arg,
                                   enum scmp_compare op, scmp_datum_t datum_a, scmp_datum_t datum_b) {
    struct scmp_arg_cmp cmp = { arg, op, datum_a, datum_b };
    return seccomp_rule_add_array(ctx, action, syscall, 1, &cmp);
}
#endif
