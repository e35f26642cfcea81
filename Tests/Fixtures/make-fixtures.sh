#!/usr/bin/env bash
# Makes one migration fixture: a TOUCHSTONE_HOME written by an OLD build of
# the touchstone CLI on its simulator (swtpm + virtual reader), packed as a
# tarball whose root is the folder `h`.
#
#   make-fixtures.sh TOUCHSTONE_BINARY OUTPUT.tar.gz [WORK_DIR]
#
# TOUCHSTONE_BINARY  the old build's CLI (e.g. a worktree's .build/release/touchstone)
# OUTPUT.tar.gz      where the fixture goes
# WORK_DIR           a short, absent or empty folder (unix socket paths must fit;
#                    default: a new mktemp -d /tmp/fxXXXX); it is left behind
#                    with the unpacked check copy.
# Beside OUTPUT.tar.gz goes OUTPUT.transcript.txt: every command, its exit
# code and stdout, the fixture's files and the vault's schema facts.
#
# Only the given binary's own CLI is used. Secrets go on stdin, the passcode
# on --passcode-fd (stdin or fd 3), never in argv or the environment.
# Needs swtpm, swtpm_ioctl, sqlite3, GNU tar. See README.md beside this file.
set -euo pipefail

[ $# -ge 2 ] || { echo "usage: $0 TOUCHSTONE_BINARY OUTPUT.tar.gz [WORK_DIR]" >&2; exit 64; }
T=$(realpath "$1")
OUT=$(realpath -m "$2")
WORK=${3:-$(mktemp -d /tmp/fxXXXX)}
mkdir -p "$WORK"
WORK=$(realpath "$WORK")
[ -z "$(ls -A "$WORK" 2>/dev/null)" ] || { echo "$WORK is not empty" >&2; exit 1; }
[ -x "$T" ] || { echo "$T is not executable" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 is missing (apt-get install sqlite3)" >&2; exit 1; }

PASSCODE='fixture-pass-1'
SERVICE=fx
STAGES=5            # the virtual reader's enrol stages ("Touch N of 5")
umask 077
unset TOUCHSTONE_TPM TOUCHSTONE_READER TOUCHSTONE_SIM TOUCHSTONE_TIMEOUT XDG_DATA_HOME
export TSS2_LOG=all+none
export TOUCHSTONE_TIMEOUT=60

LOG="$WORK/transcript.txt"
: >"$LOG"
N=0
FAILED=0

# passline (the passcode as one line for --passcode-fd; printf is a builtin,
# so it is in no argv), record, run, touched:
. "$(dirname "$0")/fixture-lib.sh"

export TOUCHSTONE_HOME="$WORK/h"

# --- the state ------------------------------------------------------------
run 0 "touchstone --version" -- --version
run 0 "touchstone sim start" -- sim start
run 0 "touchstone --sim passcode set --passcode-fd 0  (stdin: the passcode)" \
    -- --sim passcode set --passcode-fd 0 < <(passline)
touched 0 alice-1 "$STAGES" "touchstone --sim enroll right-index-finger --passcode-fd 0  (stdin: the passcode)" \
    -- --sim enroll right-index-finger --passcode-fd 0 < <(passline)
enrolled() { grep -q "Touch $STAGES of $STAGES" "$WORK/run$N.err" || { echo "enrol did not take $STAGES stages" >&2; FAILED=1; }; }
enrolled

add() {  # add ACCOUNT ACCESS
    run 0 "printf secret-$1 | touchstone --sim add $SERVICE $1 --access '$2'" \
        -- --sim add "$SERVICE" "$1" --access "$2" --label "label-$1" --comment "access $2" \
        < <(printf '%s' "secret-$1")
}
add none none
add passcode passcode
add any biometry-any
add old-current biometry-current-set
add any-or-passcode 'biometry-any|passcode'

# an enrolment change: old-current is invalidated from here on
touched 0 alice-2 "$STAGES" "touchstone --sim enroll left-index-finger --passcode-fd 0  (stdin: the passcode)" \
    -- --sim enroll left-index-finger --passcode-fd 0 < <(passline)
enrolled
add current biometry-current-set
add current-and-passcode 'biometry-current-set&passcode'

# --- checks with the same build -----------------------------------------
verify() {  # every item's get, with its expected exit code, on $TOUCHSTONE_HOME
    run 0 "touchstone --sim fingers --json" -- --sim fingers --json
    run 0 "touchstone --sim list --json" -- --sim list --json
    run 0 "touchstone --sim status --json" -- --sim status --json
    run 0 "touchstone --sim get $SERVICE none" -- --sim get "$SERVICE" none
    run 0 "touchstone --sim get $SERVICE passcode --passcode-fd 3  (fd 3: the passcode)" \
        -- --sim get "$SERVICE" passcode --passcode-fd 3 3< <(passline)
    touched 0 alice-1 1 "touchstone --sim get $SERVICE any" -- --sim get "$SERVICE" any
    touched 0 alice-2 1 "touchstone --sim get $SERVICE any" -- --sim get "$SERVICE" any
    touched 0 alice-1 1 "touchstone --sim get $SERVICE current" -- --sim get "$SERVICE" current
    touched 0 alice-2 1 "touchstone --sim get $SERVICE current" -- --sim get "$SERVICE" current
    touched 2 mallory 1 "touchstone --sim get $SERVICE current  (a stranger's finger)" -- --sim get "$SERVICE" current
    run 10 "touchstone --sim get $SERVICE old-current  (invalidated)" -- --sim get "$SERVICE" old-current
    touched 0 alice-1 1 "touchstone --sim get $SERVICE any-or-passcode" -- --sim get "$SERVICE" any-or-passcode
    run 0 "touchstone --sim get $SERVICE any-or-passcode --passcode-fd 3  (fd 3: the passcode)" \
        -- --sim get "$SERVICE" any-or-passcode --passcode-fd 3 3< <(passline)
    touched 0 alice-2 1 "touchstone --sim get $SERVICE current-and-passcode --passcode-fd 3  (fd 3: the passcode)" \
        -- --sim get "$SERVICE" current-and-passcode --passcode-fd 3 3< <(passline)
    run 8 "touchstone --sim get $SERVICE missing" -- --sim get "$SERVICE" missing
    run 0 "touchstone --sim status --json  (after the gets)" -- --sim status --json
}
echo "# checks on the original folder" >>"$LOG"
verify
run 0 "touchstone sim stop" -- sim stop

# --- make it a fixture: state only --------------------------------------
H="$WORK/h"
clean() {  # clean HOME: drop runtime-only files, checkpoint the WAL
    local h=$1
    # runtime only: swtpm's sockets, pid file, log and lock (.lock), the
    # CLI's swtpm turn lock (sock.lock), the virtual reader's socket and lock
    rm -f "$h/sim/tpm/sock" "$h/sim/tpm/sock.ctrl" "$h/sim/tpm/pid" "$h/sim/tpm/log" \
          "$h/sim/tpm/.lock" "$h/sim/tpm/sock.lock" "$h/sim/reader" "$h/sim/reader.lock"
    if [ -s "$h/vault.sqlite-wal" ]; then sqlite3 "$h/vault.sqlite" 'PRAGMA wal_checkpoint(TRUNCATE);' >/dev/null; fi
    for f in "$h/vault.sqlite-wal" "$h/vault.sqlite-shm"; do
        if [ -e "$f" ] && [ ! -s "$f" ]; then rm -f "$f"; fi
    done
}
clean "$H"
echo "# files of the fixture" >>"$LOG"
(cd "$WORK" && find h -printf '%M %s %p\n' | sort -k3) >>"$LOG"
{
    echo "# the vault"
    echo "user_version: $(sqlite3 "$H/vault.sqlite" 'PRAGMA user_version;')"
    echo "tables: $(sqlite3 "$H/vault.sqlite" "SELECT group_concat(name, ' ') FROM sqlite_master WHERE type = 'table';")"
    echo "meta keys: $(sqlite3 "$H/vault.sqlite" "SELECT group_concat(key, ' ') FROM meta;")"
    echo "meta nv_index: $(sqlite3 "$H/vault.sqlite" "SELECT hex(value) FROM meta WHERE key = 'nv_index';")"
} >>"$LOG"
clean "$H"  # the sqlite3 look-ups above may leave an empty -wal/-shm

[ "$FAILED" = 0 ] || { echo "not packed: some step did not give the expected exit code: see $LOG" >&2; exit 1; }
mkdir -p "$(dirname "$OUT")"
tar -C "$WORK" --owner=0 --group=0 --numeric-owner --sort=name --mtime='2026-01-01 00:00:00Z' \
    -cf - h | gzip -9n >"$OUT"

# --- self-contained: unpack elsewhere, start the same build on it ---------
CHECK="$WORK/c"
mkdir -m 700 "$CHECK"
tar -C "$CHECK" -xzf "$OUT"
export TOUCHSTONE_HOME="$CHECK/h"
echo "# checks on an unpacked copy ($CHECK/h)" >>"$LOG"
run 0 "touchstone sim start  (on the copy)" -- sim start
verify
run 0 "touchstone sim stop  (on the copy)" -- sim stop

cp "$LOG" "${OUT%.tar.gz}.transcript.txt"
chmod 644 "$OUT" "${OUT%.tar.gz}.transcript.txt"
echo "fixture: $OUT ($(stat -c %s "$OUT") bytes); transcript: ${OUT%.tar.gz}.transcript.txt"
[ "$FAILED" = 0 ] || { echo "some step did not give the expected exit code: see $LOG" >&2; exit 1; }
