import COpenSSL
import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneSSH
import TouchstoneSecure
import TouchstoneModel
import TouchstoneSimulator

/// A P-256 key in this process (OpenSSL's): the stand-in, above the agent's
/// seam, for the TPM-resident keys the agent will offer. The agent protocol
/// and the encodings are what these tests check, with OpenSSH's own tools.
private final class SoftwareKey: AgentKey, @unchecked Sendable {
    // @unchecked Sendable: an EVP_PKEY used for signing only, which OpenSSL
    // allows from several threads.
    private let key: OpaquePointer
    let publicKey: SSHPublicKey
    let signed = Locked<[String]>([])

    private static func name(_ text: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    init(comment: String) throws {
        let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil)
        defer { EVP_PKEY_CTX_free(context) }
        var parameters = [OSSL_PARAM_construct_utf8_string(Self.name("group"),
                                                           UnsafeMutablePointer(mutating: Self.name("P-256")), 0),
                          OSSL_PARAM_construct_end()]
        var made: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, EVP_PKEY_CTX_set_params(context, &parameters) == 1,
              EVP_PKEY_generate(context, &made) == 1, let made else { throw RigFailure("no P-256 key") }
        key = made
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(made, Self.name("encoded-pub-key"), &point, 65, &length) == 1, length == 65,
              let publicKey = SSHPublicKey(point: point, comment: comment) else { throw RigFailure("no public point") }
        self.publicKey = publicKey
    }

    deinit { EVP_PKEY_free(key) }

    func sign(_ data: [UInt8], requester: AgentPeer) async throws -> (r: [UInt8], s: [UInt8]) {
        signed.withLock { $0.append("\(requester.program.executable ?? "?") \(requester.program.command ?? "?")") }
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        var der = [UInt8](repeating: 0, count: 80)
        var length = der.count
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestSign(context, &der, &length, data, data.count) == 1 else { throw RigFailure("sign failed") }
        let signature = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var start: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &start, length)
        }
        guard let signature else { throw RigFailure("no DER signature") }
        defer { ECDSA_SIG_free(signature) }
        var r = [UInt8](repeating: 0, count: 32), s = [UInt8](repeating: 0, count: 32)
        BN_bn2binpad(ECDSA_SIG_get0_r(signature), &r, 32)
        BN_bn2binpad(ECDSA_SIG_get0_s(signature), &s, 32)
        return (r, s)
    }
}

/// `body` on a thread of its own, awaited: blocking work (a program run, a
/// socket read) there leaves the Swift concurrency threads free for the
/// agent's tasks, which answer it.
/// A program's status and output (stdout and stderr), run with `environment`.
private func run(_ program: String, _ arguments: [String], environment: [String: String], in folder: String) async throws -> (Int32, String) {
    try await offPool {
        let file = folder + "/out-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: file) }
        let status = try Swtpm.run(program, arguments, output: file, environment: environment)
        return (status, (try? String(contentsOfFile: file, encoding: .utf8)) ?? "")
    }
}

/// An agent on a socket in a fresh folder, offering `keys`.
private struct Agent {
    let folder: String
    let socket: String
    let agent: SSHAgent
    var environment: [String: String] { ["PATH": "/usr/bin:/bin", "SSH_AUTH_SOCK": socket, "HOME": folder] }

    init(_ keys: [any AgentKey]) throws {
        folder = try makeTemporaryDirectory("tsa")
        socket = folder + "/agent.sock"
        agent = try SSHAgent(socket: socket) { keys }
    }

    func close() {
        agent.stop()
        try? FileManager.default.removeItem(atPath: folder)
    }
}

@Suite("The ssh-agent protocol with OpenSSH's own tools (a software key in place of the TPM's)")
struct SSHAgentTests {
    @Test("the public key line and fingerprint are OpenSSH's: ssh-keygen -l prints the same fingerprint for the line")
    func keyLineAndFingerprint() async throws {
        let key = try SoftwareKey(comment: "alice@touchstone")
        let folder = try makeTemporaryDirectory("tss")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try (key.publicKey.line + "\n").write(toFile: folder + "/key.pub", atomically: true, encoding: .utf8)
        let (status, output) = try await run("/usr/bin/ssh-keygen", ["-l", "-E", "sha256", "-f", folder + "/key.pub"],
                                       environment: ["PATH": "/usr/bin:/bin"], in: folder)
        #expect(status == 0, "\(output)")
        #expect(output.contains(key.publicKey.fingerprint) && output.contains("alice@touchstone") && output.contains("(ECDSA)"), "\(output)")
        #expect(key.publicKey.fingerprint.hasPrefix("SHA256:") && !key.publicKey.fingerprint.hasSuffix("="))
    }

