internal import CTSS2

/// What went wrong with the TPM, in terms a caller can act on.
///
/// Every TSS2 return code that reaches Touchstone becomes one of these; the
/// `.other` case keeps the raw code and `Tss2_RC_Decode`'s text.
package enum TPMError: Error, Equatable, Sendable {
    /// The TPM cannot be reached: no device node, swtpm not running, or the
    /// connection was lost. `detail` says which and where.
    case unreachable(detail: String)
    /// The TPM device exists but this user may not open it.
    case permissionDenied(path: String)
    /// The biometric branch's condition no longer holds: the enrolled-finger
    /// set (the domain state in the NV index) changed since the key was sealed,
    /// or the NV index is gone (the passcode was removed).
    case enrollmentChanged
    /// The boot state (PCR 7, Secure Boot policy) differs from when the key
    /// was sealed with PCR binding.
    case bootStateChanged
    /// The passcode counter is past the key's generation: the passcode was
    /// changed since this key was sealed (scheme 2), so it is an old copy.
    case passcodeChanged
    /// An NV index Touchstone relies on has another name than the one
    /// recorded when it was defined: someone undefined it and defined
    /// another one there.
    case nvIndexReplaced(handle: UInt32)
    /// The TPM rejected the passcode (its dictionary-attack counter rose).
    case wrongPasscode
    /// The TPM is in dictionary-attack lockout. `retryAfterSeconds` is the
    /// TPM's recovery interval (one failure is forgotten per interval), when
    /// it could be read.
    case lockout(retryAfterSeconds: UInt32?)
    /// The sealed blob was made by another TPM (its storage key differs).
    case foreignBlob
    /// The sealed blob is damaged: truncated, bit-flipped, or not a blob.
    case corruptedBlob(detail: String)
    /// The blob has no branch of the kind asked for (for example the passcode
    /// branch of a biometry-only key).
    case branchNotAvailable(String)
    /// The persistent storage key at the SRK handle is not the one this state
    /// was pinned to, or not of the expected shape.
    case storageKeyMismatch(detail: String)
    /// The enrolment-state NV index does not exist.
    case enrollmentIndexMissing(handle: UInt32)
    /// An NV index is already defined at this handle.
    case nvIndexInUse(handle: UInt32)
    /// The TPM has no room for another object, session or NV index.
    case outOfMemory(detail: String)
    /// The caller passed a value the TPM layer cannot use.
    case invalidArgument(String)
    /// Anything else, with the raw code and the TSS's own decoding.
    case other(code: UInt32, text: String)
}

extension TPMError: CustomStringConvertible {
    package var description: String {
        switch self {
        case .unreachable(let detail): return "TPM unreachable: \(detail)"
        case .permissionDenied(let path):
            return "permission denied opening \(path) (join the 'tss' group or install Touchstone's udev rule)"
        case .enrollmentChanged: return "the enrolled fingers changed since this key was sealed"
        case .bootStateChanged: return "the boot state (PCR 7) changed since this key was sealed"
        case .passcodeChanged: return "the passcode was changed since this key was sealed"
        case .nvIndexReplaced(let handle):
            return "the TPM's enrolment state was replaced (NV index 0x\(String(handle, radix: 16)) is not the one Touchstone defined)"
        case .wrongPasscode: return "wrong passcode"
        case .lockout(let seconds):
            if let seconds { return "the TPM is in dictionary-attack lockout; one attempt is restored every \(seconds) s" }
            return "the TPM is in dictionary-attack lockout"
        case .foreignBlob: return "this key was sealed by another TPM"
        case .corruptedBlob(let detail): return "sealed key corrupted: \(detail)"
        case .branchNotAvailable(let what): return "this key cannot be opened that way: \(what)"
        case .storageKeyMismatch(let detail): return "TPM storage key mismatch: \(detail)"
        case .enrollmentIndexMissing(let handle):
            return "the enrolment-state NV index 0x\(String(handle, radix: 16)) does not exist"
        case .nvIndexInUse(let handle): return "NV index 0x\(String(handle, radix: 16)) is already defined"
        case .outOfMemory(let detail): return "TPM out of memory: \(detail)"
        case .invalidArgument(let why): return "invalid argument: \(why)"
        case .other(let code, let text): return "TPM error 0x\(String(code, radix: 16)): \(text)"
        }
    }
}

