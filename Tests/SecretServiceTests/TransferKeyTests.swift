import Foundation
import Testing
import TouchstoneSecretService
import TouchstoneSecure
import TouchstoneSimulator

/// The other side of the exchange, written apart from OpenSSL: Python's
/// own integers for the Diffie-Hellman (the group's prime typed from RFC
/// 2409), HKDF-SHA256 from hmac, as python-secretstorage does it.
private let peerScript = """
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
private func output(_ program: String, _ arguments: [String], in folder: String) throws -> (Int32, String) {
    let file = folder + "/out-\(UInt32.random(in: 0...UInt32.max))"
    defer { try? FileManager.default.removeItem(atPath: file) }
    let status = try Swtpm.run(program, arguments, output: file)
    return (status, ((try? String(contentsOfFile: file, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines))
}

private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

private func unhex(_ text: String) -> [UInt8] {
    var out: [UInt8] = []
    var index = text.startIndex
    while let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex), index < text.endIndex {
        out.append(UInt8(text[index..<next], radix: 16) ?? 0)
        index = next
    }
    return out
}

@Suite("The Secret Service's encrypted session (dh-ietf1024-sha256-aes128-cbc-pkcs7)")
struct TransferKeyTests {
    @Test("against a peer written apart (Python's integers and hmac, the openssl command's AES): the same key both ways, and secrets cross in both directions, the empty one and a 1 MiB one among them")
    func agreesWithAnIndependentPeer() throws {
        let folder = NSTemporaryDirectory() + "ts-dh-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = folder + "/peer.py", privateKey = folder + "/x"
        try peerScript.write(toFile: script, atomically: true, encoding: .utf8)
        try hex((0..<64).map { _ in UInt8.random(in: 0...255) }).write(toFile: privateKey, atomically: true, encoding: .utf8)

        let (publicStatus, peerPublic) = try output("/usr/bin/python3", [script, "public", privateKey], in: folder)
        #expect(publicStatus == 0 && peerPublic.count == 256, "\(peerPublic)")
        let ours = try TransferKey(peerPublicKey: unhex(peerPublic))
        #expect(ours.publicKey.count == 128)
        let (keyStatus, peerKey) = try output("/usr/bin/python3", [script, "key", privateKey, hex(ours.publicKey)], in: folder)
        #expect(keyStatus == 0 && peerKey.count == 32, "\(peerKey)")

        for secret in [[UInt8](), Array("hunter2".utf8), [UInt8](repeating: 7, count: 16), (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0) }] {
            // Ours to theirs: the openssl command decrypts with the peer's key.
            let (iv, ciphertext) = try ours.encrypt(SecureBytes(copying: secret))
            #expect(iv.count == 16 && ciphertext.count == (secret.count / 16 + 1) * 16)
            let sealed = folder + "/sealed", opened = folder + "/opened"
            try Data(ciphertext).write(to: URL(fileURLWithPath: sealed))
            let (decryptStatus, _) = try output("/usr/bin/openssl", ["enc", "-d", "-aes-128-cbc", "-K", peerKey, "-iv", hex(iv),
                                                                     "-in", sealed, "-out", opened], in: folder)
            #expect(decryptStatus == 0)
            #expect((try? Data(contentsOf: URL(fileURLWithPath: opened))) == Data(secret), "\(secret.count) bytes")

            // Theirs to ours.
            let theirIV = (0..<16).map { _ in UInt8.random(in: 0...255) }
            try Data(secret).write(to: URL(fileURLWithPath: opened))
            let (encryptStatus, _) = try output("/usr/bin/openssl", ["enc", "-e", "-aes-128-cbc", "-K", peerKey, "-iv", hex(theirIV),
                                                                     "-in", opened, "-out", sealed], in: folder)
            #expect(encryptStatus == 0)
            let theirs = try [UInt8](Data(contentsOf: URL(fileURLWithPath: sealed)))
            #expect(try ours.decrypt(iv: theirIV, ciphertext: theirs) == SecureBytes(copying: secret))
        }
    }

    @Test("public keys outside the group or the wrong size are refused: empty, 0, 1, p-1, p, 129 bytes")
    func badPublicKeys() throws {
        let prime = unhex("FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7EDEE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF")
        var primeMinusOne = prime
        primeMinusOne[127] -= 1
        for (what, key) in [("empty", []), ("0", [UInt8(0)]), ("1", [1]), ("p-1", primeMinusOne), ("p", prime),
                            ("129 bytes", [UInt8](repeating: 1, count: 129))] {
            #expect(throws: TransferKey.Failure.self, "\(what)") { try TransferKey(peerPublicKey: key) }
        }
        // 2 and p-2 are in the group.
        var primeMinusTwo = prime
        primeMinusTwo[127] -= 2
        _ = try TransferKey(peerPublicKey: [2])
        _ = try TransferKey(peerPublicKey: primeMinusTwo)
    }

    @Test("each session has a key pair of its own; a ciphertext of another session, a cut one or a bad IV does not give the secret back")
    func sessionsApart() throws {
        let peer = [UInt8](repeating: 0x5a, count: 128)
        let one = try TransferKey(peerPublicKey: peer), two = try TransferKey(peerPublicKey: peer)
        #expect(one.publicKey != two.publicKey)
        let secret = SecureBytes(copying: Array("a secret of one session".utf8))
        let (iv, ciphertext) = try one.encrypt(secret)
        #expect(try one.decrypt(iv: iv, ciphertext: ciphertext) == secret)
        #expect((try? two.decrypt(iv: iv, ciphertext: ciphertext)) != secret)
        #expect(throws: TransferKey.Failure.self) { try one.decrypt(iv: Array(iv.prefix(8)), ciphertext: ciphertext) }
        #expect(throws: TransferKey.Failure.self) { try one.decrypt(iv: iv, ciphertext: Array(ciphertext.dropLast())) }
        #expect(throws: TransferKey.Failure.self) { try one.decrypt(iv: iv, ciphertext: []) }
    }
}