    @Test("ssh-add -L and -l list the agent's keys; ssh-keygen -Y sign signs through it and -Y verify accepts the signature, for the signer only")
    func listAndSign() async throws {
        let alice = try SoftwareKey(comment: "alice@touchstone"), bob = try SoftwareKey(comment: "bob@touchstone")
        let agent = try Agent([alice, bob])
        defer { agent.close() }
        let (listed, lines) = try await run("/usr/bin/ssh-add", ["-L"], environment: agent.environment, in: agent.folder)
        #expect(listed == 0 && lines == alice.publicKey.line + "\n" + bob.publicKey.line + "\n", "\(lines)")
        let (fingerprinted, prints) = try await run("/usr/bin/ssh-add", ["-l"], environment: agent.environment, in: agent.folder)
        #expect(fingerprinted == 0 && prints.contains(alice.publicKey.fingerprint) && prints.contains(bob.publicKey.fingerprint), "\(prints)")

        let message = agent.folder + "/commit", pub = agent.folder + "/alice.pub"
        try "tree 1234\nauthor alice\n".write(toFile: message, atomically: true, encoding: .utf8)
        try (alice.publicKey.line + "\n").write(toFile: pub, atomically: true, encoding: .utf8)
        let (signedStatus, signOutput) = try await run("/usr/bin/ssh-keygen", ["-Y", "sign", "-f", pub, "-n", "git", message],
                                                 environment: agent.environment, in: agent.folder)
        #expect(signedStatus == 0, "\(signOutput)")
        // Named by the kernel: its executable, then its command name.
        #expect(alice.signed.withLock { $0 } == ["/usr/bin/ssh-keygen ssh-keygen"], "the agent named another requester")

        let allowed = agent.folder + "/allowed_signers"
        try ("alice@touchstone namespaces=\"git\" " + alice.publicKey.line + "\n").write(toFile: allowed, atomically: true, encoding: .utf8)
        func verify(_ identity: String) async throws -> (Int32, String) {
            try await run("/bin/sh", ["-c", "exec ssh-keygen -Y verify -f \"$1\" -I \"$2\" -n git -s \"$3\" < \"$4\"", "sh",
                                allowed, identity, message + ".sig", message], environment: agent.environment, in: agent.folder)
        }
        let (good, goodOutput) = try await verify("alice@touchstone")
        #expect(good == 0 && goodOutput.contains("Good \"git\" signature for alice@touchstone"), "\(goodOutput)")
        // The same signature under bob's name, whose key did not make it: refused.
        try ("bob@touchstone namespaces=\"git\" " + bob.publicKey.line + "\n").write(toFile: allowed, atomically: true, encoding: .utf8)
        let (bad, badOutput) = try await verify("bob@touchstone")
        #expect(bad != 0, "\(badOutput)")
    }

    @Test("requests the agent does not serve (adding a key, removing them all) get FAILURE; garbage, an oversized length and a cut message close that connection only; a second agent on its socket is refused; the agent goes on serving")
    func refusesTheRest() async throws {
        let key = try SoftwareKey(comment: "kept")
        let agent = try Agent([key])
        defer { agent.close() }
        // ssh-add of a key file asks the agent to add it: refused.
        let keyFile = agent.folder + "/extra"
        _ = try await run("/usr/bin/ssh-keygen", ["-q", "-t", "ecdsa", "-N", "", "-f", keyFile], environment: agent.environment, in: agent.folder)
        let (added, addOutput) = try await run("/usr/bin/ssh-add", [keyFile], environment: agent.environment, in: agent.folder)
        #expect(added != 0, "\(addOutput)")
        let (removed, removeOutput) = try await run("/usr/bin/ssh-add", ["-D"], environment: agent.environment, in: agent.folder)
        #expect(removed != 0, "\(removeOutput)")

        for garbage in [[UInt8](repeating: 0xff, count: 64), SSHWire.uint32(UInt32(SSHAgent.maximumMessage + 1)) + [11],
                        SSHWire.uint32(100) + [13, 0, 0], SSHWire.uint32(0), SSHWire.string([13, 1, 2])] {
            let socketPath = agent.socket
            let (connected, reply) = try await offPool { () -> (Bool, [UInt8]) in
                let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
                defer { close(fd) }
                guard withUnixSocketAddress(socketPath, { connect(fd, $0, $1) }) == 0 else { return (false, []) }
                _ = garbage.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                shutdown(fd, Int32(SHUT_WR))
                var reply = [UInt8](repeating: 0, count: 64)
                let n = read(fd, &reply, reply.count)
                return (true, Array(reply.prefix(max(n, 0))))
            }
            #expect(connected)
            // Either the connection closed, or a FAILURE (type 5) came back.
            #expect(reply.isEmpty || (reply.count >= 5 && reply[4] == 5), "\(garbage.prefix(8)): \(reply)")
        }
        // A second agent on the same socket is refused; the first keeps it.
        #expect(throws: SSHAgentError.self) { _ = try SSHAgent(socket: agent.socket) { [] } }
        let (listed, lines) = try await run("/usr/bin/ssh-add", ["-L"], environment: agent.environment, in: agent.folder)
        #expect(listed == 0 && lines == key.publicKey.line + "\n", "\(lines)")
    }
}
