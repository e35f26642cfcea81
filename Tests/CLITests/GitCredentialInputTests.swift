import Foundation
import Testing
import TestRigs

/// What git-credential-touchstone does with requests git would not send,
/// and with the keys newer gits send (docs/git.md, "The protocol"): a
/// malformed or oversized request is exit 1 with the line named on stderr,
/// nothing printed, and the stored item still there and still given (each
/// refusal next to a well-formed request that works).
@Suite("git-credential-touchstone: requests and command lines")
struct GitCredentialInputTests {
    static let stored = Array("protocol=https\nhost=git.example.com\nusername=alice\npassword=kept-token\n\n".utf8)
    static let query = Array("protocol=https\nhost=git.example.com\nusername=alice\n\n".utf8)

    /// A sandbox with alice's item stored ungated by the helper itself.
    static func world() throws -> (CLISandbox, GitRig) {
        let sandbox = try CLISandbox()
        let git = try GitRig(sandbox, helpers: ["touchstone --access none"])
        let stored = git.helper(["--access", "none", "store"], request: Self.stored)
        guard stored.code == 0 else { throw RigFailure("store failed: \(stored.stderr)") }
        return (sandbox, git)
    }

    static let malformed: [(String, [UInt8], String)] = [
        ("a line without '='", Array("protocol=https\nhost=git.example.com\nusername alice\n\n".utf8), "line 3 is not key=value"),
        ("an empty key", Array("protocol=https\n=x\n\n".utf8), "line 2 is not key=value"),
        ("a NUL in the password", Array("protocol=https\nhost=git.example.com\nusername=alice\npassword=a\u{0}b\n\n".utf8),
         "line 4 has a NUL byte in the password"),
        ("a username over 1024 bytes", Array("protocol=https\nhost=git.example.com\nusername=\(String(repeating: "u", count: 1025))\n\n".utf8),
         "line 3 has a username of 1025 bytes"),
        ("a host that is not UTF-8", Array("protocol=https\nhost=git.".utf8) + [0xFF, 0xFE] + Array(".com\n\n".utf8),
         "line 2 has a host that is not valid UTF-8"),
        ("an escape sequence in the host", Array("protocol=https\nhost=git.example.com\u{1B}[2J\n\n".utf8),
         "line 2 has a host with a control or formatting character (U+001B)"),
        ("a request over 1 MiB + 64 KiB", Array("protocol=https\nhost=git.example.com\nusername=alice\npassword=".utf8)
            + [UInt8](repeating: 0x41, count: (1 << 20) + 64 * 1024) + [0x0A, 0x0A],
         "git's request is larger than"),
    ]

    @Test("a malformed or oversized request to get, store or erase: exit 1, the reason on stderr, nothing on stdout, the item kept and still given",
          arguments: ["get", "store", "erase"])
    func malformedRequests(_ operation: String) async throws {
        try await blockingTest {
            let (sandbox, git) = try Self.world()
            defer { sandbox.close() }
            for (what, request, message) in Self.malformed {
                let refused = git.helper(["--access", "none", operation], request: request)
                #expect(refused.code == 1, "\(what): \(refused.stderr)")
                #expect(refused.stderr.contains("touchstone: error: "), "\(what)")
                #expect(refused.stderr.contains(message), "\(what): \(refused.stderr)")
                #expect(refused.stdout.isEmpty, "\(what)")
            }
            let given = git.helper(["get"], request: Self.query)
            #expect(given.code == 0, "\(given.stderr)")
            #expect(given.stdoutText == "username=alice\npassword=kept-token\n")
            #expect(git.items().count == 1)
        }
    }

