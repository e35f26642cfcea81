// swift-tools-version:6.0
// Touchstone: LocalAuthentication + Keychain semantics for Linux, backed by
// libfprint and a TPM 2.0. C libraries come from Debian via system-library
// targets; the package depends on no outside Swift package.
import Foundation
import PackageDescription

/// `touchstone` (the dispatcher) and `touchstone-get` are static
/// executables: nothing to load when a get starts (docs/daemon.md, "The
/// client"). Not in the sanitizer builds (scripts/sanitize sets
/// TOUCHSTONE_SANITIZE), whose runtimes need a dynamic executable.
let staticClient: [LinkerSetting] = ProcessInfo.processInfo.environment["TOUCHSTONE_SANITIZE"] != nil ? [] : [
    // FoundationEssentials' static archive leaves these two to the link.
    .unsafeFlags(["-static-executable", "-Xlinker", "-l_FoundationCollections", "-Xlinker", "-l_FoundationCShims"]),
]

/// The security-key provider is loaded by ssh-sk-helper, which has no
/// Swift runtime: scripts/package-deb links the runtime into it
/// (TOUCHSTONE_STATIC_PROVIDER names the toolchain's static library
/// folder), as --static-swift-stdlib does for the executables (it does
/// nothing for a library product).
let staticProvider: [LinkerSetting] = ProcessInfo.processInfo.environment["TOUCHSTONE_STATIC_PROVIDER"].map { folder in
    [.unsafeFlags(["-static-stdlib", "-Xlinker", "-L" + folder, "-Xlinker", "-l_FoundationCollections", "-Xlinker", "-l_FoundationCShims"])]
} ?? []

/// Executables export tpm2-tss's library-context functions so that
/// libtss2-esys finds Touchstone's versions first (CTSSCryptoContext; see
/// docs/tpm.md, "Client-side crypto"). Without them everything still works,
/// with a fresh OpenSSL context per ESYS hash (10-15 ms more per unseal).
let exportSharedCryptoContext: [LinkerSetting] = [
    .unsafeFlags(["-Xlinker", "--export-dynamic-symbol=OSSL_LIB_CTX_new",
                  "-Xlinker", "--export-dynamic-symbol=OSSL_LIB_CTX_free"]),
]

/// Code only the tests and the fuzz targets call (the fuzz bodies, the vault's
/// key inventory for the memory scans) is compiled in debug builds only,
/// under `#if TOUCHSTONE_TEST_SUPPORT`; scripts/fuzz defines it for swiftc.
let testSupport: [SwiftSetting] = [
    .define("TOUCHSTONE_TEST_SUPPORT", .when(configuration: .debug)),
]

