import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneDBus
import TouchstoneSecure

/// An object for the tests: echoes, fails as asked, answers later, has a
/// property and a signal.
private final class TestObject: DBusObject {
    static let path = "/org/touchstone/Test"
    static let interface = "org.touchstone.Test"
    static let introspection = """
        <node>
          <interface name="org.touchstone.Test">
            <method name="Echo">
              <arg name="value" type="v" direction="in"/>
              <arg name="value" type="v" direction="out"/>
            </method>
            <method name="Fail">
              <arg name="name" type="s" direction="in"/>
            </method>
            <method name="Later">
              <arg name="tag" type="u" direction="in"/>
              <arg name="done" type="s" direction="out"/>
            </method>
            <property name="Label" type="s" access="read"/>
            <property name="Note" type="s" access="readwrite"/>
            <signal name="Pinged">
              <arg name="what" type="s"/>
            </signal>
          </interface>
        </node>
        """

    let calls = Locked<[String]>([])
    let parked = Locked<[DBusCall]>([])

    /// Answers the parked Later calls.
    func release() {
        for call in parked.withLock({ calls in defer { calls = [] }; return calls }) { call.reply([.string("done")]) }
    }

    func handle(_ call: DBusCall) {
        calls.withLock { $0.append(call.method) }
        switch call.method {
        case "Echo":
            call.reply([call.arguments[0]])
        case "Fail":
            call.fail(call.arguments[0].string ?? "org.freedesktop.DBus.Error.Failed", "failed as asked")
        case "Later":
            // Parked: answered by release(), from another thread, long after
            // the handler returned.
            parked.withLock { $0.append(call) }
        default:
            call.fail("org.freedesktop.DBus.Error.UnknownMethod", call.method)
        }
    }

    let note = Locked("first")

    func property(_ name: String, interface: String, path: String) -> DBusValue? {
        switch name {
        case "Label": .string("a test object")
        case "Note": .string(note.withLock { $0 })
        default: nil
        }
    }

    /// Note takes any text but "refused".
    func setProperty(_ name: String, interface: String, path: String, to value: DBusValue) -> DBusError? {
        guard name == "Note", let text = value.string else { return DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", "no") }
        guard text != "refused" else { return DBusError(name: "org.freedesktop.DBus.Error.AccessDenied", "not this one") }
        note.withLock { $0 = text }
        return nil
    }
}

/// The test object served on a private bus.
private struct Served: Sendable {
    let served: ServedObject<TestObject>
    var rig: DBusRig { served.rig }
    var server: DBusBus { served.bus }
    var object: TestObject { served.object }

    init() async throws {
        served = try await ServedObject(at: TestObject.path, introspection: TestObject.introspection) { _ in TestObject() }
    }

    func client() async throws -> DBusBus { try await served.client() }

    func call(_ client: DBusBus, _ method: String, _ arguments: [DBusValue], replyType: String? = nil) async throws -> [DBusValue] {
        try await client.call(destination: server.uniqueName, path: TestObject.path, interface: TestObject.interface,
                              method: method, arguments, replyType: replyType)
    }
}

@Suite("GDBus from Swift (TouchstoneDBus), on a private dbus-daemon")
struct DBusBusTests {
    @Test("every kind of value survives a round trip through a real bus, a 1 MiB byte array among them")
    func valuesRoundTrip() async throws {
        let served = try await Served()
        defer { served.rig.close() }
        let client = try await served.client()

        let big = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let values: [DBusValue] = [
            .bool(true), .byte(255), .int32(-7), .uint32(7), .int64(Int64.min), .uint64(UInt64.max), .double(0.5),
            .string("grüße, \u{1F512}"), .string(""), .objectPath("/org/freedesktop/secrets/collection/default"),
            .signature("a{ss}"), .bytes([]), .bytes([0, 1, 2, 255]), .bytes(big),
            .strings(["service": "mail", "account": "alice", "xdg:schema": "org.example"]),
            .properties([("Label", .string("x")), ("Locked", .bool(false))]),
            .tuple([.objectPath("/s"), .bytes([1]), .bytes([2, 3]), .string("text/plain")]),
            .array(element: "o", [.objectPath("/a"), .objectPath("/b")]),
            .array(element: "s", []),
            .variant(.uint32(3)),
        ]
        for value in values {
            let reply = try await served.call(client, "Echo", [.variant(value)], replyType: "(v)")
            #expect(reply == [.variant(value)], "\(value.signature): \(reply)")
        }
    }

