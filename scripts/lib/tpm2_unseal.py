"""The tpm2-tools unseal sequence Touchstone's benchmarks compare with,
written once: what a shell script would run to unseal a sealed key with the
module's protections (the SRK pinned by name, salted sessions that encrypt
the key on its way back), one process per step.

Used by scripts/bench-cli (imported: the `touchstone get` comparison) and by
TouchstoneBench's TPM suite (run as a program, once per case before
anything is timed: it prints the steps as JSON, and the Swift benchmark
runs them).

swtpm has no resource manager, so the sequence also flushes its sessions
and the transient objects (tpm2_load's object and the copy tpm2_unseal
loads from the item's context file); the flushes are part of what is timed,
as they are part of the script.

Files in FOLDER, written by the caller:
  STEM.pub, STEM.priv      the blob's TPM2B_PUBLIC / TPM2B_PRIVATE ("tss" format)
  srk.name                 the SRK's name (tpm2_readpublic -n)
  STEM-generation.bin      PolicyNV's operandB for "ule" (a counter's value, 8 bytes big-endian)
  STEM-state.bin           PolicyNV's operandB for "eq" (the first release's enrolment state)
  STEM-a.pol, STEM-b.pol   the two branch digests, for --policy-or
The passcode branch's tpm2_unseal password is the placeholder AUTH
("session:POLICY+@AUTH@"): the caller puts in "hex:..." or "str:..." (tpm2-tools
5.4 takes a session's password only inline), so no secret passes through here.

    python3 scripts/lib/tpm2_unseal.py --folder DIR --stem STEM --branch biometric|passcode
        [--srk HANDLE] [--pcr7] [--nv-index INDEX [--nv-operation ule|eq]] [--policy-or]
"""

import argparse
import json
import os

AUTH = "@AUTH@"
SRK = "0x81000001"


def operand_file(folder, stem, operation):
    """Where PolicyNV's operandB is read from for OPERATION."""
    return os.path.join(folder, f"{stem}-{'generation' if operation == 'ule' else 'state'}.bin")


def unseal_sequence(folder, stem, branch, srk=SRK, pcr7=False, nv_index=None, nv_operation="ule",
                    policy_or=False):
    """The steps, each an argv list, of one unseal of STEM's blob.

    biometric: an unsalted policy session for the conditions (PolicyPCR on
    PCR 7 with pcr7, PolicyNV, PolicyOR with policy_or), and a separate
    salted HMAC session (encrypt and decrypt) for the response, like the
    module. passcode: one policy session, salted with the pinned SRK and
    bound to it, PolicyAuthValue, PolicyNV, PolicyOR with policy_or, and the
    password AUTH on tpm2_unseal."""
    if branch not in ("biometric", "passcode"):
        raise ValueError(f"unknown branch {branch!r}")
    w = lambda name: os.path.join(folder, name)  # noqa: E731
    item, policy = w(f"{stem}-item.ctx"), w(f"{stem}-policy.ctx")
    steps = [["tpm2_load", "-Q", "-C", srk, "-u", w(f"{stem}.pub"), "-r", w(f"{stem}.priv"), "-c", item]]
    conditions = []
    if nv_index is not None:
        # operandB from offset 0, the owner authorizing the read (OWNERREAD).
        conditions.append(["tpm2_policynv", "-Q", "-S", policy, "-C", "o", "-i",
                           operand_file(folder, stem, nv_operation), "--offset", "0", nv_index, nv_operation])
    if policy_or:
        conditions.append(["tpm2_policyor", "-Q", "-S", policy, "-l",
                           f"sha256:{w(stem + '-a.pol')},{w(stem + '-b.pol')}"])
    if branch == "biometric":
        encrypt = w(f"{stem}-encrypt.ctx")
        steps.append(["tpm2_startauthsession", "--policy-session", "-S", policy])
        if pcr7:
            steps.append(["tpm2_policypcr", "-Q", "-S", policy, "-l", "sha256:7"])
        steps += conditions
        steps += [
            ["tpm2_startauthsession", "--hmac-session", "-c", srk, "-n", w("srk.name"), "-S", encrypt],
            ["tpm2_unseal", "-c", item, "-p", f"session:{policy}", "-S", encrypt],
            ["tpm2_flushcontext", policy],
            ["tpm2_flushcontext", encrypt],
        ]
    else:
        steps += [
            ["tpm2_startauthsession", "--policy-session", "-c", srk, "-n", w("srk.name"), "-S", policy],
            ["tpm2_policyauthvalue", "-Q", "-S", policy],
        ]
        steps += conditions
        steps += [
            ["tpm2_unseal", "-c", item, "-p", f"session:{policy}+{AUTH}"],
            ["tpm2_flushcontext", policy],
        ]
    steps.append(["tpm2_flushcontext", "-t"])
    return steps


def main():
    parser = argparse.ArgumentParser(description="Print the tpm2-tools unseal sequence as JSON (a list of argv lists).")
    parser.add_argument("--folder", required=True)
    parser.add_argument("--stem", required=True)
    parser.add_argument("--branch", required=True, choices=("biometric", "passcode"))
    parser.add_argument("--srk", default=SRK)
    parser.add_argument("--pcr7", action="store_true")
    parser.add_argument("--nv-index")
    parser.add_argument("--nv-operation", default="ule", choices=("ule", "eq"))
    parser.add_argument("--policy-or", action="store_true")
    a = parser.parse_args()
    print(json.dumps(unseal_sequence(a.folder, a.stem, a.branch, srk=a.srk, pcr7=a.pcr7, nv_index=a.nv_index,
                                     nv_operation=a.nv_operation, policy_or=a.policy_or)))


if __name__ == "__main__":
    main()
