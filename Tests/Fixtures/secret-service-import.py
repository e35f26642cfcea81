#!/usr/bin/python3
"""What SecretServiceImportTests put in a Secret Service and read back, with
python secretstorage (Debian's python3, the bus in DBUS_SESSION_BUS_ADDRESS).

Steps:
  populate COLLECTION_LABEL    items with a binary, an empty, a 64 KiB and a non-ASCII secret in the default
                               collection, and one in the collection labelled COLLECTION_LABEL
  store-big BYTES              one item of BYTES bytes in the default collection
  dump                         every collection's items, one line each, sorted:
                               COLLECTION_LABEL|ITEM_LABEL|ATTRIBUTES|CONTENT_TYPE|LENGTH|SHA256
                               (the session collection left out: it is kept in memory), then
                               `# COLLECTION_LABEL locked=B` for each; a locked collection is unlocked to be
                               read (no prompt: gnome-keyring's keyrings without a password) and locked again
  lock LABEL / is-locked LABEL lock the collection labelled LABEL / say locked=True|False
"""

import hashlib
import sys

import secretstorage


def collection(conn, label):
    for found in secretstorage.get_all_collections(conn):
        if found.get_label() == label:
            return found
    sys.exit("no collection labelled %r" % label)


def populate(conn, args):
    default = secretstorage.get_default_collection(conn)
    big = bytes((n * 7919) % 256 for n in range(64 * 1024))
    default.create_item("Binary", {"kind": "binary"}, bytes([0, 1, 2, 254, 255]) * 3)
    default.create_item("Empty", {"kind": "empty"}, b"")
    default.create_item("Big", {"kind": "big"}, big, content_type="application/octet-stream")
    default.create_item("Pässwörd 日本", {"kind": "unicode", "ünïcode": "wert ✓"}, "geheim-秘密-✓".encode())
    # gnome-keyring loads a keyring without a password locked; its Unlock needs no prompt.
    other = collection(conn, args[0])
    other.unlock()
    other.create_item("VPN", {"service": "vpn", "account": "ada"}, b"vpn-secret")
    other.lock()
    print("populated")


def store_big(conn, args):
    secretstorage.get_default_collection(conn).create_item("Huge", {"kind": "huge"}, b"x" * int(args[0]))
    print("stored")


def dump(conn, args):
    lines, states = [], []
    for found in secretstorage.get_all_collections(conn):
        if found.collection_path.endswith("/session"):
            continue
        locked = found.is_locked()
        states.append("# %s locked=%s" % (found.get_label(), locked))
        if locked and found.unlock():
            sys.exit("the collection %r stayed locked" % found.get_label())
        for item in found.get_all_items():
            secret = item.get_secret()
            attributes = ",".join("%s=%s" % pair for pair in sorted(item.get_attributes().items()))
            lines.append("|".join([found.get_label(), item.get_label(), attributes, item.get_secret_content_type(),
                                   str(len(secret)), hashlib.sha256(secret).hexdigest()]))
        if locked:
            found.lock()
    for line in sorted(lines) + sorted(states):
        print(line)


def lock(conn, args):
    collection(conn, args[0]).lock()
    print("locked")


def is_locked(conn, args):
    print("locked=%s" % collection(conn, args[0]).is_locked())


steps = {"populate": populate, "store-big": store_big, "dump": dump, "lock": lock, "is-locked": is_locked}

if __name__ == "__main__":
    steps[sys.argv[1]](secretstorage.dbus_init(), sys.argv[2:])