    @Test("gdbus sees the object: a call, Introspect, Properties.Get; an ill-typed call is refused by GDBus (InvalidArgs) and the object goes on answering")
    func gdbusSeesIt() async throws {
        let served = try await Served()
        let (rig, object) = (served.rig, served.object)
        defer { rig.close() }
        let destination = served.server.uniqueName

        let echo = try rig.gdbus(["call", "--dest", destination, "--object-path", TestObject.path,
                                  "--method", "org.touchstone.Test.Echo", "<'hello'>"])
        #expect(echo.status == 0 && echo.output.contains("<'hello'>"), "\(echo.output)")
        let introspect = try rig.gdbus(["introspect", "--dest", destination, "--object-path", TestObject.path])
        #expect(introspect.status == 0, "\(introspect.output)")
        for name in ["Echo(", "Fail(", "Later(", "Label", "Pinged(", "org.freedesktop.DBus.Properties"] {
            #expect(introspect.output.contains(name), "Introspect lacks \(name): \(introspect.output)")
        }
        let label = try rig.gdbus(["call", "--dest", destination, "--object-path", TestObject.path,
                                   "--method", "org.freedesktop.DBus.Properties.Get", "org.touchstone.Test", "Label"])
        #expect(label.status == 0 && label.output.contains("'a test object'"), "\(label.output)")

        // gdbus checks argument types itself: the ill-typed call goes from a
        // connection of the test's, which sends what it is given.
        let client = try await served.client()
        do {
            _ = try await served.call(client, "Later", [.string("not a number")])
            Issue.record("an ill-typed call was answered")
        } catch let error as DBusError {
            #expect(error.name == "org.freedesktop.DBus.Error.InvalidArgs", "\(error)")
        }
        let noSuchMethod = try rig.gdbus(["call", "--dest", destination, "--object-path", TestObject.path,
                                          "--method", "org.touchstone.Test.Nothing"])
        #expect(noSuchMethod.status != 0 && noSuchMethod.output.contains("UnknownMethod"), "\(noSuchMethod.output)")
        #expect(!object.calls.withLock { $0 }.contains("Later"), "an ill-typed call reached the handler")

        let again = try rig.gdbus(["call", "--dest", destination, "--object-path", TestObject.path,
                                   "--method", "org.touchstone.Test.Echo", "<uint32 5>"])
        #expect(again.status == 0 && again.output.contains("<uint32 5>"), "\(again.output)")
    }

    @Test("properties: a writable one is set through Properties.Set and read back; the object's refusal reaches the caller by name; a read-only one and a wrong type are refused by GDBus")
    func propertyWrites() async throws {
        let served = try await Served()
        defer { served.rig.close() }
        let client = try await served.client()
        func set(_ name: String, _ value: DBusValue) async throws {
            _ = try await client.call(destination: served.server.uniqueName, path: TestObject.path,
                                      interface: "org.freedesktop.DBus.Properties", method: "Set",
                                      [.string(TestObject.interface), .string(name), .variant(value)])
        }
        func get(_ name: String) async throws -> [DBusValue] {
            try await client.call(destination: served.server.uniqueName, path: TestObject.path,
                                  interface: "org.freedesktop.DBus.Properties", method: "Get",
                                  [.string(TestObject.interface), .string(name)], replyType: "(v)")
        }
        #expect(try await get("Note") == [.variant(.string("first"))])
        try await set("Note", .string("second"))
        #expect(try await get("Note") == [.variant(.string("second"))])
        for (name, value, error) in [("Note", DBusValue.string("refused"), "org.freedesktop.DBus.Error.AccessDenied"),
                                     ("Note", .uint32(1), "org.freedesktop.DBus.Error.InvalidArgs"),
                                     // GDBus answers a write of a read-only property itself, so.
                                     ("Label", .string("x"), "org.freedesktop.DBus.Error.InvalidArgs")] {
            do {
                try await set(name, value)
                Issue.record("Set \(name) to \(value) was taken")
            } catch let refusal as DBusError {
                #expect(refusal.name == error, "\(name) = \(value): \(refusal)")
            }
        }
        #expect(try await get("Note") == [.variant(.string("second"))], "a refused Set changed the value")
    }

    @Test("a call answered later, from another thread, does not hold the others: while one waits, an Echo on another connection is answered; then the first is")
    func answeredLater() async throws {
        let served = try await Served()
        defer { served.rig.close() }
        let client = try await served.client()
        let finished = Locked(false)
        async let later: [DBusValue] = {
            let reply = try await served.call(client, "Later", [.uint32(1)], replyType: "(s)")
            finished.withLock { $0 = true }
            return reply
        }()
        // Once the server holds the Later call unanswered, an Echo.
        try #require(try await eventually { !served.object.parked.withLock { $0.isEmpty } }, "the Later call never reached the object")
        let echo = try await served.call(try await served.client(), "Echo", [.variant(.string("now"))], replyType: "(v)")
        #expect(echo == [.variant(.string("now"))])
        #expect(!finished.withLock { $0 }, "the parked call was answered before it was released")
        served.object.release()
        #expect(try await later == [.string("done")])
    }

