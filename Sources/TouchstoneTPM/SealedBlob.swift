internal import CSodium
import TouchstoneSecure

/// A key sealed to the TPM, as stored on disk.
///
/// Layout (big-endian). Version 1 holds the first release's conditions;
/// version 2 (written when a condition is a counter) adds flags 8 and 16;
/// version 3 (written for a key sealed through the daemon's gate) adds
/// flag 32 and the gate's name after the storage key's:
///
///     "TSBLOB" | version u8 | flags u8 (1 biometric, 2 passcode, 4 PCR 7,
///                                       8 biometric counter, 16 passcode counter)
///     srkName      u16 len + bytes   name of the storage key it was sealed under
///     [flag 32]    gateName u16 len + bytes   the daemon's gate object
///     [biometric]  nvIndex u32 | nvName u16+bytes
///                  | domainState u16+bytes   (flag 8 clear)
///                  | counter u64             (flag 8: the generation, at most)
///     [PCR 7]      pcrValue u16+bytes   PCR 7 at seal time
///     [flag 16]    nvIndex u32 | nvName u16+bytes | counter u64
///     public       u32 len + TPM2B_PUBLIC (marshalled)
///     private      u32 len + TPM2B_PRIVATE (marshalled)
///     check        16 bytes: BLAKE2b-128 of the key under a fixed domain key
///     checksum     32 bytes: BLAKE2b-256 over everything before it
///
/// The checksum tells damage apart from "another TPM": a blob whose bytes are
/// intact but whose storage key is not this TPM's is foreign. The check value
/// catches an unseal that returned wrong bytes (it reveals nothing of a
/// 256-bit random key).
package struct SealedBlob: Equatable, Sendable {
    package var policy: SealPolicy
    package var srkName: [UInt8]
    /// The name of the biometric condition's NV index.
    package var nvName: [UInt8]
    /// The name of the passcode counter (scheme 2).
    package var passcodeNVName: [UInt8]
    package var pcr7Value: [UInt8]
    package var publicArea: [UInt8]
    package var privateArea: [UInt8]
    package var check: [UInt8]

    static let magic = Array("TSBLOB".utf8)
    static let checkSize = 16
    static let checksumSize = 32
    /// Upper bound on a serialized blob; anything larger is rejected unread.
    package static let maximumSize = 4096

    package func serialized() -> [UInt8] {
        var w = ByteWriter()
        w.raw(Self.magic)
        w.u8(policy.gateName != nil ? 3 : policy.usesCounters ? 2 : 1)
        var flags: UInt8 = 0
        if policy.biometric != nil { flags |= 1 }
        if policy.passcode { flags |= 2 }
        if policy.biometric?.bindPCR7 == true { flags |= 4 }
        if policy.biometric?.counterAtMost != nil { flags |= 8 }
        if policy.passcodeCounter != nil { flags |= 16 }
        if policy.gateName != nil { flags |= 32 }
        w.u8(flags)
        w.sized16(srkName)
        if let gate = policy.gateName { w.sized16(gate) }
        if let bio = policy.biometric {
            w.u32(bio.nvIndex)
            w.sized16(nvName)
            if let generation = bio.counterAtMost { w.u64(generation) } else { w.sized16(bio.domainState) }
            if bio.bindPCR7 { w.sized16(pcr7Value) }
        }
        if let counter = policy.passcodeCounter {
            w.u32(counter.nvIndex)
            w.sized16(passcodeNVName)
            w.u64(counter.atMost)
        }
        w.sized32(publicArea)
        w.sized32(privateArea)
        w.raw(check)
        let sum = Self.checksum(w.bytes)
        w.raw(sum)
        return w.bytes
    }

    /// Parses a serialized blob. Any damage (truncation, flipped bits, junk,
    /// an unknown version) throws `TPMError.corruptedBlob`; it never traps.
    package init(serialized bytes: [UInt8]) throws(TPMError) {
        guard bytes.count <= Self.maximumSize else {
            throw TPMError.corruptedBlob(detail: "\(bytes.count) bytes is larger than any sealed key")
        }
        guard bytes.count > Self.magic.count + Self.checksumSize, Array(bytes.prefix(Self.magic.count)) == Self.magic else {
            throw TPMError.corruptedBlob(detail: "not a Touchstone sealed key")
        }
        let body = Array(bytes.dropLast(Self.checksumSize))
        guard sodium_memcmp(Self.checksum(body), Array(bytes.suffix(Self.checksumSize)), Self.checksumSize) == 0 else {
            throw TPMError.corruptedBlob(detail: "checksum mismatch (the stored bytes were altered)")
        }
        var r = BlobReader(reader: ByteReader(body))
        _ = try r.raw(Self.magic.count, "magic")
        let version = try r.u8("version")
        guard (1...3).contains(version) else {
            throw TPMError.corruptedBlob(detail: "unknown sealed-key version \(version)")
        }
        let flags = try r.u8("flags")
        // Version 1 knows flags 1, 2, 4; version 2 adds the counters (at
        // least one of them). PCR 7 and a biometric counter need the
        // biometric branch, a passcode counter the passcode branch.
        // Version 3 adds the gate (flag 32, which it must carry).
        let known: UInt8 = version == 1 ? 7 : version == 2 ? 31 : 63
        guard flags & ~known == 0, flags & 4 == 0 || flags & 1 != 0, flags & 8 == 0 || flags & 1 != 0,
              flags & 16 == 0 || flags & 2 != 0, version != 2 || flags & 24 != 0,
              version != 3 || flags & 32 != 0 else {
            throw TPMError.corruptedBlob(detail: "unknown flags 0x\(String(flags, radix: 16))")
        }
        srkName = try r.sized16("storage key name", max: 68)
        let gateName = flags & 32 != 0 ? try r.sized16("gate name", max: 68) : nil
        nvName = []
        passcodeNVName = []
        pcr7Value = []
        var biometric: BiometricCondition?
        if flags & 1 != 0 {
            let index = try r.u32("NV index")
            nvName = try r.sized16("NV name", max: 68)
            if flags & 8 != 0 {
                biometric = BiometricCondition(counter: index, atMost: try r.u64("generation"), bindPCR7: flags & 4 != 0)
            } else {
                let state = try r.sized16("domain state", max: 64)
                biometric = BiometricCondition(nvIndex: index, domainState: state, bindPCR7: flags & 4 != 0)
            }
            if flags & 4 != 0 { pcr7Value = try r.sized16("PCR 7 value", max: 64) }
        }
        var passcodeCounter: CounterCondition?
        if flags & 16 != 0 {
            let index = try r.u32("passcode counter")
            passcodeNVName = try r.sized16("passcode counter name", max: 68)
            passcodeCounter = CounterCondition(counter: index, atMost: try r.u64("passcode generation"))
        }
        policy = SealPolicy(biometric: biometric, passcode: flags & 2 != 0, passcodeCounter: passcodeCounter)
        policy.gateName = gateName
        publicArea = try r.sized32("public area", max: 1024)
        privateArea = try r.sized32("private area", max: 1024)
        check = try r.raw(Self.checkSize, "check value")
        guard r.reader.isAtEnd else { throw TPMError.corruptedBlob(detail: "\(r.reader.remaining) trailing bytes") }
    }

    init(policy: SealPolicy, srkName: [UInt8], nvName: [UInt8], passcodeNVName: [UInt8] = [], pcr7Value: [UInt8],
         publicArea: [UInt8], privateArea: [UInt8], check: [UInt8]) {
        self.policy = policy
        self.srkName = srkName
        self.nvName = nvName
        self.passcodeNVName = passcodeNVName
        self.pcr7Value = pcr7Value
        self.publicArea = publicArea
        self.privateArea = privateArea
        self.check = check
    }

    static func checksum(_ bytes: [UInt8]) -> [UInt8] {
        ensureSodium()
        var out = [UInt8](repeating: 0, count: checksumSize)
        _ = crypto_generichash(&out, checksumSize, bytes, UInt64(bytes.count), nil, 0)
        return out
    }

    private static let checkDomain = Array("touchstone/sealed-key-check/v1".utf8)

    /// The check value of `key`.
    static func checkValue(of key: SecureBytes) -> [UInt8] {
        ensureSodium()
        var out = [UInt8](repeating: 0, count: checkSize)
        key.withUnsafeBytes { k in
            _ = crypto_generichash(&out, checkSize, k.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                   UInt64(k.count), checkDomain, checkDomain.count)
        }
        return out
    }
}

