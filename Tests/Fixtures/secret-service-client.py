#!/usr/bin/python3
"""Secret Service clients for SecretServiceProviderTests, run with Debian's
python3 against the bus in DBUS_SESSION_BUS_ADDRESS: python-secretstorage
(jeepney, its DH session), Python's keyring, and libsecret through
PyGObject (the calls Chromium's os_crypt makes). Secrets come on stdin and
go to stdout; the outcome of each step is printed as `key=value` lines.
Exit 0 when the step did what it says, 1 otherwise (with the reason on
stderr)."""

import sys
import time


def pairs(args):
    return dict(arg.split("=", 1) for arg in args)


def secretstorage_connection():
    import secretstorage
    return secretstorage, secretstorage.dbus_init()


def store(args):
    """store LABEL TYPE REPLACE k=v...: a new item in the default collection, the secret from stdin."""
    secretstorage, conn = secretstorage_connection()
    label, content_type, replace = args[0], args[1], args[2] == "replace"
    collection = secretstorage.get_default_collection(conn)
    item = collection.create_item(label, pairs(args[3:]), sys.stdin.buffer.read(), replace=replace, content_type=content_type)
    print("path=" + item.item_path)


def search(args):
    """search k=v...: how many items match, and how many are locked."""
    secretstorage, conn = secretstorage_connection()
    items = list(secretstorage.search_items(conn, pairs(args)))
    print("found=%d" % len(items))
    print("locked=%d" % sum(1 for item in items if item.is_locked()))
    for item in items:
        print("item=%s label=%s attributes=%s" % (item.item_path, item.get_label(), sorted(item.get_attributes().items())))


def get(args):
    """get k=v...: the first matching item's secret (unlocking it: a prompt), its content type on stderr."""
    secretstorage, conn = secretstorage_connection()
    items = list(secretstorage.search_items(conn, pairs(args)))
    if not items:
        sys.exit("no item")
    item = items[0]
    if item.is_locked():
        print("unlocking", file=sys.stderr, flush=True)
        if item.unlock():
            sys.exit("the prompt was dismissed")
    sys.stderr.write("type=%s\n" % item.get_secret_content_type())
    sys.stdout.buffer.write(item.get_secret())


def locked_read(args):
    """locked-read k=v...: GetSecret without unlocking: must be refused with IsLocked."""
    secretstorage, conn = secretstorage_connection()
    item = list(secretstorage.search_items(conn, pairs(args)))[0]
    try:
        item.get_secret()
    except secretstorage.exceptions.LockedException as error:
        print("refused=LockedException")
        return
    except Exception as error:  # the raw D-Bus error
        print("refused=%s" % error)
        return
    sys.exit("a locked item gave its secret")


def edit(args):
    """edit LABEL k=v... (of the first item matching old=..., given as the first pair)."""
    secretstorage, conn = secretstorage_connection()
    old = pairs(args[1:2])
    item = list(secretstorage.search_items(conn, old))[0]
    item.set_label(args[0])
    item.set_attributes(pairs(args[2:]))
    print("label=" + item.get_label())


def delete(args):
    """delete k=v...: every matching item."""
    secretstorage, conn = secretstorage_connection()
    items = list(secretstorage.search_items(conn, pairs(args)))
    for item in items:
        item.delete()
    print("deleted=%d" % len(items))


