#!/usr/bin/python3
"""What SecretServiceImportTests put in a Secret Service and read back, with
python secretstorage (Debian's python3, the bus in DBUS_SESSION_BUS_ADDRESS).

Steps:
  populate COLLECTION_LABEL    items with a binary, an empty, a 64 KiB and a non-ASCII secret in the default
                               collection, and one in the collection labelled COLLECTION_LABEL (gnome-keyring:
                               unlocked to store in it, then locked again)
  populate-typed COLLECTION_LABEL
                               the same items, the binary one stored as application/octet-stream (KeePassXC keeps
                               a text/plain secret as a password, text: bytes that are not UTF-8 would not
                               survive), the item in COLLECTION_LABEL with KeePassXC's UserName and URL too;
                               no collection locked or unlocked (KeePassXC's Unlock asks for the database's
                               password in its window)
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


def populate_default(conn, binary_type):
    default = secretstorage.get_default_collection(conn)
    big = bytes((n * 7919) % 256 for n in range(64 * 1024))
    default.create_item("Binary", {"kind": "binary"}, bytes([0, 1, 2, 254, 255]) * 3, content_type=binary_type)
    default.create_item("Empty", {"kind": "empty"}, b"")
    default.create_item("Big", {"kind": "big"}, big, content_type="application/octet-stream")
    default.create_item("Pässwörd 日本", {"kind": "unicode", "ünïcode": "wert ✓"}, "geheim-秘密-✓".encode())


def populate(conn, args):
    populate_default(conn, "text/plain")
    # gnome-keyring loads a keyring without a password locked; its Unlock needs no prompt.
    other = collection(conn, args[0])
    other.unlock()
    other.create_item("VPN", {"service": "vpn", "account": "ada"}, b"vpn-secret")
    other.lock()
    print("populated")


def populate_typed(conn, args):
    populate_default(conn, "application/octet-stream")
    collection(conn, args[0]).create_item("VPN", {"service": "vpn", "account": "ada", "UserName": "ada",
                                                  "URL": "https://vpn.example"}, b"vpn-secret")
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


def is_locked_item(conn, args):
    """Whether the item labelled args[0] is locked to a new client (this one)."""
    found = [item for found in secretstorage.get_all_collections(conn) for item in found.get_all_items() if item.get_label() == args[0]]
    print("locked=%s" % (found[0].is_locked() if found else "missing"))


steps = {"populate": populate, "populate-typed": populate_typed, "store-big": store_big, "dump": dump, "lock": lock, "is-locked": is_locked,
         "is-locked-item": is_locked_item}

if __name__ == "__main__":
    steps[sys.argv[1]](secretstorage.dbus_init(), sys.argv[2:])
