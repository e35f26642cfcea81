import Foundation
import TouchstoneSimulator
import Testing
import TouchstoneTPM

/// How the touchstone executable is linked.
@Suite("touchstone: the executables")
struct BuildTests {
    static func sibling(_ name: String) -> String {
        URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// `command arguments`' output (stdout and stderr).
    static func output(_ command: String, _ arguments: [String]) throws -> (status: Int32, text: String) {
        let listing = FileManager.default.temporaryDirectory.appendingPathComponent("ts-build-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).txt").path
        defer { try? FileManager.default.removeItem(atPath: listing) }
        let status = try Swtpm.run(command, arguments, output: listing)
        return (status, (try? String(contentsOfFile: listing, encoding: .utf8)) ?? "")
    }

    @Test("the binaries that use the TPM export OSSL_LIB_CTX_new and OSSL_LIB_CTX_free, so libtss2-esys uses the shared crypto context (docs/tpm.md)",
          arguments: ["touchstone-cli", "touchstoned"])
    func exportsTheCryptoContextFunctions(_ binary: String) throws {
        let (status, text) = try Self.output("/usr/bin/nm", ["-D", "--defined-only", Self.sibling(binary)])
        #expect(status == 0)
        let symbols = text.split(separator: "\n").map { $0.split(separator: " ") }
        for name in ["OSSL_LIB_CTX_new", "OSSL_LIB_CTX_free"] {
            #expect(symbols.contains { $0.count == 3 && $0[1] == "T" && $0[2] == name }, "\(binary): \(name) not exported")
        }
    }

    @Test("touchstone (the dispatcher) and touchstone-get load neither libfprint nor tpm2-tss nor OpenSSL, where touchstone-cli loads them all")
    func clientLoadsNoBackend() throws {
        let backends = ["libfprint-2", "libtss2-esys", "libcrypto", "libglib-2.0", "libsqlite3"]
        for binary in ["touchstone", "touchstone-get"] {
            let (status, text) = try Self.output("/usr/bin/ldd", [Self.sibling(binary)])
            #expect(status == 0, "\(binary): \(text)")
            for library in backends { #expect(!text.contains(library), "\(binary) loads \(library)") }
        }
        let (status, text) = try Self.output("/usr/bin/ldd", [Self.sibling("touchstone-cli")])
        #expect(status == 0)
        for library in backends { #expect(text.contains(library), "touchstone-cli does not load \(library): the check would see nothing") }
    }
}
