internal import CGio
import Foundation
import TouchstoneGLib
import TouchstonePOSIX
import TouchstoneSecure

/// What went wrong on the bus.
package struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The D-Bus error name (`org.freedesktop.DBus.Error.Failed`, ...), when
    /// there is one.
    package var name: String?
    package var message: String

    package init(name: String? = nil, _ message: String) {
        self.name = name
        self.message = message
    }

    package var description: String { name.map { "\($0): \(message)" } ?? message }

    /// A GError, freed.
    static func taking(_ error: UnsafeMutablePointer<GError>?, _ what: String) -> DBusError {
        guard let error else { return DBusError("\(what) failed") }
        defer { g_error_free(error) }
        let remote = g_dbus_error_get_remote_error(error).map { pointer -> String in
            defer { g_free(pointer) }
            return String(cString: pointer)
        }
        if remote != nil { g_dbus_error_strip_remote_error(error) }
        return DBusError(name: remote, "\(what): \(String(cString: error.pointee.message))")
    }
}

/// One method call to an object this process exports: who sent it, what it
/// asks, and the means to answer, now or later, from any thread (a call
/// that waits for the person answers at once with a Prompt instead).
package final class DBusCall: @unchecked Sendable {
    // @unchecked Sendable: `invocation` is answered once (GDBus's
    // g_dbus_method_invocation_return_* are thread-safe); `answered` is atomic.
    package let sender: String
    package let objectPath: String
    package let interface: String
    package let method: String
    /// The parameters: always a tuple.
    package let parameters: DBusValue
    private let invocation: OpaquePointer
    private let answered = Locked(false)

    init(sender: String, objectPath: String, interface: String, method: String, parameters: DBusValue, invocation: OpaquePointer) {
        self.sender = sender
        self.objectPath = objectPath
        self.interface = interface
        self.method = method
        self.parameters = parameters
        self.invocation = invocation
    }

    /// The invocation is ours to answer (each return_* takes it); one never
    /// answered is answered with an error when the call goes.
    deinit {
        if !answered.withLock({ $0 }) {
            g_dbus_method_invocation_return_dbus_error(invocation, "org.freedesktop.DBus.Error.Failed", "the call was not answered")
        }
    }

    private func once() -> Bool {
        answered.withLock { done in
            defer { done = true }
            return !done
        }
    }

    /// Answers with `values` (the out arguments, in order).
    package func reply(_ values: [DBusValue]) {
        guard once() else { return }
        g_dbus_method_invocation_return_value(invocation, DBusValue.tuple(values).gvariant())
    }

    /// Answers with the D-Bus error `name`.
    package func fail(_ name: String, _ message: String) {
        guard once() else { return }
        g_dbus_method_invocation_return_dbus_error(invocation, name, message)
    }

    /// Answers with a result: its values, or its error.
    package func answer(_ result: Result<[DBusValue], DBusError>) {
        switch result {
        case .success(let values): reply(values)
        case .failure(let error): fail(error.name ?? "org.freedesktop.DBus.Error.Failed", error.message)
        }
    }

    /// The parameters as a list, when they have the signature `expected`
    /// (GDBus checks calls against the introspection data already; this is
    /// for the handler's own reading).
    package var arguments: [DBusValue] { parameters.tupleItems ?? [] }
}

/// An interface exported at a path: its methods and properties answered
/// by a handler of the caller's.
package protocol DBusObject: AnyObject, Sendable {
    /// A method call (on the bus thread): answer it, now or later.
    func handle(_ call: DBusCall)
    /// A property's value (on the bus thread), or nil: no such property.
    func property(_ name: String, interface: String, path: String) -> DBusValue?
    /// Sets a property the introspection data calls writable (on the bus
    /// thread; GDBus has checked its type); a refusal's D-Bus error name
    /// and message.
    func setProperty(_ name: String, interface: String, path: String, to value: DBusValue) -> DBusError?
    /// True: Properties' Get, GetAll and Set come to `handle` as calls of
    /// org.freedesktop.DBus.Properties (answerable later, e.g. after a
    /// vault read), and `property`/`setProperty` are not used.
    var answersProperties: Bool { get }
}

extension DBusObject {
    /// Objects answer property reads through `property` unless they say so.
    package var answersProperties: Bool { false }

    /// Objects without writable properties refuse every write.
    package func setProperty(_ name: String, interface: String, path: String, to value: DBusValue) -> DBusError? {
        DBusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", "\(name) is read-only")
    }
}

