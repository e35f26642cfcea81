internal import CFPrint
import Glibc
import Synchronization

/// Where GLib's log goes in a process that uses libfprint. libfprint warns
/// on stderr about what is no fault of the person's (an image in which it
/// finds no minutiae, which it then asks again for); those lines would
/// land in the middle of a command's output. GLib takes one log writer per
/// process: the first of these calls sets it, later ones do nothing.
package enum FprintLog {
    private static let installed = Mutex(false)

    /// libfprint's messages below critical go nowhere (unless
    /// TOUCHSTONE_DEBUG_LIBFPRINT is set); everything else as GLib writes it.
    package static func quietLibfprint() {
        guard claim() else { return }
        if getenv("TOUCHSTONE_DEBUG_LIBFPRINT") != nil { return }
        g_log_set_writer_func({ level, fields, count, data in
            let serious = level.rawValue & (G_LOG_LEVEL_ERROR.rawValue | G_LOG_LEVEL_CRITICAL.rawValue) != 0
            if !serious, let fields, FprintLog.domain(fields, Int(count))?.hasPrefix("libfprint") == true {
                return G_LOG_WRITER_HANDLED
            }
            return g_log_writer_default(level, fields, count, data)
        }, nil, nil)
    }

    /// Nothing of GLib's log is written (the daemon's print checker, whose
    /// confinement leaves no room for what GLib's writer does).
    package static func silence() {
        guard claim() else { return }
        g_log_set_writer_func({ _, _, _, _ in G_LOG_WRITER_HANDLED }, nil, nil)
    }

    private static func claim() -> Bool {
        installed.withLock { done in
            defer { done = true }
            return !done
        }
    }

    /// The message's GLIB_DOMAIN field.
    static func domain(_ fields: UnsafePointer<GLogField>, _ count: Int) -> String? {
        for index in 0..<count where String(cString: fields[index].key) == "GLIB_DOMAIN" {
            guard let value = fields[index].value else { return nil }
            return String(cString: value.assumingMemoryBound(to: CChar.self))
        }
        return nil
    }
}
