import Foundation
import TouchstoneDBus

/// Desktop notifications (org.freedesktop.Notifications) on the session
/// bus: the agent's "touch the reader" beside its log line. Without a
/// session bus, or without a notification server, it logs once and says
/// nothing more.
final class DesktopNotifier: Sendable {
    let notifications: DesktopNotifications

    private init(bus: DBusBus) { notifications = DesktopNotifications(bus: bus, log: { AgentSigner.log($0) }) }

    /// The session bus of DBUS_SESSION_BUS_ADDRESS, or of
    /// $XDG_RUNTIME_DIR/bus; nil (logged) when there is none. Never
    /// autolaunches a bus.
    static func connect() async -> DesktopNotifier? {
        let environment = ProcessInfo.processInfo.environment
        var address = environment["DBUS_SESSION_BUS_ADDRESS"]
        if address == nil, let runtime = environment["XDG_RUNTIME_DIR"] {
            var info = stat()
            if stat(runtime + "/bus", &info) == 0, info.st_mode & S_IFMT == S_IFSOCK { address = "unix:path=\(runtime)/bus" }
        }
        guard let address else {
            AgentSigner.log("no session bus: no desktop notifications")
            return nil
        }
        do {
            return DesktopNotifier(bus: try await DBusBus(address: address))
        } catch {
            AgentSigner.log("no desktop notifications: \(error)")
            return nil
        }
    }

    /// Shows the notification (said to the log once when none can be).
    func notify(summary: String, body: String) async {
        await notifications.show(summary: summary, body: body, icon: "dialog-password")
    }
}