/// The operation a return code came from, so the same code can mean
/// different things (AUTH_FAIL on Unseal through the passcode branch is a
/// wrong passcode; VALUE on PolicyOR is a policy mismatch).
enum TPMOperation {
    case connect
    case load
    case policyNV
    case policyNVPasscode
    case policyPCR
    case policyOR
    case unsealBiometric
    case unsealPasscode
    case unsealDevice
    case nvWrite
    case nvChangeAuth
    case incrementCounter
    case readCounter
    case objectChangeAuth
    case policySecret
    case generic
}

extension TPMError {
    /// Maps a non-success return code of `operation` to a typed error.
    /// `recovery` supplies the DA recovery interval for lockout errors.
    static func from(_ rc: ResponseCode, during operation: TPMOperation,
                     recovery: () -> UInt32? = { nil }) -> TPMError {
        if rc.isTransportFailure {
            return .unreachable(detail: "lost the connection to the TPM (\(rc.text))")
        }
        if !rc.isFromTPM {
            if rc.tssBase == ts_BASE_RC_MEMORY {
                return .outOfMemory(detail: "the TSS could not allocate memory")
            }
            return .other(code: rc.raw, text: rc.text)
        }
        let base = rc.base
        switch base {
        case ts_RC_LOCKOUT:
            return .lockout(retryAfterSeconds: recovery())
        case ts_RC_OBJECT_MEMORY, ts_RC_SESSION_MEMORY, ts_RC_MEMORY, ts_RC_OBJECT_HANDLES:
            return .outOfMemory(detail: rc.text)
        default:
            break
        }
        switch operation {
        case .unsealPasscode, .nvWrite, .nvChangeAuth, .objectChangeAuth, .incrementCounter:
            if base == ts_RC_AUTH_FAIL || base == ts_RC_BAD_AUTH { return .wrongPasscode }
        case .readCounter:
            if base == ts_RC_NV_UNINITIALIZED { return .invalidArgument("the counter has never been incremented") }
        case .policyNV, .unsealBiometric:
            if base == ts_RC_POLICY || base == ts_RC_POLICY_FAIL || base == ts_RC_HANDLE
                || base == ts_RC_NV_UNINITIALIZED {
                return .enrollmentChanged
            }
        case .policyNVPasscode:
            if base == ts_RC_POLICY || base == ts_RC_POLICY_FAIL || base == ts_RC_HANDLE
                || base == ts_RC_NV_UNINITIALIZED {
                return .passcodeChanged
            }
        case .policyPCR:
            break
        case .policyOR:
            if base == ts_RC_VALUE { return .corruptedBlob(detail: "the policy does not match the key's") }
        case .load:
            let damaged: Set<TSS2_RC> = [ts_RC_INTEGRITY, ts_RC_BINDING, ts_RC_SIZE, ts_RC_INSUFFICIENT,
                                         ts_RC_SENSITIVE, ts_RC_VALUE, ts_RC_KEY, ts_RC_ATTRIBUTES,
                                         ts_RC_TYPE, ts_RC_SCHEME, ts_RC_HASH]
            if damaged.contains(base) { return .corruptedBlob(detail: "the TPM refused to load it (\(rc.text))") }
        case .unsealDevice:
            if base == ts_RC_POLICY_FAIL { return .corruptedBlob(detail: "the key's policy is not the one recorded") }
        case .connect, .generic, .policySecret:
            break
        }
        return .other(code: rc.raw, text: rc.text)
    }
}
