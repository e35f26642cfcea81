import Foundation
import Testing
import Touchstone
import TouchstoneClient

/// docs/daemon.md's table of operations is the registry's: made from the
/// request types by `table()`, and checked here against the document.
@Suite("The daemon's protocol as documented")
struct DaemonProtocolDocTests {
    /// The table, as docs/daemon.md must hold it: one row per operation,
    /// in the registry's order.
    static func table() -> String {
        var lines = ["| operation | request secrets | response | failure |", "|---|---|---|---|"]
        for operation in EngineOperations.all {
            lines.append(row(operation))
        }
        return lines.joined(separator: "\n")
    }

    private static func row<R: EngineOperation>(_ operation: R.Type) -> String {
        let secrets = R.secretSlots.isEmpty ? "none" : R.secretSlots.map { "`\($0)`" }.joined(separator: ", ")
        return "| `\(R.name)` | \(secrets) | `\(R.Response.self)` | `\(R.Failure.self)` |"
    }

    @Test("docs/daemon.md lists every operation with its secret slots, response and failure, as the types declare them")
    func documentedTable() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/daemon.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let expected = Self.table()
        #expect(text.contains(expected), "docs/daemon.md's table of operations should read:\n\(expected)")
    }

    @Test("operation names are unique, and each names the type the registry serves under it")
    func uniqueNames() {
        let names = EngineOperations.all.map { $0.name }
        #expect(Set(names).count == names.count, "\(names)")
        for name in names {
            #expect(EngineOperations.byName[name]?.name == name)
        }
    }
}