    @Test("the keys of newer gits (capability[], wwwauth[], password_expiry_utc, oauth_refresh_token, url, state[]) are ignored, CR LF lines read as LF, a key given twice keeps its last value, EOF ends a request as a blank line does")
    func newerKeys() async throws {
        try await blockingTest {
            let (sandbox, git) = try Self.world()
            defer { sandbox.close() }
            let request = "capability[]=authtype\r\nprotocol=https\r\nhost=git.example.com\r\nwwwauth[]=Basic realm=\"x\"\r\n"
                + "username=bob\r\nusername=alice\r\npassword_expiry_utc=2000000000\r\noauth_refresh_token=r3fresh\r\n"
                + "url=https://elsewhere.example.org/\r\nstate[]=touchstone:1\r\n\r\n"
            let given = git.helper(["get"], request: Array(request.utf8))
            #expect(given.code == 0, "\(given.stderr)")
            #expect(given.stdoutText == "username=alice\npassword=kept-token\n")
            // No blank line: EOF ends it.
            let atEOF = git.helper(["get"], request: Array("protocol=https\nhost=git.example.com".utf8))
            #expect(atEOF.stdoutText == "username=alice\npassword=kept-token\n")
            // What follows the blank line is not read as part of the request.
            let after = git.helper(["get"], request: Array("protocol=https\nhost=git.example.com\n\nhost=other.example.com\n".utf8))
            #expect(after.stdoutText == "username=alice\npassword=kept-token\n")
            // Nothing for another host: exit 0, nothing printed (git asks on).
            let none = git.helper(["get"], request: Array("protocol=https\nhost=other.example.com\n\n".utf8))
            #expect(none.code == 0 && none.stdout.isEmpty, "\(none.stderr)")
        }
    }

    @Test("store with a gated access and no passcode set: exit 7 before the item there is touched; it is still given, and replaced once the access needs no passcode")
    func gatedStoreWithoutPasscode() async throws {
        try await blockingTest {
            let (sandbox, git) = try Self.world()
            defer { sandbox.close() }
            let replacing = Array("protocol=https\nhost=git.example.com\nusername=alice\npassword=new-token\n\n".utf8)
            let refused = git.helper(["--access", "biometry-any", "store"], request: replacing)
            #expect(refused.code == 7, "\(refused.stderr)")
            #expect(refused.stderr.contains("hint: touchstone passcode set"))
            #expect(git.helper(["get"], request: Self.query).stdoutText == "username=alice\npassword=kept-token\n")
            #expect(git.helper(["--access", "none", "store"], request: replacing).code == 0)
            #expect(git.helper(["get"], request: Self.query).stdoutText == "username=alice\npassword=new-token\n")
        }
    }

    @Test("store without a username or a password, or without a host, does nothing (as git's credential-store); an operation of a newer git is ignored (exit 0); an item whose password holds a newline is refused with the fix, not sent")
    func incompleteRequests() async throws {
        try await blockingTest {
            let (sandbox, git) = try Self.world()
            defer { sandbox.close() }
            for request in ["protocol=https\nhost=git.example.com\npassword=p\n", "protocol=https\nhost=git.example.com\nusername=bob\n",
                            "protocol=cert\npath=/home/a/cert.p12\nusername=bob\npassword=p\n"] {
                let ignored = git.helper(["--access", "none", "store"], request: Array(request.utf8))
                #expect(ignored.code == 0 && ignored.stderr.isEmpty, "\(ignored.stderr)")
            }
            #expect(git.items().count == 1)
            let newer = git.helper(["frobnicate"], request: Self.stored)
            #expect(newer.code == 0 && newer.stdout.isEmpty && newer.stderr.isEmpty)
            #expect(git.items().count == 1)

            #expect(sandbox.run(["--sim", "add", "git:https://echo.example.com", "dave", "--access", "none"],
                                stdin: Array("with-newline\n".utf8)).code == 0)
            let refused = git.helper(["get"], request: Array("protocol=https\nhost=echo.example.com\n\n".utf8))
            #expect(refused.code == 1)
            #expect(refused.stderr.contains("holds a newline, CR or NUL"), "\(refused.stderr)")
            #expect(refused.stderr.contains("hint: store it without the newline: printf"))
            #expect(refused.stdout.isEmpty)
            // The same, added without the newline, is given.
            #expect(sandbox.run(["--sim", "delete", "git:https://echo.example.com", "dave"]).code == 0)
            #expect(sandbox.run(["--sim", "add", "git:https://echo.example.com", "dave", "--access", "none"],
                                stdin: Array("no-newline".utf8)).code == 0)
            #expect(git.helper(["get"], request: Array("protocol=https\nhost=echo.example.com\n\n".utf8)).stdoutText
                    == "username=dave\npassword=no-newline\n")
        }
    }

    @Test("usage errors are exit 64 with the usage line; --help is exit 0 on stdout", arguments: [
        (["get", "--passcode-fd", "0"], "stdin carries git's request, so --passcode-fd cannot be 0"),
        (["--json", "get"], "unknown option '--json'"),
        (["--access", "face-id", "store"], "invalid --access 'face-id'"),
        ([], "missing operation"),
        (["get", "store"], "unexpected argument 'store'"),
        (["--timeout", "0", "get"], "--timeout"),
    ])
    func usage(_ arguments: [String], _ message: String) async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let git = try GitRig(sandbox, helpers: [])
            let refused = git.helper(arguments, request: [])
            #expect(refused.code == 64)
            #expect(refused.stderr.contains("touchstone: error: \(message)"), "\(refused.stderr)")
            #expect(refused.stderr.contains("usage: git-credential-touchstone [--access <spec>]"))
            let help = git.helper(arguments + ["--help"], request: [])
            #expect(help.code == 0)
            #expect(help.stdoutText.contains("USAGE: git-credential-touchstone"))
        }
    }
}

