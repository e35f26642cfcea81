import Foundation
import TouchstoneSecure

/// Desktop notifications (org.freedesktop.Notifications) on a bus: what
/// the Secret Service provider and the ssh-agent show while they wait for
/// a touch. A bus without a notification service is told to `log` once,
/// and the caller goes on without one.
package final class DesktopNotifications: Sendable {
    private let bus: DBusBus
    private let application: String
    private let log: @Sendable (String) -> Void
    private let warned = Locked(false)

    package init(bus: DBusBus, application: String = "Touchstone", log: @escaping @Sendable (String) -> Void) {
        self.bus = bus
        self.application = application
        self.log = log
    }

    /// Shows a notification; its id (for `close`), or nil when none could be shown.
    @discardableResult
    package func show(summary: String, body: String, icon: String = "fingerprint-gui") async -> UInt32? {
        do {
            // Notify(app_name, replaces_id, app_icon, summary, body, actions, hints, expire_timeout: -1, the server's).
            let reply = try await bus.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                           interface: "org.freedesktop.Notifications", method: "Notify",
                                           [.string(application), .uint32(0), .string(icon), .string(summary), .string(body),
                                            .array(element: "s", []), .dictionary(key: "s", value: "v", []), .int32(-1)],
                                           replyType: "(u)", timeoutMilliseconds: 5_000)
            if case .uint32(let id)? = reply.first { return id }
        } catch {
            if !warned.withLock({ (done: inout Bool) -> Bool in defer { done = true }; return done }) {
                log("no desktop notification (\(error)); going on without one")
            }
        }
        return nil
    }

    /// Takes a notification down (CloseNotification).
    package func close(_ id: UInt32?) async {
        guard let id else { return }
        _ = try? await bus.call(destination: "org.freedesktop.Notifications", path: "/org/freedesktop/Notifications",
                                interface: "org.freedesktop.Notifications", method: "CloseNotification", [.uint32(id)],
                                timeoutMilliseconds: 5_000)
    }
}
