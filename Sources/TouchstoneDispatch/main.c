// touchstone: hands the command to touchstone-get when it is a `get` that
// goes to a daemon (that process loads neither libfprint nor tpm2-tss, so
// it starts fast), and to touchstone-cli, the whole command, otherwise.
// Both sit next to this binary and get the same arguments and environment.
//
// The choice only decides speed, never behaviour: touchstone-get parses
// the command line itself and hands anything that is not a daemon's get on
// to touchstone-cli. It follows docs/cli.md's rules for the engine: an
// `--embedded` (none), `--daemon PATH` or TOUCHSTONE_DAEMON (the daemon),
// else the simulator's daemon socket (`--sim` or the simulator's TPM and
// reader) or /run/touchstone/socket, when that socket exists.
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *value_options[] = {"--home", "--tpm", "--reader", "--daemon", "--timeout", "--passcode-fd", "--reason", NULL};

static const char *env(const char *name) {
    const char *value = getenv(name);
    return value && *value ? value : NULL;
}

static int takes_value(const char *name, size_t length) {
    for (const char **option = value_options; *option; option++) {
        if (strlen(*option) == length && strncmp(*option, name, length) == 0) return 1;
    }
    return 0;
}

/// Whether the arguments are a `get` that goes to a daemon.
static int daemon_get(int argc, char **argv) {
    const char *command = NULL, *home = NULL, *tpm = NULL, *reader = NULL, *daemon = NULL;
    int embedded = 0, sim = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0) break;
        if (arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (!command) command = arg;
            continue;
        }
        if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0 || strcmp(arg, "--version") == 0) return 0;
        const char *equals = strchr(arg, '=');
        size_t length = equals ? (size_t)(equals - arg) : strlen(arg);
        const char *value = NULL;
        if (takes_value(arg, length)) {
            if (equals) value = equals + 1;
            else if (i + 1 < argc) value = argv[++i];
            else return 0;
        }
        if (strncmp(arg, "--home", length) == 0 && length == 6) home = value;
        else if (strncmp(arg, "--tpm", length) == 0 && length == 5) tpm = value;
        else if (strncmp(arg, "--reader", length) == 0 && length == 8) reader = value;
        else if (strncmp(arg, "--daemon", length) == 0 && length == 8) daemon = value;
        else if (strcmp(arg, "--embedded") == 0) embedded = 1;
        else if (strcmp(arg, "--sim") == 0) sim = 1;
    }
    if (!command || strcmp(command, "get") != 0 || embedded) return 0;
    if (daemon || env("TOUCHSTONE_DAEMON")) return 1;

    const char *simulated_env = env("TOUCHSTONE_SIM");
    int sim_env = simulated_env && strcmp(simulated_env, "1") == 0;
    if (sim) tpm = reader = "sim";
    if (!tpm) tpm = sim_env ? "sim" : env("TOUCHSTONE_TPM");
    if (!reader) reader = sim_env ? "sim" : env("TOUCHSTONE_READER");
    int simulated = tpm && reader && strcmp(tpm, "sim") == 0 && strcmp(reader, "sim") == 0;

    char path[PATH_MAX];
    if (simulated) {
        const char *xdg = env("XDG_DATA_HOME"), *user = env("HOME");
        if (!home) home = env("TOUCHSTONE_HOME");
        int n;
        if (home) n = snprintf(path, sizeof path, "%s/sim/daemon.sock", home);
        else if (xdg && xdg[0] == '/') n = snprintf(path, sizeof path, "%s/touchstone/sim/daemon.sock", xdg);
        else if (user && user[0] == '/') n = snprintf(path, sizeof path, "%s/.local/share/touchstone/sim/daemon.sock", user);
        else return 0;
        if (n < 0 || (size_t)n >= sizeof path) return 0;
    } else {
        snprintf(path, sizeof path, "%s", "/run/touchstone/socket");
    }
    struct stat info;
    return stat(path, &info) == 0 && S_ISSOCK(info.st_mode);
}

int main(int argc, char **argv) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 32);
    if (n <= 0) {
        fprintf(stderr, "touchstone: error: cannot find its own binary (/proc/self/exe): %s\n", strerror(errno));
        return 1;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return 1;
    strcpy(slash + 1, daemon_get(argc, argv) ? "touchstone-get" : "touchstone-cli");
    execv(self, argv);
    fprintf(stderr, "touchstone: error: cannot run %s: %s\n", self, strerror(errno));
    return 1;
}
