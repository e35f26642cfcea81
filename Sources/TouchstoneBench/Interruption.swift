import Foundation

/// Set by the SIGINT/SIGTERM handler; read between unseals and tool runs.
/// (A signal handler may only set a flag; the benchmark then stops the way
/// it stops on any error: swtpm shut down, its folder deleted.)
nonisolated(unsafe) private var interruptionRequested: Int32 = 0

enum Interruption {
    /// Ctrl-C (or SIGTERM) asks the benchmark to stop at the next unseal.
    static func install() {
        for sig in [SIGINT, SIGTERM] {
            signal(sig) { _ in interruptionRequested = 1 }
        }
    }

    /// Throws `BenchError.interrupted` once a stop was asked for.
    static func check() throws {
        if interruptionRequested != 0 { throw BenchError.interrupted }
    }
}