    @Test("a handler's D-Bus error reaches the caller by name")
    func errorsByName() async throws {
        let served = try await Served()
        defer { served.rig.close() }
        let client = try await served.client()
        for name in ["org.freedesktop.Secret.Error.IsLocked", "org.freedesktop.Secret.Error.NoSuchObject"] {
            do {
                _ = try await served.call(client, "Fail", [.string(name)])
                Issue.record("Fail(\(name)) answered without an error")
            } catch let error as DBusError {
                #expect(error.name == name, "\(error)")
                #expect(error.message.contains("failed as asked"), "\(error)")
            }
        }
    }

    @Test("names: the first connection owns it; a second is told it is taken (and by whom: executable, command and pid) unless it replaces, and then the first hears it lost")
    func names() async throws {
        let rig = try DBusRig()
        defer { rig.close() }
        let first = try await DBusBus(address: rig.address)
        let lost = Locked(false)
        #expect(try await first.requestName("org.touchstone.Test", replace: false) { lost.withLock { $0 = true } } == .owned)
        let second = try await DBusBus(address: rig.address)
        #expect(try await second.requestName("org.touchstone.Test", replace: false) == .taken)
        let owner = try #require(await second.owner(of: "org.touchstone.Test"))
        #expect(owner.uniqueName == first.uniqueName)
        #expect(owner.program?.pid == getpid())
        #expect(owner.program?.command?.isEmpty == false)
        // The executable as the kernel resolves it: this test binary.
        let here = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        #expect(owner.program?.executable == here)
        #expect(!lost.withLock { $0 })

        #expect(try await second.requestName("org.touchstone.Test", replace: true) == .owned)
        #expect(try await eventually { lost.withLock { $0 } }, "the first owner was not told it lost the name")
        #expect(await second.owner(of: "org.touchstone.Test")?.uniqueName == second.uniqueName)
        #expect(await second.owner(of: "org.touchstone.Nobody") == nil)
    }

    @Test("GDBus numbers objects and subtrees apart: taking down an object whose id a subtree also has leaves the subtree answering")
    func registrationsKeptApart() async throws {
        let served = try await Served()
        defer { served.rig.close() }
        let object = try #require(try await served.server.export(served.object, at: "/org/touchstone/Object",
                                                                 introspection: TestObject.introspection).first)
        // Subtrees until one has the object's number (subtree ids count from 1 too, apart).
        var twin: String?
        for n in 0..<(Int(object.id) + 64) where twin == nil {
            let path = "/org/touchstone/Tree\(n)"
            let made = try await served.server.exportSubtree(served.object, at: path, root: TestObject.introspection,
                                                             children: TestObject.introspection)
            if made.first?.id == object.id { twin = path }
        }
        let tree = try #require(twin, "no subtree got id \(object.id)")
        await served.server.unexport([object])
        let client = try await served.client()
        let echoed = try await client.call(destination: served.server.uniqueName, path: tree + "/child",
                                           interface: TestObject.interface, method: "Echo", [.variant(.string("still here"))])
        #expect(echoed.first?.variantValue?.string == "still here")
        await #expect(throws: DBusError.self) {
            try await client.call(destination: served.server.uniqueName, path: "/org/touchstone/Object",
                                  interface: TestObject.interface, method: "Echo", [.variant(.string("gone"))])
        }
    }

    @Test("a signal emitted on one connection reaches a subscriber on another, with its arguments")
    func signals() async throws {
        let rig = try DBusRig()
        defer { rig.close() }
        let server = try await DBusBus(address: rig.address)
        let listener = try await DBusBus(address: rig.address)
        let heard = Locked<[[DBusValue]]>([])
        try await listener.subscribe(sender: nil, interface: TestObject.interface, member: "Pinged", path: TestObject.path) { arguments in
            heard.withLock { $0.append(arguments) }
        }
        // The subscription's match rule reaches the bus before the signal:
        // a round trip to the bus after it orders them.
        _ = await listener.owner(of: "org.freedesktop.DBus")
        server.emit(path: TestObject.path, interface: TestObject.interface, name: "Pinged", [.string("ping")])
        #expect(try await eventually { !heard.withLock { $0.isEmpty } })
        #expect(heard.withLock { $0 } == [[.string("ping")]])
    }
}
