import TouchstoneSimulator
import Foundation
import TouchstoneTPM

/// The machine a run was made on, printed with the figures so that they can
/// be compared with a later run.
struct MachineInfo: Codable {
    var cpuModel: String
    var logicalCPUs: Int
    var memoryGiB: Double
    var operatingSystem: String
    var swtpmVersion: String
    var tpm2ToolsVersion: String
    /// /proc/loadavg's 1-minute figure just before the run started: other
    /// work on the machine moves the latencies.
    var loadAverage: Double

    /// Reads /proc/cpuinfo, /etc/os-release and `swtpm --version`.
    static func current(tpm2ToolsVersion: String?, loadAverage: Double) -> MachineInfo {
        let cpuinfo = readWhole("/proc/cpuinfo")
        let model = cpuinfo.split(separator: "\n").first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { $0.trimmingCharacters(in: .whitespaces) } ?? "unknown"
        let osRelease = readWhole("/etc/os-release")
        let os = osRelease.split(separator: "\n").first { $0.hasPrefix("PRETTY_NAME=") }
            .map { $0.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\"")) } ?? "unknown"
        return MachineInfo(cpuModel: model,
                           logicalCPUs: ProcessInfo.processInfo.activeProcessorCount,
                           memoryGiB: (Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824 * 10).rounded() / 10,
                           operatingSystem: os,
                           swtpmVersion: swtpmVersion() ?? "unknown",
                           tpm2ToolsVersion: tpm2ToolsVersion ?? "unknown",
                           loadAverage: loadAverage)
    }

    /// The 1-minute load average (-1 if /proc/loadavg cannot be read).
    static func loadAverage() -> Double {
        Double(readWhole("/proc/loadavg").split(separator: " ").first ?? "") ?? -1
    }

    /// Reads a file to its end (/proc files report size 0, so the
    /// size-based readers return nothing).
    private static func readWhole(_ path: String) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
        defer { try? handle.close() }
        return String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
    }

    /// "0.7.1" from "TPM emulator version 0.7.1, Copyright ...".
    private static func swtpmVersion() -> String? {
        guard let path = Swtpm.which("swtpm"),
              let outcome = try? ChildProcess.run(path, ["--version"], environment: ProcessInfo.processInfo.environment),
              outcome.status == 0 else { return nil }
        let text = String(decoding: outcome.stdout, as: UTF8.self)
        guard let range = text.range(of: "version ") else { return nil }
        return String(text[range.upperBound...].prefix { $0 != "," && $0 != "\n" })
    }
}
