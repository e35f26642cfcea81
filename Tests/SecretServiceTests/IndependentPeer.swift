import Foundation
import TestRigs
import TouchstoneSimulator

/// The other side of the exchange, written apart from OpenSSL: Python's
/// own integers for the Diffie-Hellman (the group's prime typed from RFC
/// 2409), HKDF-SHA256 from hmac, as python-secretstorage does it.
let peerScript = """
    import hashlib, hmac, sys
    P = int(
        "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74"
        "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437"
        "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
        "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF", 16)
    x = int(open(sys.argv[2]).read().strip(), 16)
    if sys.argv[1] == "public":
        print(pow(2, x, P).to_bytes(128, "big").hex())
    else:
        shared = pow(int(sys.argv[3], 16), x, P).to_bytes(128, "big")
        prk = hmac.new(b"\\0" * 32, shared, hashlib.sha256).digest()
        print(hmac.new(prk, b"\\x01", hashlib.sha256).digest()[:16].hex())
    """

/// Runs a program of the test's, its stdout trimmed.
func output(_ program: String, _ arguments: [String], in folder: String) throws -> (Int32, String) {
    let file = folder + "/out-\(UInt32.random(in: 0...UInt32.max))"
    defer { try? FileManager.default.removeItem(atPath: file) }
    let status = try Swtpm.run(program, arguments, output: file)
    return (status, ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines))
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func unhex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var index = text.startIndex
    while let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex), index < text.endIndex {
        out.append(UInt8(text[index..<next], radix: 16) ?? 0)
        index = next
    }
    return out
}


/// The client's half of a DH session, done by the peer script in `folder`:
/// its private key made, its public key, and the AES key once it has the
/// provider's public key.
struct IndependentPeer {
    let folder: String
    let script: String
    let privateKey: String

    init(folder: String) throws {
        self.folder = folder
        script = folder + "/peer.py"
        privateKey = folder + "/x"
        try peerScript.write(toFile: script, atomically: true, encoding: .utf8)
        try hex((0..<64).map { _ in UInt8.random(in: 0...255) }).write(toFile: privateKey, atomically: true, encoding: .utf8)
    }

    /// Its public key (128 bytes).
    func publicKey() throws -> [UInt8] {
        let (status, text) = try output("/usr/bin/python3", [script, "public", privateKey], in: folder)
        guard status == 0, text.count == 256 else { throw RigFailure("peer.py public: \(text)") }
        return unhex(text)
    }

    /// The AES key (hex) for the other side's public key.
    func aesKey(for theirs: [UInt8]) throws -> String {
        let (status, text) = try output("/usr/bin/python3", [script, "key", privateKey, hex(theirs)], in: folder)
        guard status == 0, text.count == 32 else { throw RigFailure("peer.py key: \(text)") }
        return text
    }

    /// `plain` encrypted by the openssl command with `key` (hex) and `iv`.
    func encrypt(_ plain: [UInt8], key: String, iv: [UInt8]) throws -> [UInt8] {
        try crypt(["-e"], plain, key: key, iv: iv)
    }

    /// `ciphertext` decrypted by the openssl command.
    func decrypt(_ ciphertext: [UInt8], key: String, iv: [UInt8]) throws -> [UInt8] {
        try crypt(["-d"], ciphertext, key: key, iv: iv)
    }

    private func crypt(_ direction: [String], _ input: [UInt8], key: String, iv: [UInt8]) throws -> [UInt8] {
        let source = folder + "/in", target = folder + "/out"
        try Data(input).write(to: URL(fileURLWithPath: source))
        let (status, text) = try output("/usr/bin/openssl", ["enc"] + direction + ["-aes-128-cbc", "-K", key, "-iv", hex(iv),
                                                                                  "-in", source, "-out", target], in: folder)
        guard status == 0 else { throw RigFailure("openssl enc \(direction[0]): \(text)") }
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: target)))
    }
}
