import Foundation
import TouchstoneSimulator
import Testing
import TouchstoneTPM

/// How the touchstone executable is linked.
@Suite("touchstone: the executable")
struct BuildTests {
    @Test("it exports OSSL_LIB_CTX_new and OSSL_LIB_CTX_free, so libtss2-esys uses the shared crypto context (docs/tpm.md)")
    func exportsTheCryptoContextFunctions() throws {
        let listing = FileManager.default.temporaryDirectory.appendingPathComponent("ts-nm-\(getpid()).txt").path
        defer { try? FileManager.default.removeItem(atPath: listing) }
        let status = try Swtpm.run("/usr/bin/nm", ["-D", "--defined-only", CLIProcess.binary], output: listing)
        #expect(status == 0)
        let symbols = try String(contentsOfFile: listing, encoding: .utf8).split(separator: "\n").map { $0.split(separator: " ") }
        for name in ["OSSL_LIB_CTX_new", "OSSL_LIB_CTX_free"] {
            #expect(symbols.contains { $0.count == 3 && $0[1] == "T" && $0[2] == name }, "\(name) not exported")
        }
    }
}
