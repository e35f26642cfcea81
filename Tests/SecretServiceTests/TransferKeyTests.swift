import Foundation
import Testing
import TouchstoneSecretService
import TouchstoneSecure
import TestRigs

@Suite("The Secret Service's encrypted session (dh-ietf1024-sha256-aes128-cbc-pkcs7)")
struct TransferKeyTests {
    @Test("against a peer written apart (Python's integers and hmac, the openssl command's AES): the same key both ways, and secrets cross in both directions, the empty one and a 1 MiB one among them")
    func agreesWithAnIndependentPeer() throws {
        let folder = try makeTemporaryDirectory("tsd")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let peer = try IndependentPeer(folder: folder)
        let ours = try TransferKey(peerPublicKey: try peer.publicKey())
        #expect(ours.publicKey.count == 128)
        let peerKey = try peer.aesKey(for: ours.publicKey)

        for secret in [[UInt8](), Array("hunter2".utf8), [UInt8](repeating: 7, count: 16), (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0) }] {
            // Ours to theirs: the openssl command decrypts with the peer's key.
            let (iv, ciphertext) = try ours.encrypt(SecureBytes(copying: secret))
            #expect(iv.count == 16 && ciphertext.count == (secret.count / 16 + 1) * 16)
            #expect(try peer.decrypt(ciphertext, key: peerKey, iv: iv) == secret, "\(secret.count) bytes")
            // Theirs to ours.
            let theirIV = (0..<16).map { _ in UInt8.random(in: 0...255) }
            let theirs = try peer.encrypt(secret, key: peerKey, iv: theirIV)
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
