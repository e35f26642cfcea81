public import CSecurityKeyAPI
import Glibc

// The security-key provider ABI of OpenSSH 9.2 (sk-api 0x000a0000): the
// four symbols ssh-sk-helper looks up with dlsym. What they return is
// allocated with malloc, for ssh to free; nothing of a private key is in
// it (the TPM keeps those).

@_cdecl("sk_api_version")
public func sk_api_version() -> UInt32 { TOUCHSTONE_SK_VERSION_MAJOR }

@_cdecl("sk_enroll")
public func sk_enroll(_ algorithm: UInt32, _ challenge: UnsafePointer<UInt8>?, _ challengeLength: Int,
                      _ application: UnsafePointer<CChar>?, _ flags: UInt8, _ pin: UnsafePointer<CChar>?,
                      _ options: UnsafeMutablePointer<UnsafeMutablePointer<sk_option>?>?,
                      _ response: UnsafeMutablePointer<UnsafeMutablePointer<sk_enroll_response>?>?) -> Int32 {
    guard let application, let response else { return TOUCHSTONE_SK_ERR_GENERAL }
    let challengeBytes = challenge.map { Array(UnsafeBufferPointer(start: $0, count: challengeLength)) } ?? []
    let name = String(cString: application)
    let given = optionPairs(options)
    let outcome = blocking {
        await SecurityKeyProvider.enroll(algorithm: algorithm, challenge: challengeBytes, application: name, flags: flags, options: given)
    }
    switch outcome {
    case .failure(let failure): return failure.code
    case .success(let enrolled):
        guard let answer = calloc(1, MemoryLayout<sk_enroll_response>.size)?.assumingMemoryBound(to: sk_enroll_response.self) else {
            return TOUCHSTONE_SK_ERR_GENERAL
        }
        fill(&answer.pointee, enrolled.flags, enrolled.publicPoint, enrolled.keyHandle)
        response.pointee = answer
        return 0
    }
}

@_cdecl("sk_sign")
public func sk_sign(_ algorithm: UInt32, _ data: UnsafePointer<UInt8>?, _ dataLength: Int, _ application: UnsafePointer<CChar>?,
                    _ keyHandle: UnsafePointer<UInt8>?, _ keyHandleLength: Int, _ flags: UInt8, _ pin: UnsafePointer<CChar>?,
                    _ options: UnsafeMutablePointer<UnsafeMutablePointer<sk_option>?>?,
                    _ response: UnsafeMutablePointer<UnsafeMutablePointer<sk_sign_response>?>?) -> Int32 {
    guard let application, let keyHandle, let response else { return TOUCHSTONE_SK_ERR_GENERAL }
    let message = data.map { Array(UnsafeBufferPointer(start: $0, count: dataLength)) } ?? []
    let handle = Array(UnsafeBufferPointer(start: keyHandle, count: keyHandleLength))
    let name = String(cString: application)
    let outcome = blocking {
        await SecurityKeyProvider.sign(algorithm: algorithm, data: message, application: name, keyHandle: handle, flags: flags)
    }
    switch outcome {
    case .failure(let failure): return failure.code
    case .success(let signed):
        guard let answer = calloc(1, MemoryLayout<sk_sign_response>.size)?.assumingMemoryBound(to: sk_sign_response.self) else {
            return TOUCHSTONE_SK_ERR_GENERAL
        }
        answer.pointee.flags = signed.flags
        answer.pointee.counter = signed.counter
        (answer.pointee.sig_r, answer.pointee.sig_r_len) = copied(signed.r)
        (answer.pointee.sig_s, answer.pointee.sig_s_len) = copied(signed.s)
        response.pointee = answer
        return 0
    }
}

@_cdecl("sk_load_resident_keys")
public func sk_load_resident_keys(_ pin: UnsafePointer<CChar>?, _ options: UnsafeMutablePointer<UnsafeMutablePointer<sk_option>?>?,
                                  _ residentKeys: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<sk_resident_key>?>?>?,
                                  _ count: UnsafeMutablePointer<Int>?) -> Int32 {
    guard let residentKeys, let count else { return TOUCHSTONE_SK_ERR_GENERAL }
    residentKeys.pointee = nil
    count.pointee = 0
    switch blocking({ await SecurityKeyProvider.residentKeys() }) {
    case .failure(let failure): return failure.code
    case .success(let keys):
        guard let list = calloc(max(keys.count, 1), MemoryLayout<UnsafeMutablePointer<sk_resident_key>?>.size)?
            .assumingMemoryBound(to: UnsafeMutablePointer<sk_resident_key>?.self) else { return TOUCHSTONE_SK_ERR_GENERAL }
        for (slot, key) in keys.enumerated() {
            guard let entry = calloc(1, MemoryLayout<sk_resident_key>.size)?.assumingMemoryBound(to: sk_resident_key.self) else {
                break  // what is filled so far is returned, for ssh to free
            }
            entry.pointee.alg = UInt32(TOUCHSTONE_SK_ECDSA)
            entry.pointee.slot = slot
            entry.pointee.application = strdup(key.application)
            entry.pointee.flags = key.flags
            fill(&entry.pointee.key, key.flags, key.publicPoint, key.keyHandle)
            (entry.pointee.user_id, entry.pointee.user_id_len) = copied(key.userID)
            list[slot] = entry
            count.pointee = slot + 1
        }
        residentKeys.pointee = list
        return 0
    }
}

/// The options ssh passes (`device`, `user`), by name.
private func optionPairs(_ options: UnsafeMutablePointer<UnsafeMutablePointer<sk_option>?>?) -> [String: String] {
    guard let options else { return [:] }
    var pairs: [String: String] = [:]
    var index = 0
    while let option = options[index] {
        if let name = option.pointee.name { pairs[String(cString: name)] = option.pointee.value.map { String(cString: $0) } ?? "" }
        index += 1
    }
    return pairs
}

/// An enrolment's answer: the flags, the public point, the key handle; no
/// attestation (none is made: docs/ssh.md).
private func fill(_ response: inout sk_enroll_response, _ flags: UInt8, _ publicPoint: [UInt8], _ keyHandle: [UInt8]) {
    response.flags = flags
    (response.public_key, response.public_key_len) = copied(publicPoint)
    (response.key_handle, response.key_handle_len) = copied(keyHandle)
}

/// `bytes` in memory of malloc's, for ssh to free.
private func copied(_ bytes: [UInt8]) -> (UnsafeMutablePointer<UInt8>?, Int) {
    guard !bytes.isEmpty, let memory = malloc(bytes.count)?.assumingMemoryBound(to: UInt8.self) else { return (nil, 0) }
    memory.initialize(from: bytes, count: bytes.count)
    return (memory, bytes.count)
}
