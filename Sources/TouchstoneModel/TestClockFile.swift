import FoundationEssentials

/// The test clock of debug builds (the daemon's throttle and grants, the
/// Secret Service provider's unlocks): the file TOUCHSTONE_TEST_CLOCK_FILE
/// names holds `@T`, a time that stands still (seconds since 1970) until
/// the test writes another, or a number of seconds added to the wall
/// clock. A standing clock makes a test that checks a window independent
/// of how long its steps take on a loaded machine. Release builds never
/// read it (the callers are compiled only with TOUCHSTONE_TEST_SUPPORT).
package enum TestClockFile {
    /// The time `file` says now, in seconds since 1970 (the wall clock
    /// when it is missing or unreadable).
    package static func now(_ file: String) -> Double {
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: file))) ?? Data()
        let text = String(decoding: bytes, as: UTF8.self).filter { !$0.isWhitespace }
        if text.hasPrefix("@"), let standing = Double(text.dropFirst()) { return standing }
        return Date().timeIntervalSince1970 + (Double(text) ?? 0)
    }

    /// What to write to move the clock in `file` on by `seconds`: from the
    /// time it stands at, or from the wall clock now when it does not
    /// stand yet; the clock then stands there.
    package static func advanced(_ file: String, by seconds: Double) -> String {
        "@\(now(file) + seconds)"
    }
}
