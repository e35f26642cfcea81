#!/usr/bin/python3
"""Collections of the Secret Service, spoken as a client speaks D-Bus itself
(jeepney's raw messages: no library's checks), for
SecretServiceCollectionTests. Run with Debian's python3 against the bus in
DBUS_SESSION_BUS_ADDRESS. Each step prints `key=value` lines; a D-Bus error
is printed as `error=NAME` (exit 0: the test judges it). Secrets come on
stdin.

Steps:
  create LABEL ALIAS           CreateCollection: path=, prompt=
  store COLLECTION LABEL k=v.. CreateItem in the collection (a path, or alias:NAME) with the secret from stdin: path=
  store-reserved COLLECTION    CreateItem naming touchstone:collection itself
  collections                  the Collections property; per collection: collection=PATH label=L locked=B items=N
  items COLLECTION [k=v..]     the collection's SearchItems: item=PATH per item
  search k=v..                 the Service's SearchItems: unlocked=PATH / locked=PATH
  attributes ITEM              the item's Attributes: attribute=k=v per pair
  read ITEM                    GetSecret (a plain session): secret= or error=
  alias NAME                   ReadAlias: path=
  set-alias NAME PATH          SetAlias
  label COLLECTION LABEL       Set the collection's Label
  delete COLLECTION            the collection's Delete
  lock PATH..                  Lock: locked=PATH per path reported
  unlock PATH..                Unlock, and its prompt run when there is one: unlocked=PATH per path, dismissed=B
"""

import sys

from jeepney import DBusAddress, MatchRule, MessageType, new_method_call
from jeepney.bus_messages import message_bus
from jeepney.io.blocking import open_dbus_connection

BUS = "org.freedesktop.secrets"
conn = open_dbus_connection(bus="SESSION")
service = DBusAddress("/org/freedesktop/secrets", bus_name=BUS, interface="org.freedesktop.Secret.Service")


def call(address, method, signature, body):
    reply = conn.send_and_get_reply(new_method_call(address, method, signature, body))
    if reply.header.message_type == MessageType.error:
        return None, reply.header.fields.get(4)  # 4: the error name
    return reply.body, None


def answer(address, method, signature, body):
    """The reply's body, or exit 0 after printing error=NAME."""
    body, error = call(address, method, signature, body)
    if body is None:
        print("error=%s" % error)
        sys.exit(0)
    return body


def properties(path):
    return DBusAddress(path, bus_name=BUS, interface="org.freedesktop.DBus.Properties")


def get(path, interface, name):
    return answer(properties(path), "Get", "ss", (interface, name))[0][1]


def collection_path(name):
    if name.startswith("alias:"):
        return answer(service, "ReadAlias", "s", (name[6:],))[0]
    return name


def pairs(args):
    return dict(arg.split("=", 1) for arg in args)


def plain_session():
    return answer(service, "OpenSession", "sv", ("plain", ("s", "")))[1]


def create(args):
    path, prompt = answer(service, "CreateCollection", "a{sv}s", ({"org.freedesktop.Secret.Collection.Label": ("s", args[0])}, args[1]))
    print("path=%s" % path)
    print("prompt=%s" % prompt)


def store(args, extra=None):
    path = collection_path(args[0])
    attributes = pairs(args[2:])
    if extra:
        attributes.update(extra)
    session = plain_session()
    props = {"org.freedesktop.Secret.Item.Label": ("s", args[1]), "org.freedesktop.Secret.Item.Attributes": ("a{ss}", attributes)}
    secret = (session, b"", sys.stdin.buffer.read(), "text/plain")
    collection = DBusAddress(path, bus_name=BUS, interface="org.freedesktop.Secret.Collection")
    item, _ = answer(collection, "CreateItem", "a{sv}(oayays)b", (props, secret, False))
    print("path=%s" % item)


def store_reserved(args):
    store([args[0], "reserved"], extra={"touchstone:collection": "default"})


def collections(args):
    for path in get("/org/freedesktop/secrets", "org.freedesktop.Secret.Service", "Collections"):
        interface = "org.freedesktop.Secret.Collection"
        print("collection=%s label=%s locked=%s items=%d" % (path, get(path, interface, "Label"), get(path, interface, "Locked"),
                                                            len(get(path, interface, "Items"))))


def items(args):
    collection = DBusAddress(collection_path(args[0]), bus_name=BUS, interface="org.freedesktop.Secret.Collection")
    for path in answer(collection, "SearchItems", "a{ss}", (pairs(args[1:]),))[0]:
        print("item=%s" % path)


def search(args):
    unlocked, locked = answer(service, "SearchItems", "a{ss}", (pairs(args),))
    for path in unlocked:
        print("unlocked=%s" % path)
    for path in locked:
        print("locked=%s" % path)


def attributes(args):
    for key, value in sorted(get(args[0], "org.freedesktop.Secret.Item", "Attributes").items()):
        print("attribute=%s=%s" % (key, value))


def read(args):
    session = plain_session()
    item = DBusAddress(args[0], bus_name=BUS, interface="org.freedesktop.Secret.Item")
    secret = answer(item, "GetSecret", "o", (session,))[0]
    print("secret=%s" % bytes(secret[2]).decode())


def alias(args):
    print("path=%s" % answer(service, "ReadAlias", "s", (args[0],))[0])


def set_alias(args):
    answer(service, "SetAlias", "so", (args[0], args[1]))
    print("done")


def label(args):
    answer(properties(collection_path(args[0])), "Set", "ssv", ("org.freedesktop.Secret.Collection", "Label", ("s", args[1])))
    print("done")


def delete(args):
    collection = DBusAddress(collection_path(args[0]), bus_name=BUS, interface="org.freedesktop.Secret.Collection")
    print("prompt=%s" % answer(collection, "Delete", "", ())[0])


def lock(args):
    for path in answer(service, "Lock", "ao", (args,))[0]:
        print("locked=%s" % path)


def unlock(args):
    unlocked, prompt = answer(service, "Unlock", "ao", (args,))
    for path in unlocked:
        print("unlocked=%s" % path)
    if prompt == "/":
        return
    rule = MatchRule(type="signal", interface="org.freedesktop.Secret.Prompt", member="Completed", path=prompt)
    call(message_bus, "AddMatch", "s", (rule.serialise(),))
    with conn.filter(rule) as signals:
        print("prompting", file=sys.stderr, flush=True)
        answer(DBusAddress(prompt, bus_name=BUS, interface="org.freedesktop.Secret.Prompt"), "Prompt", "s", ("",))
        dismissed, (_, opened) = conn.recv_until_filtered(signals).body
    print("dismissed=%s" % dismissed)
    for path in opened:
        print("unlocked=%s" % path)


steps = {"create": create, "store": store, "store-reserved": store_reserved, "collections": collections, "items": items,
         "search": search, "attributes": attributes, "read": read, "alias": alias, "set-alias": set_alias, "label": label,
         "delete": delete, "lock": lock, "unlock": unlock}

if __name__ == "__main__":
    steps[sys.argv[1]](sys.argv[2:])