/// A connection to a message bus (the session bus, or a private one by
/// address) on its own `GLibLoopThread`: names owned, objects exported,
/// signals emitted, methods called.
package final class DBusBus: @unchecked Sendable {
    // @unchecked Sendable: `connection` is set once; GDBus connections are
    // thread-safe; registrations are made and dropped on `thread`.
    package let thread: GLibLoopThread
    let connection: OpaquePointer
    let registrations = Locked<[UInt32: Unmanaged<Registration>]>([:])
    /// Subtree registrations (their state is released by GDBus).
    let subtrees = Locked<Set<UInt32>>([])
    /// Signal subscriptions (each subscriber released when it is dropped).
    let subscriptions = Locked<[UInt32]>([])
    /// Whether `close` (or deinit) has torn the connection down.
    private let closed = Locked(false)

    /// Connects to the bus at `address` (a D-Bus address), or the session
    /// bus (DBUS_SESSION_BUS_ADDRESS) when nil.
    package init(address: String? = nil) async throws {
        // A main context of its own: GDBus delivers a registered object's
        // calls, a name's callbacks and a subscription's signals on the
        // context that was the thread-default one when they were set up,
        // and everything of a bus is set up on this thread. (GLib's
        // default context is libfprint's thread's.)
        let thread = GLibLoopThread(name: "touchstone-dbus", context: .own)
        self.thread = thread
        do {
            connection = try await thread.run { () throws(DBusError) -> ConnectionBox in
                var error: UnsafeMutablePointer<GError>?
                let connection: OpaquePointer?
                if let address {
                    let flags = GDBusConnectionFlags(rawValue: G_DBUS_CONNECTION_FLAGS_AUTHENTICATION_CLIENT.rawValue
                                                     | G_DBUS_CONNECTION_FLAGS_MESSAGE_BUS_CONNECTION.rawValue)
                    connection = g_dbus_connection_new_for_address_sync(address, flags, nil, nil, &error)
                } else {
                    connection = g_bus_get_sync(G_BUS_TYPE_SESSION, nil, &error)
                }
                guard let connection else { throw DBusError.taking(error, "connecting to the session bus") }
                // The process decides when it ends, not the bus.
                g_dbus_connection_set_exit_on_close(connection, 0)
                return ConnectionBox(connection)
            }.connection
        } catch {
            thread.stop()
            throw error
        }
    }

    deinit {
        // On the bus thread, after deinit returns: a process that ends at
        // once should `close()` first (the provider does).
        let teardown = self.teardown()
        thread.submit { teardown() }
        thread.stop()
    }

    /// Ends the connection: signal subscriptions dropped, objects and
    /// subtrees unexported (what they held released), the connection closed.
    /// After it nothing more arrives; deinit does the same if it was not
    /// called.
    package func close() async {
        let teardown = self.teardown()
        await thread.run { teardown() }
    }

    /// The work of `close`, to run on the bus thread, once.
    private func teardown() -> @Sendable () -> Void {
        let box = ConnectionBox(connection)
        let closed = self.closed
        let registrations = self.registrations, subtrees = self.subtrees, subscriptions = self.subscriptions
        return { () -> Void in
            guard !closed.withLock({ (done: inout Bool) -> Bool in defer { done = true }; return done }) else { return }
            for id in subscriptions.withLock({ (ids: inout [UInt32]) -> [UInt32] in defer { ids = [] }; return ids }) {
                g_dbus_connection_signal_unsubscribe(box.connection, id)
            }
            for (id, registration) in registrations.withLock({ (all: inout [UInt32: Unmanaged<Registration>]) -> [UInt32: Unmanaged<Registration>] in
                defer { all = [:] }
                return all
            }) {
                g_dbus_connection_unregister_object(box.connection, id)
                registration.release()
            }
            for id in subtrees.withLock({ (ids: inout Set<UInt32>) -> Set<UInt32> in defer { ids = [] }; return ids }) {
                _ = g_dbus_connection_unregister_subtree(box.connection, id)
            }
            g_dbus_connection_close_sync(box.connection, nil, nil)
            g_object_unref(UnsafeMutableRawPointer(box.connection))
        }
    }

    /// This connection's unique name (":1.42").
    package var uniqueName: String {
        g_dbus_connection_get_unique_name(connection).map { String(cString: $0) } ?? ""
    }

    // MARK: - Names

    /// How a request for a name ended.
    package enum NameOutcome: Sendable, Equatable {
        case owned
        /// Another connection has it and keeps it (not replaceable, or
        /// `replace` not asked).
        case taken
    }

    /// Asks for `name`: with `replace`, taking it from an owner that allows
    /// it. `lost` is called (on the bus thread) if the name is taken away
    /// later.
    package func requestName(_ name: String, replace: Bool,
                             lost: @escaping @Sendable () -> Void = {}) async throws -> NameOutcome {
        // org.freedesktop.DBus.RequestName: flags 1 allow replacement,
        // 2 replace existing, 4 do not queue.
        let flags: UInt32 = 1 | (replace ? 2 : 0) | 4
        let reply = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                   interface: "org.freedesktop.DBus", method: "RequestName",
                                   [.string(name), .uint32(flags)], replyType: "(u)")
        guard case .uint32(let code)? = reply.first else { throw DBusError("RequestName: an answer of another type") }
        // 1 primary owner, 4 already the owner; 2 queued, 3 exists.
        guard code == 1 || code == 4 else { return .taken }
        try await subscribe(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameLost",
                            path: "/org/freedesktop/DBus") { arguments in
            if arguments.first?.string == name { lost() }
        }
        return .owned
    }

    /// The unique name that owns `name`, and that connection's program as
    /// the kernel names it (for a message that names it), or nil when
    /// nobody does.
    package func owner(of name: String) async -> (uniqueName: String, program: PeerProgram?)? {
        guard let reply = try? await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                          interface: "org.freedesktop.DBus", method: "GetNameOwner", [.string(name)],
                                          replyType: "(s)"),
              let unique = reply.first?.string else { return nil }
        let pid = try? await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                  interface: "org.freedesktop.DBus", method: "GetConnectionUnixProcessID",
                                  [.string(unique)], replyType: "(u)")
        guard case .uint32(let number)? = pid?.first else { return (unique, nil) }
        return (unique, PeerProgram.named(pid: pid_t(bitPattern: number), pidfd: nil))
    }

    // MARK: - Objects

    /// Exports `object` at `path` for each interface of `introspection` (a
    /// D-Bus introspection document with one `<node>`). Introspect, Peer
    /// and Properties' Get, GetAll and Set come with GDBus (Set of a
    /// property the document marks writable reaches `setProperty`).
    /// Returns the registrations, for `unexport`.
    @discardableResult
    package func export(_ object: any DBusObject, at path: String, introspection: String) async throws -> [DBusRegistration] {
        let box = ConnectionBox(connection)
        let ids = try await thread.run { () throws(DBusError) -> [DBusRegistration] in
            var error: UnsafeMutablePointer<GError>?
            guard let node = g_dbus_node_info_new_for_xml(introspection, &error) else {
                throw DBusError.taking(error, "the introspection data")
            }
            defer { g_dbus_node_info_unref(node) }
            var ids: [DBusRegistration] = []
            var index = 0
            while let interface = node.pointee.interfaces?[index] {
                index += 1
                let registration = Unmanaged.passRetained(Registration(object))
                var vtable = object.answersProperties ? Self.methodsOnlyVTable : Self.vtable
                let id = g_dbus_connection_register_object(box.connection, path, interface, &vtable,
                                                           registration.toOpaque(), nil, &error)
                guard id != 0 else {
                    registration.release()
                    throw DBusError.taking(error, "exporting \(path)")
                }
                ids.append(DBusRegistration(id: id, isSubtree: false))
                self.registrations.withLock { $0[id] = registration }
            }
            return ids
        }
        return ids
    }

    /// The vtable of every export: calls, property reads and writes to the
    /// registration's object.
    nonisolated(unsafe) static let vtable: GDBusInterfaceVTable = {
        var vtable = methodsOnlyVTable
        vtable.get_property = { _, _, path, interface, name, error, data in
            let registration = Unmanaged<Registration>.fromOpaque(data!).takeUnretainedValue()
            guard let value = registration.object?.property(String(cString: name!), interface: String(cString: interface!),
                                                            path: String(cString: path!)) else {
                g_set_error_literal(error, g_dbus_error_quark(), Int32(G_DBUS_ERROR_UNKNOWN_PROPERTY.rawValue),
                                    "no such property")
                return nil
            }
            return value.gvariant()
        }
        vtable.set_property = { _, _, path, interface, name, value, error, data in
            let registration = Unmanaged<Registration>.fromOpaque(data!).takeUnretainedValue()
            guard let object = registration.object else { return 0 }
            if let refusal = object.setProperty(String(cString: name!), interface: String(cString: interface!),
                                                path: String(cString: path!), to: DBusValue(value!)) {
                g_propagate_error(error, g_dbus_error_new_for_dbus_error(refusal.name ?? "org.freedesktop.DBus.Error.Failed",
                                                                         refusal.message))
                return 0
            }
            return 1
        }
        return vtable
    }()

    /// Calls only: with no property functions GDBus hands Properties' Get,
    /// GetAll and Set to `handle` too (interface
    /// org.freedesktop.DBus.Properties), which may answer them later.
    nonisolated(unsafe) static let methodsOnlyVTable: GDBusInterfaceVTable = {
        var vtable = GDBusInterfaceVTable()
        vtable.method_call = { _, sender, path, interface, method, parameters, invocation, data in
            let registration = Unmanaged<Registration>.fromOpaque(data!).takeUnretainedValue()
            let call = DBusCall(sender: sender.map { String(cString: $0) } ?? "",
                                objectPath: String(cString: path!), interface: String(cString: interface!),
                                method: String(cString: method!), parameters: DBusValue(parameters!),
                                invocation: invocation!)
            registration.object?.handle(call)
        }
        return vtable
    }()

    /// Takes down what `export` or `exportSubtree` put up. GDBus numbers
    /// objects and subtrees each from 1: a registration says which it is.
    package func unexport(_ registrations: [DBusRegistration]) async {
        let box = ConnectionBox(connection)
        await thread.run {
            for registration in registrations {
                if registration.isSubtree {
                    guard self.subtrees.withLock({ $0.remove(registration.id) }) != nil else { continue }
                    _ = g_dbus_connection_unregister_subtree(box.connection, registration.id)
                    continue
                }
                guard let held = self.registrations.withLock({ $0.removeValue(forKey: registration.id) }) else { continue }
                _ = g_dbus_connection_unregister_object(box.connection, registration.id)
                held.release()
            }
        }
    }

    // MARK: - Signals and calls

    /// Emits a signal (to every listener).
    package func emit(path: String, interface: String, name: String, _ arguments: [DBusValue]) {
        var error: UnsafeMutablePointer<GError>?
        if g_dbus_connection_emit_signal(connection, nil, path, interface, name, DBusValue.tuple(arguments).gvariant(), &error) == 0 {
            if let error { g_error_free(error) }
        }
    }

    /// Calls a method and returns its out arguments; `replyType` (e.g.
    /// "(s)") checks them.
    package func call(destination: String, path: String, interface: String, method: String,
                      _ arguments: [DBusValue], replyType: String? = nil, timeoutMilliseconds: Int32 = 25_000) async throws -> [DBusValue] {
        let box = ConnectionBox(connection)
        let parameters = DBusValue.tuple(arguments)
        return try await thread.run { () throws(DBusError) -> [DBusValue] in
            var error: UnsafeMutablePointer<GError>?
            let type: OpaquePointer? = replyType.flatMap { g_variant_type_new($0) }
            defer { if let type { g_variant_type_free(type) } }
            guard let reply = g_dbus_connection_call_sync(box.connection, destination, path, interface, method,
                                                          parameters.gvariant(), type, G_DBUS_CALL_FLAGS_NONE,
                                                          timeoutMilliseconds, nil, &error) else {
                throw DBusError.taking(error, "\(interface).\(method)")
            }
            defer { g_variant_unref(reply) }
            return DBusValue(reply).tupleItems ?? []
        }
    }

    /// Calls `handler` (on the bus thread) with each matching signal's
    /// arguments, as long as this connection lives.
    package func subscribe(sender: String?, interface: String?, member: String?, path: String?,
                           _ handler: @escaping @Sendable ([DBusValue]) -> Void) async throws {
        let box = ConnectionBox(connection)
        let subscriber = Unmanaged.passRetained(Subscriber(handler))
        let subscriptions = self.subscriptions
        await thread.run {
            let id = g_dbus_connection_signal_subscribe(box.connection, sender, interface, member, path, nil, G_DBUS_SIGNAL_FLAGS_NONE,
                                               { _, _, _, _, _, parameters, data in
                Unmanaged<Subscriber>.fromOpaque(data!).takeUnretainedValue().handler(DBusValue(parameters!).tupleItems ?? [])
            }, subscriber.toOpaque(), { data in
                Unmanaged<Subscriber>.fromOpaque(data!).release()
            })
            subscriptions.withLock { $0.append(id) }
        }
    }

    // MARK: - Boxes

    /// An exported object, held until it is unexported or the bus goes.
    final class Registration: Sendable {
        let object: (any DBusObject)?
        init(_ object: any DBusObject) { self.object = object }
    }

    private final class Subscriber: Sendable {
        let handler: @Sendable ([DBusValue]) -> Void
        init(_ handler: @escaping @Sendable ([DBusValue]) -> Void) { self.handler = handler }
    }

    struct ConnectionBox: @unchecked Sendable {
        // @unchecked Sendable: a GDBusConnection, which is thread-safe.
        let connection: OpaquePointer
        init(_ connection: OpaquePointer) { self.connection = connection }
    }
}

/// One object or subtree put up on the bus (`DBusBus.export`,
/// `exportSubtree`), for `unexport`: GDBus numbers the two kinds apart, so
/// an id alone does not say which one it is.
package struct DBusRegistration: Hashable, Sendable {
    package let id: UInt32
    package let isSubtree: Bool
}
