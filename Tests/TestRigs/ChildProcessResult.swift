import Foundation

/// A finished child process: exit status and combined output.
package struct ChildProcessResult: Sendable {
    package let status: Int32
    package let output: String

    /// Runs `path` with `arguments` to its end, stdout and stderr together.
    package static func run(_ path: String, _ arguments: [String]) throws -> ChildProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return ChildProcessResult(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
    }
}
