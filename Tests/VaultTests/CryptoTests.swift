import Foundation
import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneVault

/// The vault's own uses of libsodium that have two code paths.
@Suite("Vault cryptography", .offPool)
struct CryptoTests {
    @Test("the lookup hash of (service, account) is the keyed hash of the two length-prefixed parts, whatever their bytes")
    func lookupHashForms() {
        let key = SecureBytes.random(count: 32)
        let texts = ["", "a", "org.example.mail ✉︎", "ada@example.org", String(repeating: "é", count: 2048), "\u{0}x"]
        for first in texts {
            for second in texts {
                #expect(Crypto.keyedHash(key, first, second) == Crypto.keyedHash(key, [Array(first.utf8), Array(second.utf8)]))
            }
        }
        // The length prefixes keep ("ab", "c") and ("a", "bc") apart.
        #expect(Crypto.keyedHash(key, "ab", "c") != Crypto.keyedHash(key, "a", "bc"))
        #expect(Crypto.keyedHash(key, "a", "b") != Crypto.keyedHash(SecureBytes.random(count: 32), "a", "b"))
    }

    @Test("each record cipher opens what it sealed, and nothing altered, cut, under another key or associated data",
          arguments: RecordCipher.allCases.filter(\.isAvailable))
    func recordCipher(_ cipher: RecordCipher) throws {
        let raw = SecureBytes.random(count: 32)
        let key = try #require(AEADKey(raw, cipher: cipher))
        let other = try #require(AEADKey(SecureBytes.random(count: 32), cipher: cipher))
        for size in [0, 1, 15, 16, 17, 141, 4096] {
            let plain = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let box = key.seal(plain, ad: [1, 2, 3])
            #expect(box.count == cipher.nonceSize + size + Crypto.tagSize)
            #expect(key.open(box, ad: [1, 2, 3]).map { $0.withUnsafeBytes { Array($0) } } == plain)
            #expect(key.open(box, ad: [1, 2, 3], { Array($0) }) == plain)
            #expect(key.open(box, ad: [1, 2, 4]) == nil)
            #expect(other.open(box, ad: [1, 2, 3]) == nil)
            #expect(key.open(Array(box.dropLast()), ad: [1, 2, 3]) == nil)
            var flipped = box
            flipped[flipped.count / 2] ^= 0x80
            #expect(key.open(flipped, ad: [1, 2, 3], { _ in true }) == nil)
        }
        // Two seals of the same plaintext differ (random nonces).
        #expect(key.seal([9, 9], ad: []) != key.seal([9, 9], ad: []))
        // No other cipher opens its boxes, even under the same key.
        for otherCipher in RecordCipher.allCases where otherCipher != cipher && otherCipher.isAvailable {
            let sameKey = try #require(AEADKey(raw, cipher: otherCipher))
            #expect(sameKey.open(key.seal([1, 2, 3], ad: []), ad: []) == nil)
        }
    }
}