def prompt_and_wait(args):
    """prompt-and-wait k=v...: Unlock the first item and run its prompt, then wait (the test kills this process)."""
    from jeepney import DBusAddress, new_method_call
    secretstorage, conn = secretstorage_connection()
    item = list(secretstorage.search_items(conn, pairs(args)))[0]
    service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Service")
    reply = conn.send_and_get_reply(new_method_call(service, "Unlock", "ao", ([item.item_path],)))
    unlocked, prompt = reply.body
    print("prompt=" + prompt, flush=True)
    address = DBusAddress(prompt, bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Prompt")
    conn.send_and_get_reply(new_method_call(address, "Prompt", "s", ("",)))
    print("prompting", flush=True)
    time.sleep(3600)


def keyring_step(args):
    """keyring set|get|delete SERVICE USER: Python's keyring on its Secret Service backend."""
    from keyring.backends import SecretService
    backend = SecretService.Keyring()
    action, service, user = args
    if action == "set":
        backend.set_password(service, user, sys.stdin.read())
    elif action == "get":
        password = backend.get_password(service, user)
        if password is None:
            sys.exit("no password")
        sys.stdout.write(password)
    elif action == "delete":
        backend.delete_password(service, user)


def chrome(args):
    """chrome: Chromium's os_crypt key through libsecret: the default collection unlocked if locked, the key looked up and created when missing, read back."""
    import gi
    gi.require_version("Secret", "1")
    from gi.repository import Secret
    service = Secret.Service.get_sync(Secret.ServiceFlags.OPEN_SESSION, None)
    collection = Secret.Collection.for_alias_sync(service, Secret.COLLECTION_DEFAULT, Secret.CollectionFlags.NONE, None)
    if collection is None:
        sys.exit("no default collection")
    if collection.get_locked():
        count, _ = service.unlock_sync([collection], None)
        print("unlocked-collections=%d" % count)
    print("locked=%s" % collection.get_locked())
    schema = Secret.Schema.new("chrome_libsecret_os_crypt_password_v2", Secret.SchemaFlags.DONT_MATCH_NAME,
                               {"application": Secret.SchemaAttributeType.STRING})
    key = Secret.password_lookup_sync(schema, {"application": "chrome"}, None)
    if key is None:
        print("created=1")
        Secret.password_store_sync(schema, {"application": "chrome"}, Secret.COLLECTION_DEFAULT, "Chrome Safe Storage",
                                   sys.stdin.read(), None)
        key = Secret.password_lookup_sync(schema, {"application": "chrome"}, None)
    else:
        print("created=0")
    if key is None:
        sys.exit("the key does not read back")
    sys.stdout.write("key=" + key + "\n")


def foreign_session(args):
    """foreign-session k=v...: a second connection uses the first one's session: NoSession."""
    from jeepney import DBusAddress, new_method_call
    secretstorage, first = secretstorage_connection()
    _, second = secretstorage_connection()
    item = list(secretstorage.search_items(first, pairs(args)))[0]
    service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Service")
    session = first.send_and_get_reply(new_method_call(service, "OpenSession", "sv", ("plain", ("s", "")))).body[1]
    address = DBusAddress(item.item_path, bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Item")
    mine = first.send_and_get_reply(new_method_call(address, "GetSecret", "o", (session,)))
    print("own=%s" % (mine.header.message_type.name))
    theirs = second.send_and_get_reply(new_method_call(address, "GetSecret", "o", (session,)))
    print("foreign=%s" % theirs.header.fields.get(4, theirs.header.message_type.name))  # 4: the error name


def unlock_set(args):
    """unlock-set GO NAMES k=v...: as a hostile client speaks D-Bus (jeepney's raw messages, no library's checks), on one
    connection, for each round of NAMES (rounds separated by `+`, names by `,`): of the items matching k=v, Unlock those
    whose service is named in one call and run its prompt, then read every matching item (GetSecrets, GetSecret, Locked,
    SearchItems) as phase `rN` (N from 1), say `read rN` on stderr and wait until the file GO + N exists (the test moves
    the clock on); after the last round read them all again as phase `after`. Each read is a `key=value` line:
    `PHASE:secret:SERVICE=SECRET` or `PHASE:refused:SERVICE=ERROR`, `PHASE:locked:SERVICE=BOOL`, `PHASE:secrets=SERVICE,...`
    (what GetSecrets returned), `PHASE:search-locked=SERVICE,...`; each round's prompt gives `rN:dismissed` and
    `rN:completed=SERVICE,...`."""
    import os
    from jeepney import DBusAddress, MatchRule, MessageType, new_method_call
    from jeepney.bus_messages import message_bus
    from jeepney.io.blocking import open_dbus_connection
    go, rounds, query = args[0], [names.split(",") for names in args[1].split("+")], pairs(args[2:])
    conn = open_dbus_connection(bus="SESSION")
    service = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Service")

    def call(address, method, signature, body):
        reply = conn.send_and_get_reply(new_method_call(address, method, signature, body))
        if reply.header.message_type == MessageType.error:
            return None, reply.header.fields.get(4)  # 4: the error name
        return reply.body, None

    def properties(path):
        return DBusAddress(path, bus_name="org.freedesktop.secrets", interface="org.freedesktop.DBus.Properties")

    session = call(service, "OpenSession", "sv", ("plain", ("s", "")))[0][1]
    unlocked, locked = call(service, "SearchItems", "a{ss}", (query,))[0]
    by_service = {}
    for path in unlocked + locked:
        attributes = call(properties(path), "Get", "ss", ("org.freedesktop.Secret.Item", "Attributes"))[0][0][1]
        by_service[attributes["service"]] = path

    def named(paths):
        return ",".join(sorted(name for name, path in by_service.items() if path in paths))

    def unlock(phase, names):
        (_, prompt), _ = call(service, "Unlock", "ao", ([by_service[name] for name in names],))
        rule = MatchRule(type="signal", interface="org.freedesktop.Secret.Prompt", member="Completed", path=prompt)
        call(message_bus, "AddMatch", "s", (rule.serialise(),))
        with conn.filter(rule) as signals:
            call(DBusAddress(prompt, bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Prompt"), "Prompt", "s", ("",))
            dismissed, (_, opened) = conn.recv_until_filtered(signals).body  # the result is a variant (ao)
        print("%s:dismissed=%s" % (phase, dismissed))
        print("%s:completed=%s" % (phase, named(opened)))

    def read(phase):
        paths = [by_service[name] for name in sorted(by_service)]
        print("%s:secrets=%s" % (phase, named(call(service, "GetSecrets", "aoo", (paths, session))[0][0])))
        for name in sorted(by_service):
            path = by_service[name]
            item = DBusAddress(path, bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Item")
            body, error = call(item, "GetSecret", "o", (session,))
            if body is None:
                print("%s:refused:%s=%s" % (phase, name, error))
            else:
                print("%s:secret:%s=%s" % (phase, name, bytes(body[0][2]).decode()))
            is_locked = call(properties(path), "Get", "ss", ("org.freedesktop.Secret.Item", "Locked"))[0][0][1]
            print("%s:locked:%s=%s" % (phase, name, is_locked))
        print("%s:search-locked=%s" % (phase, named(call(service, "SearchItems", "a{ss}", (query,))[0][1])))
        sys.stdout.flush()

    for number, names in enumerate(rounds, 1):
        unlock("r%d" % number, names)
        read("r%d" % number)
        print("read r%d" % number, file=sys.stderr, flush=True)
        while not os.path.exists(go + str(number)):
            time.sleep(0.05)
    read("after")


steps = {"store": store, "search": search, "get": get, "locked-read": locked_read, "edit": edit, "delete": delete,
         "prompt-and-wait": prompt_and_wait, "unlock-set": unlock_set, "keyring": keyring_step, "chrome": chrome, "foreign-session": foreign_session}

if __name__ == "__main__":
    steps[sys.argv[1]](sys.argv[2:])
