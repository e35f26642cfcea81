#!/usr/bin/env bash
# Makes, or plants, a STRANGER's print file: finger `right-thumb` enrolled
# with the simulator's finger id `mallory`, in the print-file format of an OLD
# build (`TSP1` record: magic, BLAKE2b-256 of the data, libfprint's print).
#
#   make-stranger-print.sh make  TOUCHSTONE_BINARY OUTPUT.print [WORK_DIR]
#   make-stranger-print.sh plant TOUCHSTONE_BINARY PRINT FIXTURE.tar.gz [WORK_DIR]
#
# make   in a fresh TOUCHSTONE_HOME (WORK_DIR/h): sim start, set a passcode,
#        enrol right-thumb with 5 touches of `mallory`, sim stop; checks the
#        record's layout and copies prints/root/virtual_device/0/right-thumb.print
#        to OUTPUT.print (mode 0644).
# plant  unpacks FIXTURE.tar.gz (one of vault-*.tar.gz) into WORK_DIR, checks
#        that a touch of `mallory` on `get fx current` is refused (exit 2),
#        copies PRINT into h/prints/root/virtual_device/0/right-thumb.print
#        (0600), then runs `get fx current` again with a touch of `mallory`.
#        That second get must exit EXPECT_GET (default 0, with secret-current
#        on stdout: what both old builds do; the attack works on them). Set
#        EXPECT_GET to what a build that refuses a planted print answers.
#
# WORK_DIR   a short, absent or empty folder (unix socket paths must fit;
#            default: a new mktemp -d /tmp/spXXXX); it is left behind, with
#            transcript.txt (every command, its exit code and stdout).
# Exits non-zero if a command's exit code is not the expected one.
# Run as root: the prints are under prints/<user name>/ and the fixtures'
# are under prints/root (see README.md beside this file).
# Needs swtpm, swtpm_ioctl, b2sum (coreutils), GNU tar.
set -euo pipefail

usage() {
    echo "usage: $0 make TOUCHSTONE_BINARY OUTPUT.print [WORK_DIR]" >&2
    echo "       $0 plant TOUCHSTONE_BINARY PRINT FIXTURE.tar.gz [WORK_DIR]" >&2
    exit 64
}
[ $# -ge 3 ] || usage
MODE=$1
T=$(realpath "$2")
case $MODE in
    make)  OUT=$(realpath -m "$3"); WORK=${4:-} ;;
    plant) [ $# -ge 4 ] || usage; PRINT=$(realpath "$3"); FIXTURE=$(realpath "$4"); WORK=${5:-} ;;
    *) usage ;;
esac
[ -n "$WORK" ] || WORK=$(mktemp -d /tmp/spXXXX)
mkdir -p "$WORK"
WORK=$(realpath "$WORK")
[ -z "$(ls -A "$WORK" 2>/dev/null)" ] || { echo "$WORK is not empty" >&2; exit 1; }
[ -x "$T" ] || { echo "$T is not executable" >&2; exit 1; }

PASSCODE='stranger-pass-1'   # the throwaway home's passcode (make only)
FINGER=right-thumb
ID=mallory
STAGES=5                     # the virtual reader's enrol stages ("Touch N of 5")
PRINTS=prints/root/virtual_device/0
umask 077
unset TOUCHSTONE_TPM TOUCHSTONE_READER TOUCHSTONE_SIM TOUCHSTONE_TIMEOUT XDG_DATA_HOME
export TSS2_LOG=all+none
export TOUCHSTONE_TIMEOUT=60
export TOUCHSTONE_HOME="$WORK/h"

LOG="$WORK/transcript.txt"
: >"$LOG"
N=0
FAILED=0
. "$(dirname "$0")/fixture-lib.sh"

# check_record FILE: TSP1 | BLAKE2b-256(data) | data, data = libfprint "FP3" print naming $ID
check_record() {
    local f=$1 ok=1
    [ "$(head -c 4 "$f")" = TSP1 ] || ok=0
    [ "$(head -c 36 "$f" | tail -c 32 | od -An -tx1 -v | tr -d ' \n')" = \
      "$(tail -c +37 "$f" | b2sum -l 256 | cut -d' ' -f1)" ] || ok=0
    [ "$(tail -c +37 "$f" | head -c 3)" = FP3 ] || ok=0
    grep -q "$ID" "$f" || ok=0
    {
        echo "# $f: $(stat -c %s "$f") bytes; layout ok: $ok"
        od -Ax -tx1z -v "$f"
    } >>"$LOG"
    [ "$ok" = 1 ] || { echo "FAILED: $f is not a TSP1 record of $ID's print" >&2; FAILED=1; }
}

run 0 "touchstone --version" -- --version

if [ "$MODE" = make ]; then
    run 0 "touchstone sim start" -- sim start
    run 0 "touchstone --sim passcode set --passcode-fd 0  (stdin: the passcode)" \
        -- --sim passcode set --passcode-fd 0 < <(passline)
    touched 0 "$ID" "$STAGES" "touchstone --sim enroll $FINGER --passcode-fd 0  (stdin: the passcode)" \
        -- --sim enroll "$FINGER" --passcode-fd 0 < <(passline)
    grep -q "Touch $STAGES of $STAGES" "$WORK/run$N.err" || { echo "enrol did not take $STAGES stages" >&2; FAILED=1; }
    run 0 "touchstone --sim fingers --json" -- --sim fingers --json
    run 0 "touchstone sim stop" -- sim stop
    SRC="$WORK/h/$PRINTS/$FINGER.print"
    check_record "$SRC"
    [ "$FAILED" = 0 ] || { echo "not copied: see $LOG" >&2; exit 1; }
    mkdir -p "$(dirname "$OUT")"
    cp "$SRC" "$OUT"
    chmod 644 "$OUT"
    echo "print: $OUT ($(stat -c %s "$OUT") bytes); transcript: $LOG"
    exit 0
fi

# --- plant -----------------------------------------------------------------
EXPECT_GET=${EXPECT_GET:-0}
tar -C "$WORK" -xzf "$FIXTURE"
[ -d "$WORK/h/$PRINTS" ] || { echo "$FIXTURE has no $PRINTS" >&2; exit 1; }
check_record "$PRINT"
echo "# fixture $FIXTURE unpacked in $WORK/h" >>"$LOG"
run 0 "touchstone sim start" -- sim start
run 0 "touchstone --sim fingers --json  (before planting)" -- --sim fingers --json
touched 2 "$ID" 1 "touchstone --sim get fx current  (before planting: a stranger)" -- --sim get fx current
install -m 600 "$PRINT" "$WORK/h/$PRINTS/$FINGER.print"
echo "# planted $PRINT as h/$PRINTS/$FINGER.print" >>"$LOG"
run 0 "touchstone --sim fingers --json  (after planting)" -- --sim fingers --json
touched "$EXPECT_GET" "$ID" 1 "touchstone --sim get fx current  (after planting)" -- --sim get fx current
GOT_CODE=$LAST_CODE
GOT=$(cat "$WORK/run$N.out")
if [ "$EXPECT_GET" = 0 ] && [ "$GOT" != secret-current ]; then
    echo "FAILED: the planted get printed '$GOT', not secret-current" >&2; FAILED=1
fi
run 0 "touchstone --sim status --json" -- --sim status --json
run 0 "touchstone sim stop" -- sim stop
echo "planted get fx current: exit $GOT_CODE, stdout '$GOT'; transcript: $LOG"
[ "$FAILED" = 0 ] || { echo "some step did not give the expected exit code: see $LOG" >&2; exit 1; }
