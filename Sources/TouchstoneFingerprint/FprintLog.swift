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

    /// The bozorth3 scores libfprint logs at debug level ("score S/T", one
    /// per enrolled image compared, until one reaches the threshold), as
    /// they come: for the matching benchmark. Other messages as
    /// `quietLibfprint` treats them. Needs G_MESSAGES_DEBUG to include
    /// libfprint's domains before the first message.
    package static func recordScores(_ record: @escaping @Sendable (Int) -> Void) {
        guard claim() else { return }
        scoreRecorder.withLock { $0 = record }
        g_log_set_writer_func({ level, fields, count, data in
            guard let fields, FprintLog.domain(fields, Int(count))?.hasPrefix("libfprint") == true else {
                return g_log_writer_default(level, fields, count, data)
            }
            if let message = FprintLog.field("MESSAGE", fields, Int(count)), message.hasPrefix("score "),
               let score = Int(message.dropFirst(6).prefix { $0 != "/" }) {
                FprintLog.scoreRecorder.withLock { $0 }?(score)
            }
            return G_LOG_WRITER_HANDLED
        }, nil, nil)
    }

    private static let scoreRecorder = Mutex<(@Sendable (Int) -> Void)?>(nil)

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
        field("GLIB_DOMAIN", fields, count)
    }

    /// A field of a structured message, as text (GLib's are NUL-terminated
    /// unless a length is given).
    static func field(_ key: String, _ fields: UnsafePointer<GLogField>, _ count: Int) -> String? {
        for index in 0..<count where String(cString: fields[index].key) == key {
            guard let value = fields[index].value else { return nil }
            let length = fields[index].length
            if length < 0 { return String(cString: value.assumingMemoryBound(to: CChar.self)) }
            return String(decoding: UnsafeRawBufferPointer(start: value, count: length), as: UTF8.self)
        }
        return nil
    }
}
