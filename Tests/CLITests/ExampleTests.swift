import Foundation
import Testing
import TestRigs
import TouchstoneSimulator

/// The README's library example, built the way an app builds against
/// Touchstone (a package of its own, Examples/, depending on the product),
/// and run; and what such a package must not reach.
@Suite("The README's library example, and the public API's edge (a package outside this one)", .serialized)
struct ExampleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let examples = root + "/Examples"
    /// One build folder for the packages below: each finds Touchstone
    /// built. Shared by packages with different roots, so no build reuses
    /// the description of another's (`--disable-build-manifest-caching`):
    /// SwiftPM would take the last root's targets for this one's.
    static let scratch = examples + "/.build"

    /// `swift build` of the package at `path`: the exit status and the output.
    static func build(_ path: String, product: String? = nil) throws -> (Int32, String) {
        let swift = try #require(Swtpm.which("swift") ?? (FileManager.default.isExecutableFile(atPath: "/opt/swift/usr/bin/swift")
            ? "/opt/swift/usr/bin/swift" : nil), "no swift on PATH")
        let output = try makeTemporaryDirectory("ts-example") + "/build.log"
        var arguments = ["build", "--package-path", path, "--scratch-path", scratch, "--disable-build-manifest-caching"]
        if let product { arguments += ["--product", product] }
        let status = try Swtpm.run(swift, arguments, output: output)
        return (status, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    @Test("the README's example is Examples/Sources/KeychainExample/main.swift, word for word")
    func readmeShowsTheExample() async throws {
        try await blockingTest {
            let readme = try String(contentsOfFile: Self.root + "/README.md", encoding: .utf8)
            let section = try #require(readme.range(of: "## The library"))
            let rest = readme[section.upperBound...]
            let open = try #require(rest.range(of: "```swift\n"))
            let close = try #require(rest[open.upperBound...].range(of: "```\n"))
            let shown = String(rest[open.upperBound..<close.lowerBound])
            let file = try String(contentsOfFile: Self.examples + "/Sources/KeychainExample/main.swift", encoding: .utf8)
            #expect(shown == file)
        }
    }

    @Test("it builds against the Touchstone product alone and runs as written: the simulator, a finger enrolled, an item read back with a touch")
    func exampleBuildsAndRuns() async throws {
        try await blockingTest {
            let (status, log) = try Self.build(Self.examples, product: "KeychainExample")
            try #require(status == 0, "swift build of Examples failed:\n\(log.suffix(4000))")
            let directory = try makeTemporaryDirectory("ts-example-run")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var environment = ProcessInfo.processInfo.environment
            environment["TMPDIR"] = directory
            let output = directory + "/out"
            let ran = try Swtpm.run(Self.scratch + "/debug/KeychainExample", [], output: output, environment: environment)
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            #expect(ran == 0, "\(text)")
            #expect(text.contains("enrolling: stage(completed: 5, total: 5)"), "\(text)")
            #expect(text.contains("touch requested: Sign in to GitHub"), "\(text)")
            #expect(text.split(separator: "\n").last == "token: ghp_example", "\(text)")
            // It stopped its simulator and removed its state folder.
            #expect((try FileManager.default.contentsOfDirectory(atPath: directory)).filter { $0.hasPrefix("touchstone-example") }.isEmpty)
        }
    }

    /// A package outside this one that reaches for the backends.
    static let outsider = """
        import Touchstone
        import TouchstoneFingerprint
        import TouchstoneTPM
        import TouchstoneVault

        func reach(_ device: TouchstoneDevice) {
            _ = device.vault
            _ = device.tpm
            _ = device.engine
            _ = Vault.self
            _ = TPM.self
            _ = LibfprintReader.self
        }
        """

    @Test("from a package outside this one, TouchstoneDevice.vault, .tpm, .engine, Vault, TPM and LibfprintReader are out of reach")
    func backendsAreOutOfReach() async throws {
        try await blockingTest {
            let package = try makeTemporaryDirectory("ts-outsider")
            defer { try? FileManager.default.removeItem(atPath: package) }
            // Two targets: one that uses the public API only, which must build
            // (so the failure below is the reach, not the set-up), and one that
            // reaches for the backends.
            let sources = [
                "Fine": "import Touchstone\nprint(Configuration.simulator(home: .init(fileURLWithPath: \"/tmp\")).tpm)\n",
                "Reach": Self.outsider + "\n",
            ]
            for (target, source) in sources {
                try FileManager.default.createDirectory(atPath: package + "/Sources/" + target, withIntermediateDirectories: true)
                try source.write(toFile: package + "/Sources/\(target)/main.swift", atomically: true, encoding: .utf8)
            }
            try """
                // swift-tools-version:6.0
                import PackageDescription
                let package = Package(
                    name: "Outsider",
                    dependencies: [.package(name: "Touchstone", path: "\(Self.root)")],
                    targets: ["Fine", "Reach"].map {
                        .executableTarget(name: $0, dependencies: [.product(name: "Touchstone", package: "Touchstone")])
                    },
                    swiftLanguageModes: [.v6])
                """.write(toFile: package + "/Package.swift", atomically: true, encoding: .utf8)
            let (fine, fineLog) = try Self.build(package, product: "Fine")
            try #require(fine == 0, "the outsider's target without the reach did not build:\n\(fineLog.suffix(4000))")

            let (status, log) = try Self.build(package, product: "Reach")
            #expect(status != 0, "the outsider reached the backends:\n\(log.suffix(4000))")
            for name in ["vault", "tpm", "engine", "Vault", "TPM", "LibfprintReader"] {
                #expect(log.contains("'\(name)' is inaccessible due to 'package' protection level")
                            || log.contains("has no member '\(name)'") || log.contains("cannot find '\(name)' in scope"),
                        "\(name) was not refused:\n\(log.suffix(4000))")
            }
        }
    }
}
