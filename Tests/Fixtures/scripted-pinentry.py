#!/usr/bin/python3
"""A pinentry that types for the person: it speaks Assuan as pinentry does
(OK greeting, OK to every command, GETPIN answered with a D line) and
answers GETPIN with the first line of the file named by
SCRIPTED_PINENTRY_ANSWERS, which it then removes from the file (one answer
per dialog; none left: the person cancels). Every command it got is
appended to SCRIPTED_PINENTRY_LOG. For SecretServiceProviderTests."""

import os
import sys

answers, log = os.environ["SCRIPTED_PINENTRY_ANSWERS"], os.environ["SCRIPTED_PINENTRY_LOG"]


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


say("OK scripted pinentry")
for line in sys.stdin:
    line = line.rstrip("\n")
    with open(log, "a") as f:
        f.write(line + "\n")
    if line == "GETPIN":
        with open(answers) as f:
            lines = f.read().splitlines()
        if not lines:
            say("ERR 83886179 Operation cancelled <Pinentry>")
            continue
        with open(answers, "w") as f:
            f.write("".join(l + "\n" for l in lines[1:]))
        say("D " + lines[0].replace("%", "%25"))
        say("OK")
    elif line == "BYE":
        say("OK closing connection")
        break
    else:
        say("OK")
