// swift-tools-version:6.0
// The README's library example, as a package of its own that depends on
// Touchstone the way an app does: through its product, public API only.
// Tests/CLITests/ExampleTests.swift builds and runs it.
import PackageDescription

let package = Package(
    name: "TouchstoneExamples",
    dependencies: [.package(name: "Touchstone", path: "..")],
    targets: [
        .executableTarget(name: "KeychainExample", dependencies: [.product(name: "Touchstone", package: "Touchstone")]),
    ],
    swiftLanguageModes: [.v6]
)
