import TouchstoneModel

extension TPMError {
    /// The public view of a TPM failure (a wrong passcode, the lockout, a
    /// changed enrolment and a damaged blob have public errors of their own).
    package var failure: TPMFailure {
        switch self {
        case .unreachable: TPMFailure(.unreachable, description)
        case .permissionDenied: TPMFailure(.permissionDenied, description)
        case .foreignBlob, .storageKeyMismatch: TPMFailure(.otherTPM, description)
        case .outOfMemory: TPMFailure(.outOfMemory, description)
        case .other(let code, _): TPMFailure(.failed, description, code: code)
        case .enrollmentChanged, .bootStateChanged, .passcodeChanged, .nvIndexReplaced, .wrongPasscode, .lockout,
             .corruptedBlob, .branchNotAvailable, .enrollmentIndexMissing, .nvIndexInUse, .invalidArgument:
            TPMFailure(.failed, description)
        }
    }
}
