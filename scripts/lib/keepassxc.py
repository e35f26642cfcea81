"""KeePassXC (Debian 12's keepassxc 2.7.4) serving the Secret Service
headless, written once: its settings, its databases, its start and the
moment it serves.

Used by scripts/bench-secret-service (imported: KeePassXC as a peer) and by
the CLI tests' KeePassXC rig (run as a program: SecretServiceImportTests
imports from it).

- Qt's offscreen platform (QT_QPA_PLATFORM=offscreen): no display, no Xvfb.
- Folders of its own under FOLDER: HOME, XDG_CONFIG_HOME (keepassxc.ini),
  XDG_CACHE_HOME (its local settings), XDG_RUNTIME_DIR and TMPDIR (its
  single-instance lock and socket are in TMPDIR), so that several run at
  once and none touches the user's.
- keepassxc.ini: the Secret Service on (FdoSecrets/Enabled), no access
  confirmation dialog (ConfirmAccessItem, ConfirmDeleteItem), no
  notification, no single instance, no update check, no tray, nothing
  reopened from a previous run. KeePassXC writes Enabled=false into the
  file when it cannot own org.freedesktop.secrets, so each run gets a
  fresh one.
- Saving: by default KeePassXC saves the whole database 150 ms after a
  change, on a worker thread, while its main thread goes on answering
  D-Bus; a CreateItem that comes during a save crashes 2.7.4 (SIGSEGV in
  the worker, which reads the entries the main thread changes). The
  benchmark keeps that default and waits for each save; the tests, whose
  stores come back to back, have it save only when it stops
  (`--save-on-exit`).
- A database is made by keepassxc-cli (db-create, export to XML, import
  the edited XML; the password on stdin each time): KeePassXC exposes over
  D-Bus only the group that the database's custom data item
  FDO_SECRETS_EXPOSED_GROUP names (a braced UUID, which only its GUI
  writes), here the root group. The XML also gives the database its name
  (the collection's label; the collection's id is the file's name) and,
  for the benchmark, its entries. The key derivation is keepassxc-cli's
  shortest (a 100 ms target; KeePassXC's own default for a new database is
  1 s): KeePassXC derives the key at each open.
- `keepassxc --pw-stdin DB...` reads one password line per database, opens
  (unlocks) them, and serves each as a collection; the one opened last is
  the `default` alias. It owns org.freedesktop.secrets before the
  databases are open: a client waits until each collection is unlocked
  (`ready`). A SIGTERM that comes before they are open is not acted on, nor
  is any later one: a start that failed is ended with SIGKILL.

    python3 scripts/lib/keepassxc.py prepare [--save-on-exit] FOLDER LABEL...
                                                                the password on stdin; prints each database's path
    python3 scripts/lib/keepassxc.py serve FOLDER DB...         execs keepassxc (one password line per DB on stdin)
    python3 scripts/lib/keepassxc.py ready COUNT                waits (60 s at most) until the bus in
                                                                DBUS_SESSION_BUS_ADDRESS has COUNT collections, all unlocked
"""

import base64
import os
import subprocess
import sys
import time
import uuid
import xml.etree.ElementTree as ElementTree

KEEPASSXC = "/usr/bin/keepassxc"
CLI = "/usr/bin/keepassxc-cli"

SETTINGS = """[General]
ConfigVersion=2
SingleInstance=false
RememberLastDatabases=false
RememberLastKeyFiles=false
OpenPreviousDatabasesOnStartup=false
UpdateCheckMessageShown=true
AutoSaveAfterEveryChange=%s
AutoSaveOnExit=true

[GUI]
CheckForUpdates=false
ShowTrayIcon=false
MinimizeOnStartup=false

[FdoSecrets]
Enabled=true
ShowNotification=false
ConfirmAccessItem=false
ConfirmDeleteItem=false
"""


def environment(folder, base=None):
    """KeePassXC's environment: its own folders under FOLDER, Qt offscreen."""
    env = dict(os.environ if base is None else base)
    env.update(HOME=os.path.join(folder, "home"), XDG_CONFIG_HOME=os.path.join(folder, "config"),
               XDG_CACHE_HOME=os.path.join(folder, "cache"), XDG_RUNTIME_DIR=os.path.join(folder, "run"),
               TMPDIR=os.path.join(folder, "tmp"), QT_QPA_PLATFORM="offscreen")
    return env


