#if canImport(Glibc)
import Glibc
#endif
import TouchstoneModel
import TouchstonePOSIX

/// Transitional: the spawning itself is TouchstonePOSIX's `ChildSpawn`.
/// This forwarder keeps the old throws(SimulatorError) entry point for code
/// outside the simulator that still imports only this module for it (the
/// public library's `SimulatorDaemon`); remove it once that code imports
/// TouchstonePOSIX. Where both modules are imported a bare `ChildSpawn` is
/// ambiguous: write `TouchstonePOSIX.ChildSpawn` there.
package enum ChildSpawn {
    package static func start(_ executable: String, _ arguments: [String], actions: inout posix_spawn_file_actions_t,
                              environment: [String: String]? = nil, newSession: Bool = false) throws(SimulatorError) -> pid_t {
        do {
            return try TouchstonePOSIX.ChildSpawn.start(executable, arguments, actions: &actions,
                                                        environment: environment, newSession: newSession)
        } catch {
            throw .didNotStart(error.description)
        }
    }

    package static func waitForExit(_ pid: pid_t) -> Int32 { TouchstonePOSIX.ChildSpawn.waitForExit(pid) }
}
