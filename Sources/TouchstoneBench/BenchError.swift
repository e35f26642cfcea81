import Foundation

/// Why the benchmark could not produce figures. Each case says what to do.
enum BenchError: Error, CustomStringConvertible {
    /// Bad command line (nil: help was asked for).
    case usage(String?)
    /// A program the comparison needs is not installed.
    case missingTool(name: String, package: String)
    /// The private swtpm's folder could not be made.
    case setup(String)
    /// An unseal returned bytes other than the sealed key: the measured path
    /// is broken, and its timings would be worthless.
    case wrongKey(String)
    /// A vault or plain SQLite operation gave back something other than
    /// what was stored: no figures for a failing path.
    case wrongResult(String)
    /// Ctrl-C or SIGTERM.
    case interrupted
    /// A tpm2-tools step failed.
    case toolFailed(step: String, status: Int32, stderr: String)

    var description: String {
        switch self {
        case .usage(let why): return (why.map { "touchstone-bench: \($0)\n" } ?? "") + BenchCommand.usage
        case .missingTool(let name, let package):
            return "\(name) is not installed: install the Debian package \(package) (apt-get install \(package))"
        case .setup(let why): return "cannot set up the benchmark: \(why)"
        case .wrongKey(let what): return "\(what) returned bytes that are not the sealed key; no figures for a failing path"
        case .wrongResult(let what): return "\(what) did not give back what was stored; no figures for a failing path"
        case .interrupted: return "interrupted; the private swtpm was stopped and its folder deleted"
        case .toolFailed(let step, let status, let stderr):
            let detail = stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            return "tpm2-tools step failed (exit \(status)): \(step)" + (detail.isEmpty ? "" : "\n\(detail)")
        }
    }
}
