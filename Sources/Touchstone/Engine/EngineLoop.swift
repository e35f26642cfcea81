import TouchstoneGLib

/// Another loop's thread that can run the in-process engine's work
/// (`DedicatedThread.hosted(on:)`): jobs submitted from any thread run on
/// it, one at a time, in submission order, between the loop's own events.
package protocol EngineLoop: Sendable {
    /// Runs `job` on the loop's thread, soon.
    func submit(_ job: @escaping @Sendable () -> Void)
    /// Whether the caller runs on the loop's thread.
    var isCurrent: Bool { get }
}

/// A GLib main loop's thread (a D-Bus connection's).
extension GLibLoopThread: EngineLoop {}
