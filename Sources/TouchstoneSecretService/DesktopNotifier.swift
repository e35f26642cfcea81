import Foundation
import TouchstoneDBus

/// Desktop notifications (org.freedesktop.Notifications) on the session
/// bus: the ssh-agent's and the security-key provider's "touch the
/// reader" beside their log line. Without a
/// session bus, or without a notification server, it logs once and says
/// nothing more.
package final class DesktopNotifier: Sendable {
    let notifications: DesktopNotifications

    private init(bus: DBusBus, log: @escaping @Sendable (String) -> Void) { notifications = DesktopNotifications(bus: bus, log: log) }

    /// The session bus of DBUS_SESSION_BUS_ADDRESS, or of
    /// $XDG_RUNTIME_DIR/bus; nil (logged) when there is none. Never
    /// autolaunches a bus.
    package static func connect(log: @escaping @Sendable (String) -> Void) async -> DesktopNotifier? {
        let environment = ProcessInfo.processInfo.environment
        var address = environment["DBUS_SESSION_BUS_ADDRESS"]
        if address == nil, let runtime = environment["XDG_RUNTIME_DIR"] {
            var info = stat()
            if stat(runtime + "/bus", &info) == 0, info.st_mode & S_IFMT == S_IFSOCK { address = "unix:path=\(runtime)/bus" }
        }
        guard let address else {
            log("no session bus: no desktop notifications")
            return nil
        }
        do {
            return DesktopNotifier(bus: try await DBusBus(address: address), log: log)
        } catch {
            log("no desktop notifications: \(error)")
            return nil
        }
    }

    /// Shows the notification (said to the log once when none can be).
    package func notify(summary: String, body: String) async {
        await notifications.show(summary: summary, body: body, icon: "dialog-password")
    }
}
