#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The process's environment, changed and handed to a child under one lock.
///
/// glibc's setenv of a name the environment does not hold yet grows the
/// array `environ` points to, and may free the old one, while another
/// thread reads it: a child spawned with `environ` at that moment got
/// EFAULT from execve ("cannot run /usr/bin/dbus-daemon: Bad address", seen
/// in a CI run). Touchstone's changes (libfprint's virtual-reader variables
/// around an enumeration, TSS2_LOG) go through `set`, and `ChildSpawn`
/// spawns with `environ` inside `reading`; and a name once set is never
/// removed (an empty value stands for none, as libfprint reads it), so
/// after its first `set` a change replaces one pointer and frees nothing.
package enum ProcessEnvironment {
    private static let lock = Mutex(())

    /// Sets `name` to `value` (`""`: none, for the programs that read it
    /// so), unless it already is; with `replacing` false, only when it is
    /// not set at all.
    package static func set(_ name: String, _ value: String, replacing: Bool = true) {
        lock.withLock { _ in
            let current = getenv(name).map { String(cString: $0) }
            guard current != value, replacing || current == nil else { return }
            setenv(name, value, 1)
        }
    }

    /// The value of `name` (nil: not set).
    package static func value(_ name: String) -> String? {
        lock.withLock { _ in getenv(name).map { String(cString: $0) } }
    }

    /// Runs `body`, which reads `environ` (a spawn that passes it on), with
    /// no change to the environment meanwhile.
    package static func reading<R>(_ body: () -> R) -> R {
        lock.withLock { _ in body() }
    }
}
