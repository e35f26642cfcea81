#ifndef TOUCHSTONE_CPROCESS_SHIM_H
#define TOUCHSTONE_CPROCESS_SHIM_H
// Process calls Glibc's module does not import for Swift: capabilities
// (capget and capset have no wrapper, prctl is variadic) and passing a
// descriptor over a Unix socket (the CMSG_* macros).
#include <errno.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

// Whether capability `cap` is in this thread's effective set.
static inline int ts_capability_effective(int cap) {
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &header, data) != 0) return -1;
    return (data[cap / 32].effective >> (cap % 32)) & 1;
}

// Drops every capability from this process's sets (ambient, effective,
// permitted, inheritable): 0, or -1 with errno. Single-threaded callers
// only (capset acts on the calling thread).
static inline int ts_drop_all_capabilities(void) {
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return -1;
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    return (int)syscall(SYS_capset, &header, data);
}

// Keeps only capability `cap` (effective and permitted), no ambient ones.
static inline int ts_keep_only_capability(int cap) {
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return -1;
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    data[cap / 32].effective = data[cap / 32].permitted = 1u << (cap % 32);
    return (int)syscall(SYS_capset, &header, data);
}

// Sends descriptor `fd` with one byte over Unix socket `sock`.
static inline int ts_send_descriptor(int sock, int fd) {
    char byte = 0;
    struct iovec iov = { &byte, 1 };
    union { struct cmsghdr align; char buffer[CMSG_SPACE(sizeof(int))]; } control;
    memset(&control, 0, sizeof control);
    struct msghdr message = { 0 };
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &fd, sizeof(int));
    ssize_t sent;
    do { sent = sendmsg(sock, &message, MSG_NOSIGNAL); } while (sent < 0 && errno == EINTR);
    return sent == 1 ? 0 : -1;
}

// Receives one byte and the descriptor sent with it (close-on-exec): the
// descriptor, -1 at the end of the stream or on an error, -2 for a message
// that carried none.
static inline int ts_receive_descriptor(int sock) {
    char byte;
    struct iovec iov = { &byte, 1 };
    union { struct cmsghdr align; char buffer[CMSG_SPACE(sizeof(int))]; } control;
    struct msghdr message = { 0 };
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.buffer;
    message.msg_controllen = sizeof control.buffer;
    ssize_t got;
    do { got = recvmsg(sock, &message, MSG_CMSG_CLOEXEC); } while (got < 0 && errno == EINTR);
    if (got <= 0) return -1;
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    if (!header || header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS
        || header->cmsg_len != CMSG_LEN(sizeof(int))) return -2;
    int fd;
    memcpy(&fd, CMSG_DATA(header), sizeof(int));
    return fd;
}
#endif