/// `ByteReader`'s reads of a blob's body, where running out of bytes (or a
/// length over its limit) is damage to the blob.
private struct BlobReader {
    var reader: ByteReader

    private static func damaged(_ error: ByteReader.Truncated) -> TPMError {
        .corruptedBlob(detail: "truncated at \(error.what)")
    }

    mutating func raw(_ count: Int, _ what: String) throws(TPMError) -> [UInt8] {
        do throws(ByteReader.Truncated) { return try reader.raw(count, what) } catch { throw Self.damaged(error) }
    }
    mutating func u8(_ what: String) throws(TPMError) -> UInt8 {
        do throws(ByteReader.Truncated) { return try reader.u8(what) } catch { throw Self.damaged(error) }
    }
    mutating func u32(_ what: String) throws(TPMError) -> UInt32 {
        do throws(ByteReader.Truncated) { return try reader.u32(what) } catch { throw Self.damaged(error) }
    }
    mutating func u64(_ what: String) throws(TPMError) -> UInt64 {
        do throws(ByteReader.Truncated) { return try reader.u64(what) } catch { throw Self.damaged(error) }
    }
    mutating func sized16(_ what: String, max: Int) throws(TPMError) -> [UInt8] {
        do throws(ByteReader.Truncated) { return try reader.sized16(what, max: max) } catch { throw Self.damaged(error) }
    }
    mutating func sized32(_ what: String, max: Int) throws(TPMError) -> [UInt8] {
        do throws(ByteReader.Truncated) { return try reader.sized32(what, max: max) } catch { throw Self.damaged(error) }
    }
}
