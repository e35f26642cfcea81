import Foundation

/// CPU time, to show where an unseal's time goes: in this process (ESYS,
/// its crypto, the module) or in the simulator.
enum CPUTime {
    /// This process's CPU time (user + system) so far, in nanoseconds.
    /// Spawned tools are children and are not included.
    static func ofThisProcess() -> UInt64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let micros = (Int64(usage.ru_utime.tv_sec) + Int64(usage.ru_stime.tv_sec)) * 1_000_000
            + Int64(usage.ru_utime.tv_usec) + Int64(usage.ru_stime.tv_usec)
        return UInt64(micros) * 1000
    }

    /// Time another process's threads have run so far, in nanoseconds: the
    /// first field of /proc/PID/task/TID/schedstat, summed (nanosecond
    /// resolution, unlike /proc/PID/stat's clock ticks). Nil if unreadable.
    static func ofProcess(_ pid: Int32) -> UInt64? {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return nil }
        var total: UInt64 = 0
        for task in tasks {
            guard let handle = FileHandle(forReadingAtPath: "/proc/\(pid)/task/\(task)/schedstat") else { return nil }
            defer { try? handle.close() }
            let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
            guard let first = text.split(separator: " ").first, let ns = UInt64(first) else { return nil }
            total += ns
        }
        return total
    }
}
