// spawn-measure FD PROGRAM [ARG...]: runs PROGRAM (execv, no shell) with
// this process's descriptors and environment, waits for it, and writes to
// descriptor FD one line: wall nanoseconds (from just before the fork to
// just after the reap), the child's peak RSS in KiB (ru_maxrss), its user
// and system CPU in microseconds, and its raw wait status. Exits 0 when it
// could run and reap the program.
//
// scripts/bench-cli starts every timed process through it. Linux carries a
// process's high-water mark across exec (the mm it replaces), so a child
// spawned straight from Python reports at least Python's own peak RSS; a
// child forked from this small process starts from this process's, about
// 1 MiB, and its ru_maxrss is its own.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/wait.h>

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: spawn-measure FD PROGRAM [ARG...]\n");
        return 2;
    }
    int report = atoi(argv[1]);
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    pid_t pid = fork();
    if (pid < 0) {
        perror("spawn-measure: fork");
        return 1;
    }
    if (pid == 0) {
        close(report);
        execv(argv[2], argv + 2);
        perror("spawn-measure: execv");
        _exit(127);
    }
    int status = 0;
    struct rusage usage;
    if (wait4(pid, &status, 0, &usage) != pid) {
        perror("spawn-measure: wait4");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &end);
    long long wall = (long long)(end.tv_sec - start.tv_sec) * 1000000000LL + (end.tv_nsec - start.tv_nsec);
    dprintf(report, "%lld %ld %lld %lld %d\n", wall, usage.ru_maxrss,
            (long long)usage.ru_utime.tv_sec * 1000000LL + usage.ru_utime.tv_usec,
            (long long)usage.ru_stime.tv_sec * 1000000LL + usage.ru_stime.tv_usec, status);
    return 0;
}
