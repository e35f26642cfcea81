import Foundation

/// Peak resident set size per phase. Linux keeps a high-water mark
/// (VmHWM in /proc/self/status); writing "5" to /proc/self/clear_refs
/// resets it to the current RSS, so each phase gets its own peak. Where the
/// reset is refused, the figure is the process's peak so far
/// (getrusage's ru_maxrss), and `isPerPhase` says so.
enum PeakMemory {
    /// Starts a phase: resets the high-water mark. False if it could not.
    @discardableResult
    static func resetPeak() -> Bool {
        guard let handle = FileHandle(forWritingAtPath: "/proc/self/clear_refs") else { return false }
        defer { try? handle.close() }
        do { try handle.write(contentsOf: Data("5".utf8)) } catch { return false }
        return true
    }

    /// The peak RSS since the last reset (or since the start), in MiB.
    static func peakMiB() -> Double {
        if let kib = statusField("VmHWM:") { return Double(kib) / 1024 }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024  // KiB on Linux
    }

    /// The resident set now, in MiB (VmRSS; nil if unreadable).
    static func currentMiB() -> Double? {
        statusField("VmRSS:").map { Double($0) / 1024 }
    }

    /// A "Name:   123 kB" field of /proc/self/status, in KiB.
    private static func statusField(_ name: String) -> Int? {
        guard let handle = FileHandle(forReadingAtPath: "/proc/self/status") else { return nil }
        defer { try? handle.close() }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name) }) else { return nil }
        return Int(line.dropFirst(name.count).trimmingCharacters(in: .whitespaces).split(separator: " ").first ?? "")
    }
}
