import Foundation
import Glibc
import TouchstoneDBus
import TouchstoneModel
import TouchstonePOSIX
import TouchstoneSimulator

/// A private dbus-daemon for one test: a configuration of its own (a
/// session bus that lets any connection own any name), listening on a
/// socket in a fresh folder, stopped by PID and removed at the end.
package final class DBusRig: @unchecked Sendable {
    // @unchecked Sendable: `daemon` changes only in init and close, which
    // the test that owns the rig calls from its own flow.
    package let folder: String
    package let address: String
    private var daemon: pid_t?


    package init() throws {
        guard let dbusDaemon = ["/usr/bin/dbus-daemon", "/bin/dbus-daemon"].first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw RigFailure("dbus-daemon not found: apt-get install dbus (scripts/install-deps installs it)")
        }
        var template = Array("/tmp/ts-dbus-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw RigFailure("mkdtemp failed") }
        folder = String(cString: made)
        let socket = folder + "/bus"
        address = "unix:path=" + socket
        let config = folder + "/bus.conf"
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """.write(toFile: config, atomically: true, encoding: .utf8)
        // ChildSpawn: no signal blocked in the child (a test runs on a
        // Dispatch worker, which blocks them all), so SIGTERM stops it.
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, folder + "/dbus-daemon.log", O_WRONLY | O_CREAT, 0o600)
        daemon = try ChildSpawn.start(dbusDaemon, ["--config-file=" + config, "--nofork", "--nosyslog"], actions: &actions)
        // Ready when its socket accepts a connection (a minute at most: a
        // bound for a daemon that never listens, not for a slow machine).
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if unixSocketAccepts(socket) { return }
            var status: Int32 = 0
            if let daemon, waitpid(daemon, &status, WNOHANG) == daemon {
                self.daemon = nil
                break
            }
            usleep(10_000)
        }
        close()
        throw RigFailure("dbus-daemon did not start listening on \(socket)")
    }

    /// Runs `gdbus` with `arguments` against this bus; its exit status and
    /// output (stdout and stderr).
    package func gdbus(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let output = folder + "/gdbus-\(UInt32.random(in: 0...UInt32.max)).txt"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let status = try Swtpm.run("/usr/bin/gdbus", [arguments[0], "--address", address] + arguments.dropFirst(), output: output)
        return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    package func close() {
        if let daemon {
            kill(daemon, SIGTERM)
            _ = ChildSpawn.waitForExit(daemon)
            self.daemon = nil
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    deinit { close() }
}

/// Whether `condition` came true within a minute (looked at every 10 ms):
/// long enough that a slow machine never fails a test that waits with it.
package func eventually(_ condition: () -> Bool) async throws -> Bool {
    for _ in 0..<6000 {
        if condition() { return true }
        try await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// `eventually` blocking the calling thread (a test's own: `offPool`):
/// a minute at most, every 10 ms.
package func blockingEventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<6000 {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}

/// A private bus with one object exported on a connection of its own, for
/// tests that call it from other connections.
package struct ServedObject<Object: DBusObject>: Sendable {
    package let rig: DBusRig
    package let bus: DBusBus
    package let object: Object

    /// A new bus; `make` builds the object on the serving connection, which
    /// then exports it at `path`.
    package init(at path: String, introspection: String, _ make: (DBusBus) async throws -> Object) async throws {
        rig = try DBusRig()
        do {
            bus = try await DBusBus(address: rig.address)
            object = try await make(bus)
            try await bus.export(object, at: path, introspection: introspection)
        } catch {
            rig.close()
            throw error
        }
    }

    /// Another connection to the same bus.
    package func client() async throws -> DBusBus { try await DBusBus(address: rig.address) }
}