let package = Package(
    name: "Touchstone",
    products: [
        .library(name: "Touchstone", targets: ["Touchstone"]),
        // Test doubles for apps' own tests: no hardware needed.
        .library(name: "TouchstoneTestSupport", targets: ["TouchstoneTestSupport"]),
        // `touchstone` is a small dispatcher (C): a get through a daemon goes
        // to touchstone-get, which loads no backend; everything else to
        // touchstone-cli, the whole command.
        .executable(name: "touchstone", targets: ["TouchstoneDispatch"]),
        .executable(name: "touchstone-cli", targets: ["TouchstoneCLI"]),
        .executable(name: "touchstone-get", targets: ["TouchstoneGet"]),
        .executable(name: "touchstoned", targets: ["TouchstoneDaemon"]),
        // git's credential helper: `credential.helper touchstone` (docs/git.md).
        .executable(name: "git-credential-touchstone", targets: ["TouchstoneGitCredential"]),
        // OpenSSH's security-key provider: libtouchstone-sk.so (docs/ssh.md, "Security keys").
        .library(name: "touchstone-sk", type: .dynamic, targets: ["TouchstoneSK"]),
    ],
    targets: [
        // MARK: C libraries (Debian packages)
        .systemLibrary(
            name: "CTSS2", path: "Sources/CTSS2",
            pkgConfig: "tss2-esys",
            providers: [.apt(["libtss2-dev"])]),
        .systemLibrary(
            name: "CFPrint", path: "Sources/CFPrint",
            pkgConfig: "libfprint-2",
            providers: [.apt(["libfprint-2-dev", "libglib2.0-dev"])]),
        .systemLibrary(
            name: "CGLib", path: "Sources/CGLib",
            pkgConfig: "glib-2.0",
            providers: [.apt(["libglib2.0-dev"])]),
        .systemLibrary(
            name: "CGio", path: "Sources/CGio",
            pkgConfig: "gio-2.0",
            providers: [.apt(["libglib2.0-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Sources/COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CSodium", path: "Sources/CSodium",
            pkgConfig: "libsodium",
            providers: [.apt(["libsodium-dev"])]),
        .systemLibrary(name: "CProcess", path: "Sources/CProcess"),
        // The kernel's uhid ABI (linux/uhid.h): the virtual FIDO device.
        .systemLibrary(name: "CUHID", path: "Sources/CUHID"),
        .systemLibrary(
            name: "CCBOR", path: "Sources/CCBOR",
            pkgConfig: "libcbor",
            providers: [.apt(["libcbor-dev"])]),
        .systemLibrary(
            name: "CSeccomp", path: "Sources/CSeccomp",
            pkgConfig: "libseccomp",
            providers: [.apt(["libseccomp-dev"])]),
        .systemLibrary(
            name: "CPNG", path: "Sources/CPNG",
            pkgConfig: "libpng",
            providers: [.apt(["libpng-dev"])]),

        // One OpenSSL library context for libtss2-esys (see above).
        .target(name: "CTSSCryptoContext", path: "Sources/CTSSCryptoContext"),

        // MARK: Swift modules, bottom up
        // The domain types every layer shares: access controls and their
        // grammar, fingers, reader and TPM selection, item attributes.
        // System calls in swift-system's manner: Errno, one syscall wrapper,
        // a descriptor owner, process spawning. Glibc only.
        .target(name: "TouchstonePOSIX"),
        .target(name: "TouchstoneModel", dependencies: ["TouchstonePOSIX"]),
        .target(name: "TouchstoneSecure", dependencies: ["CSodium", "TouchstonePOSIX"]),
        // Backends: `package` access, C modules imported internally.
        .target(name: "TouchstoneTPM", dependencies: ["CTSS2", "CSodium", "TouchstonePOSIX", "TouchstoneSecure", "TouchstoneModel", "CTSSCryptoContext"],
                swiftSettings: testSupport),
        // A GLib main context on a thread of its own (libfprint's, GDBus's).
        .target(name: "TouchstoneGLib", dependencies: ["CGLib", "TouchstoneSecure"]),
        .target(name: "TouchstoneFingerprint", dependencies: ["CFPrint", "CSodium", "TouchstonePOSIX", "TouchstoneSecure", "TouchstoneModel", "TouchstoneGLib"]),
        .target(name: "TouchstoneVault", dependencies: ["CSQLite", "CSodium", "TouchstonePOSIX", "TouchstoneSecure", "TouchstoneTPM", "TouchstoneFingerprint", "TouchstoneModel", "TouchstoneFIDO"],
                swiftSettings: testSupport),
        // The simulator (swtpm + libfprint's virtual reader, synthetic
        // fingerprints for its image reader), shared with the test rigs.
        // Optimised in debug builds too: a synthetic master print takes a
        // fifth of a second optimised and five unoptimised, and the tests'
        // image reader grows dozens of them.
        .target(name: "TouchstoneSimulator", dependencies: ["CPNG", "TouchstonePOSIX", "TouchstoneTPM", "TouchstoneFingerprint", "TouchstoneSecure", "TouchstoneModel"],
                swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        // What a client of the daemon needs and nothing of the backends: the
        // interaction protocol, the terminal's interaction, the daemon's wire
        // protocol.
        .target(name: "TouchstoneClient", dependencies: ["TouchstoneModel", "TouchstonePOSIX", "TouchstoneSecure"],
                swiftSettings: testSupport),
        // GDBus (GLib's gio) from Swift: a bus connection on a thread of its
        // own, names, exported objects, signals, calls (the D-Bus front ends).
        .target(name: "TouchstoneDBus", dependencies: ["CGio", "TouchstonePOSIX", "TouchstoneSecure", "TouchstoneGLib"]),
        // The Secret Service provider (`touchstone secret-service`): its
        // objects over the public API, sessions (plain, and encrypted with
        // OpenSSL's DH, HKDF and AES), prompts, pinentry, notifications.
        .target(name: "TouchstoneSecretService", dependencies: ["COpenSSL", "Touchstone", "TouchstoneSecure", "TouchstoneDBus", "TouchstonePOSIX"],
                swiftSettings: testSupport),
        // The ssh-agent's parts: OpenSSH's wire format and the agent
        // protocol over a Unix socket.
        // FIDO's CTAPHID and CTAP2 (docs/fido.md): the transport's framing and channels.
        .target(name: "TouchstoneFIDO", dependencies: ["CCBOR", "COpenSSL", "CUHID", "TouchstoneModel", "TouchstonePOSIX", "TouchstoneSecure"]),
        // The sk-api's structures (OpenSSH 9.2), for the provider library.
        .target(name: "CSecurityKeyAPI", path: "Sources/CSecurityKeyAPI"),
        // Linked -z nodelete: ssh-sk-helper dlcloses the provider as soon as
        // a call returns, while the Swift runtime's threads (the engine's,
        // the pool's) still run code of it; unmapped, they crash.
        .target(name: "TouchstoneSK", dependencies: ["CSecurityKeyAPI", "CSodium", "CTSSCryptoContext", "Touchstone", "TouchstoneCommandLine", "TouchstonePOSIX",
                                                     "TouchstoneSecretService"],
                linkerSettings: [.unsafeFlags(["-Xlinker", "-z", "-Xlinker", "nodelete"])] + staticProvider),
        .target(name: "TouchstoneSSH", dependencies: ["CSodium", "TouchstonePOSIX", "TouchstoneSecure", "TouchstoneModel"]),
        // The public API, over the engine seam.
        .target(name: "Touchstone", dependencies: ["CSodium", "TouchstoneClient", "TouchstoneModel", "TouchstonePOSIX", "TouchstoneSecure", "TouchstoneTPM", "TouchstoneFingerprint", "TouchstoneGLib", "TouchstoneVault", "TouchstoneSimulator"],
                swiftSettings: testSupport),
        .target(name: "TouchstoneTestSupport", dependencies: ["Touchstone"]),
        // touchstoned's server: the listener, one session per connection
        // serving the operations' registry with each user's in-process
        // engine, the passcode gate and the TPM gates, the print checker
        // (a child confined with libseccomp). Only touchstoned links it.
        .target(name: "TouchstoneServer", dependencies: ["CSodium", "CSeccomp", "CProcess", "Touchstone", "TouchstoneFingerprint", "TouchstoneClient", "TouchstoneModel", "TouchstonePOSIX", "TouchstoneSecure",
                                                         "TouchstoneTPM", "TouchstoneVault", "TouchstoneSimulator"],
                swiftSettings: testSupport),
        // Front ends: the public API and the command-line parser, nothing below.
        .target(name: "TouchstoneCommandLine", dependencies: ["TouchstoneModel"], path: "Sources/TouchstoneCommandLine",
                swiftSettings: testSupport),
        // What the command's processes share: errors as exit codes and
        // messages, output. Links no backend.
        .target(name: "TouchstoneCLISupport", dependencies: ["TouchstonePOSIX", "TouchstoneClient", "TouchstoneCommandLine"]),
        .executableTarget(name: "TouchstoneCLI", dependencies: ["Touchstone", "TouchstoneCommandLine", "TouchstoneCLISupport", "TouchstoneSimulator",
                                                            "TouchstoneSSH", "TouchstoneSecretService", "TouchstoneDBus", "TouchstonePOSIX"],
                          linkerSettings: exportSharedCryptoContext),
        .executableTarget(name: "TouchstoneGet", dependencies: ["TouchstoneClient", "TouchstoneCLISupport", "TouchstoneCommandLine", "TouchstonePOSIX"],
                          linkerSettings: staticClient),
        .executableTarget(name: "TouchstoneDispatch", path: "Sources/TouchstoneDispatch",
                          linkerSettings: staticClient),
        // The git credential helper (docs/git.md): the public API, like touchstone-cli.
        .executableTarget(name: "TouchstoneGitCredential", dependencies: ["Touchstone", "TouchstoneCommandLine", "TouchstoneCLISupport", "TouchstonePOSIX"],
                          linkerSettings: exportSharedCryptoContext),
        // touchstoned: its command line over the server.
        .executableTarget(name: "TouchstoneDaemon", dependencies: ["Touchstone", "TouchstoneServer", "TouchstoneCommandLine", "TouchstonePOSIX"],
                          linkerSettings: exportSharedCryptoContext),
        // The man pages from the command tables, not a product: scripts/package-deb
        // runs `.build/release/TouchstoneManPages DIR DATE`.
        .executableTarget(name: "TouchstoneManPages", dependencies: ["TouchstoneCommandLine"]),
        // The benchmark, not a product: `swift run -c release TouchstoneBench`.
        .executableTarget(name: "TouchstoneBench", dependencies: ["TestRigs", "TouchstonePOSIX", "TouchstoneTPM", "TouchstoneSecure", "TouchstoneVault", "TouchstoneSimulator", "TouchstoneFingerprint", "CSQLite"],
                          linkerSettings: exportSharedCryptoContext),

        // MARK: Tests (one test bundle; one folder per module under test)
        // Rigs shared by the test targets (and the benchmark): a private swtpm, virtual readers.
        .target(name: "TestRigs", dependencies: ["TouchstonePOSIX", "TouchstoneTPM", "TouchstoneFingerprint", "TouchstoneSecure", "TouchstoneSimulator",
                                                 "TouchstoneDBus"],
                path: "Tests/TestRigs"),
        // The suite trait that keeps synchronous tests off the cooperative pool.
        .target(name: "TestScopes", dependencies: ["TestRigs"], path: "Tests/TestScopes"),
        .testTarget(name: "TPMTests", dependencies: ["TestRigs", "TestScopes", "TouchstoneTPM", "TouchstoneSecure", "TouchstoneFingerprint", "TouchstoneSimulator", "CTSS2", "CTSSCryptoContext",
                                                 "COpenSSL"],
                    linkerSettings: exportSharedCryptoContext),
        .testTarget(name: "TouchstoneTests", dependencies: ["TestRigs", "TestScopes", "Touchstone", "TouchstoneFIDO", "TouchstonePOSIX", "TouchstoneServer", "TouchstoneTestSupport", "TouchstoneVault", "TouchstoneTPM", "TouchstoneFingerprint", "TouchstoneGLib", "TouchstoneSecure", "TouchstoneSimulator"]),
        .testTarget(name: "VaultTests", dependencies: ["TestRigs", "TestScopes", "TouchstonePOSIX", "TouchstoneVault", "TouchstoneTPM", "TouchstoneSecure", "TouchstoneSimulator"]),
        .testTarget(name: "FingerprintTests", dependencies: ["TestRigs", "TouchstoneFingerprint", "TouchstoneSecure", "TouchstoneSimulator", "CFPrint", "CPNG"]),
        .testTarget(name: "DBusTests", dependencies: ["TestRigs", "TouchstoneDBus", "TouchstoneSecure"],
                    path: "Tests/DBusTests"),
        .testTarget(name: "SecretServiceTests", dependencies: ["TestRigs", "TouchstoneSecretService", "TouchstoneSecure", "TouchstoneSimulator",
                                                            "TouchstoneDBus"],
                    path: "Tests/SecretServiceTests"),
        .testTarget(name: "SSHTests", dependencies: ["TestRigs", "TouchstoneSSH", "TouchstoneSecure", "TouchstoneSimulator", "TouchstoneModel",
                                                 "COpenSSL"],
                    path: "Tests/SSHTests"),
        .testTarget(name: "POSIXTests", dependencies: ["TouchstonePOSIX", "TouchstoneModel"], path: "Tests/POSIXTests"),
        .testTarget(name: "CommandLineTests", dependencies: ["TestRigs", "TouchstoneCommandLine"], path: "Tests/CommandLineTests"),
        // End-to-end: the built touchstone binary as a subprocess, on the simulator.
        .testTarget(name: "CLITests", dependencies: ["TestRigs", "TouchstonePOSIX", "TouchstoneServer", "TouchstoneTPM", "TouchstoneVault", "TouchstoneSecure", "TouchstoneSimulator", "TouchstoneDBus", "TouchstoneModel"], path: "Tests/CLITests"),
    ],
    swiftLanguageModes: [.v6]
)
