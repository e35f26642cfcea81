import Foundation
import Testing

/// python secretstorage's own test suite (3.5.0, from its source release,
/// which scripts/install-deps fetches from PyPI and checks by its hash), run
/// against `touchstone secret-service` as a new user would try it. Its tests
/// of a mocked server skip themselves against a real provider; every other
/// one must pass.
@Suite("python secretstorage's own test suite")
struct SecretStorageSuiteTests {
    /// Where scripts/install-deps keeps the suite.
    static var suite: String {
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["XDG_CACHE_HOME"] ?? ((environment["HOME"] ?? "/root") + "/.cache")
        return cache + "/touchstone-tests/secretstorage-3.5.0"
    }

    @Test("secretstorage 3.5.0's suite passes whole against the provider (its 27 tests run, none fails or errs; the skipped are its mock-server tests), through both engines",
          arguments: [false, true])
    func passesWhole(daemon: Bool) async throws {
        let runner = Self.suite + "/tests/run_tests.py"
        try #require(FileManager.default.fileExists(atPath: runner), "no \(runner): scripts/install-deps fetches it")
        try await SecretServiceRig.with(daemon: daemon) { rig in
            #expect(await rig.setPasscode().code == 0)
            try await rig.startProvider()
            let result = await rig.run("/usr/bin/python3", [runner])
            let report = result.stderr
            #expect(result.code == 0, "\(report)\n\(rig.log)")
            #expect(report.contains("Ran 27 tests"), "\(report)")
            #expect(report.contains("\nOK"), "\(report)")
            // Every skip is one of the suite's own tests of a mocked server.
            let skips = report.split(separator: "\n").filter { $0.contains("... skipped") }
            #expect(skips.allSatisfy { $0.contains("mocked server") || $0.contains("mock-service") }, "\(skips)")
            #expect(skips.count < 27)
        }
    }
}