def prepare(folder, save_after_every_change=True):
    """The folders and a fresh keepassxc.ini."""
    for name in ("home", "config/keepassxc", "cache", "run", "tmp"):
        os.makedirs(os.path.join(folder, name), mode=0o700, exist_ok=True)
    settings = os.path.join(folder, "config/keepassxc/keepassxc.ini")
    with open(os.open(settings, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(SETTINGS % ("true" if save_after_every_change else "false"))


def cli(folder, arguments, stdin):
    """keepassxc-cli with ARGUMENTS, STDIN given; its stdout (exits on failure)."""
    done = subprocess.run([CLI] + arguments, input=stdin.encode(), capture_output=True, env=environment(folder))
    if done.returncode != 0:
        sys.exit("keepassxc-cli %s failed: %s" % (arguments[0], done.stderr.decode(errors="replace")))
    return done.stdout


def entry(title, password, attributes):
    """An <Entry> as KeePassXC keeps an item a client stored: the label as
    its Title, the secret as its Password, each attribute a string field."""
    element = ElementTree.Element("Entry")
    ElementTree.SubElement(element, "UUID").text = base64.b64encode(uuid.uuid4().bytes).decode()
    fields = {"Title": title, "UserName": "", "Password": password, "URL": "", "Notes": ""}
    fields.update(attributes)
    for key, value in fields.items():
        string = ElementTree.SubElement(element, "String")
        ElementTree.SubElement(string, "Key").text = key
        ElementTree.SubElement(string, "Value", {"ProtectInMemory": "True"} if key == "Password" else {}).text = value
    return element


def make_database(folder, path, label, password, entries=()):
    """A database at PATH named LABEL, its root group exposed, holding ENTRIES
    (<Entry> elements)."""
    base = path + ".new"
    cli(folder, ["db-create", "-q", "-p", "-t", "100", base], "%s\n%s\n" % (password, password))
    tree = ElementTree.ElementTree(ElementTree.fromstring(cli(folder, ["export", "-q", "-f", "xml", base], password + "\n")))
    os.remove(base)
    meta, root = tree.find("Meta"), tree.find("Root/Group")
    meta.find("DatabaseName").text = label
    custom = meta.find("CustomData")
    if custom is None:
        custom = ElementTree.SubElement(meta, "CustomData")
    item = ElementTree.SubElement(custom, "Item")
    ElementTree.SubElement(item, "Key").text = "FDO_SECRETS_EXPOSED_GROUP"
    ElementTree.SubElement(item, "Value").text = "{%s}" % uuid.UUID(bytes=base64.b64decode(root.find("UUID").text))
    for element in entries:
        root.append(element)
    exported = path + ".xml"
    with open(os.open(exported, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        tree.write(f, encoding="utf-8", xml_declaration=True)
    try:
        cli(folder, ["import", "-q", "-p", "-t", "100", exported, path], "%s\n%s\n" % (password, password))
    finally:
        os.remove(exported)


def serving(address, count):
    """Whether the bus at ADDRESS has a Secret Service with COUNT collections, all unlocked."""
    from jeepney import DBusAddress, MessageType, Properties, message_bus
    from jeepney.io.blocking import open_dbus_connection
    connection = open_dbus_connection(bus=address)
    try:
        # Asked first, so that no call starts another provider by D-Bus activation.
        if not connection.send_and_get_reply(message_bus.NameHasOwner("org.freedesktop.secrets")).body[0]:
            return False
        def get(path, interface, name):
            reply = connection.send_and_get_reply(
                Properties(DBusAddress(path, bus_name="org.freedesktop.secrets", interface=interface)).get(name))
            return reply.body[0][1] if reply.header.message_type == MessageType.method_return else None
        collections = get("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Collections")
        if collections is None or len(collections) != count:
            return False
        return all(get(path, "org.freedesktop.Secret.Collection", "Locked") is False for path in collections)
    finally:
        connection.close()


def wait_until_serving(address, count, seconds=60):
    """Waits (every 20 ms, SECONDS at most) until `serving`; whether it came."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if serving(address, count):
            return True
        time.sleep(0.02)
    return serving(address, count)


def main():
    step, arguments = sys.argv[1], sys.argv[2:]
    if step == "prepare":
        on_exit = arguments[0] == "--save-on-exit"
        folder, labels = arguments[on_exit], arguments[on_exit + 1:]
        password = sys.stdin.readline().rstrip("\n")
        prepare(folder, save_after_every_change=not on_exit)
        for label in labels:
            path = os.path.join(folder, label.lower().replace(" ", "-") + ".kdbx")
            make_database(folder, path, label, password)
            print(path)
    elif step == "serve":
        folder, databases = arguments[0], arguments[1:]
        os.execve(KEEPASSXC, [KEEPASSXC, "--pw-stdin"] + databases, environment(folder))
    elif step == "ready":
        if not wait_until_serving(os.environ["DBUS_SESSION_BUS_ADDRESS"], int(arguments[0])):
            sys.exit("KeePassXC does not serve %s unlocked collection(s)" % arguments[0])
    else:
        sys.exit("unknown step %r" % step)


if __name__ == "__main__":
    main()