/// Random damage to a well-formed request, for each operation: the helper
/// never crashes or hangs, exits 0 or 1 (1 with a message), and what `get`
/// prints is nothing or a whole reply. Seeded, and the seed is in every
/// message, so a failure can be replayed.
@Suite("git-credential-touchstone: damaged requests")
struct GitCredentialDamageTests {
    /// SplitMix64: a small seeded generator.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func damaged(_ request: [UInt8], _ random: inout Generator) -> [UInt8] {
        var bytes = request
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let at = Int.random(in: 0...bytes.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0 where at < bytes.count: bytes[at] = UInt8.random(in: 0...255, using: &random)
            case 1: bytes.insert([0x00, 0x0A, 0x0D, 0x3D, 0x1B, 0xFF].randomElement(using: &random)!, at: at)
            case 2: bytes = Array(bytes.prefix(at))
            case 3 where at < bytes.count: bytes.remove(at: at)
            case 4: bytes.insert(contentsOf: [UInt8](repeating: 0x61, count: Int.random(in: 1000...1100, using: &random)), at: at)
            default: bytes.insert(contentsOf: Array("x=y\n".utf8), at: at)
            }
        }
        return bytes
    }

    @Test("30 damaged requests for each of get, store, erase")
    func damagedRequests() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let git = try GitRig(sandbox, helpers: [])
            #expect(git.helper(["--access", "none", "store"], request: GitCredentialInputTests.stored).code == 0)
            let seed = UInt64.random(in: 0...UInt64.max)
            var random = Generator(state: seed)
            var refused = 0
            for round in 0..<30 {
                for operation in ["get", "store", "erase"] {
                    let request = Self.damaged(GitCredentialInputTests.stored, &random)
                    let result = git.helper(["--access", "none", operation], request: request)
                    let context = "seed \(seed), round \(round), \(operation): exit \(result.code), \(result.stderr)"
                    #expect(result.code == 0 || result.code == 1, "\(context)")
                    if result.code == 1 {
                        refused += 1
                        #expect(result.stderr.contains("touchstone: error: "), "\(context)")
                        #expect(result.stdout.isEmpty, "\(context)")
                    }
                    if !result.stdout.isEmpty {
                        let text = result.stdoutText
                        #expect(operation == "get" && text.hasPrefix("username=") && text.contains("\npassword=")
                                && text.hasSuffix("\n") && text.filter { $0 == "\n" }.count == 2, "\(context)")
                    }
                }
            }
            // The damage does reach the parser's refusals (else this checked nothing of them).
            #expect(refused > 0, "seed \(seed): no request was refused")
        }
    }
}
