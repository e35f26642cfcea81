import Foundation
import TouchstoneSimulator
import Testing
import TestRigs
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
          arguments: ["touchstone-cli", "touchstoned", "git-credential-touchstone"])
    func exportsTheCryptoContextFunctions(_ binary: String) async throws {
        try await blockingTest {
            let (status, text) = try Self.output("/usr/bin/nm", ["-D", "--defined-only", Self.sibling(binary)])
            #expect(status == 0)
            let symbols = text.split(separator: "\n").map { $0.split(separator: " ") }
            for name in ["OSSL_LIB_CTX_new", "OSSL_LIB_CTX_free"] {
                #expect(symbols.contains { $0.count == 3 && $0[1] == "T" && $0[2] == name }, "\(binary): \(name) not exported")
            }
        }
    }

    @Test("touchstone (the dispatcher) and touchstone-get are static executables with neither libfprint, GLib, tpm2-tss, OpenSSL nor SQLite in them, where touchstone-cli loads them all (in the sanitizer builds, dynamic ones that load none of them)")
    func clientLoadsNoBackend() async throws {
        try await blockingTest {
            let backendLibraries = ["libfprint-2", "libtss2-esys", "libcrypto", "libglib-2.0", "libsqlite3"]
            let sanitized = ProcessInfo.processInfo.environment["TOUCHSTONE_SANITIZE"] != nil
            if sanitized {
                // scripts/sanitize: the sanitizers' runtimes need dynamic executables.
                for binary in ["touchstone", "touchstone-get"] {
                    let (status, text) = try Self.output("/usr/bin/ldd", [Self.sibling(binary)])
                    #expect(status == 0, "\(binary): \(text)")
                    for library in backendLibraries { #expect(!text.contains(library), "\(binary) loads \(library)") }
                }
            } else {
                // Static: no program interpreter, so nothing is loaded at run time.
                for binary in ["touchstone", "touchstone-get"] {
                    let (status, text) = try Self.output("/usr/bin/readelf", ["--program-headers", "--wide", Self.sibling(binary)])
                    #expect(status == 0, "\(binary): \(text)")
                    #expect(text.contains("LOAD") && !text.contains("INTERP"), "\(binary) is not a static executable: \(text)")
                }
            }
            // Nothing of a backend linked in: a function of each, by name in the
            // symbol table (the dynamic one of a dynamic executable), beside one
            // that touchstone-get does link (libsodium's wiping: defined
            // in a static executable, named as undefined in a dynamic one), which
            // shows the table is there to be searched.
            let backends = ["fp_context_new", "Esys_Initialize", "EVP_CIPHER_CTX_new", "g_main_context_new", "sqlite3_prepare_v2"]
            for binary in ["touchstone", "touchstone-get"] {
                let (status, text) = try Self.output("/usr/bin/nm", (sanitized ? ["-D"] : []) + [Self.sibling(binary)])
                #expect(status == 0 || binary == "touchstone", "\(binary): nm failed")
                let symbols = Set(text.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) })
                let linked = backends.filter { symbols.contains($0) }
                #expect(linked.isEmpty, "\(binary) has \(linked) in it")
                if binary == "touchstone-get" {
                    let control = symbols.contains("sodium_memzero")
                    #expect(control, "touchstone-get: its symbol table names no sodium_memzero (\(symbols.count) symbols)")
                }
            }
            let (status, text) = try Self.output("/usr/bin/ldd", [Self.sibling("touchstone-cli")])
            #expect(status == 0)
            for library in backendLibraries {
                #expect(text.contains(library), "touchstone-cli does not load \(library): the check would see nothing")
            }
        }
    }
}
