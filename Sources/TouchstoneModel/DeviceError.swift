/// Why setting up the device failed: opening it, the passcode, enrolment.
public enum DeviceError: Error, Sendable, Hashable, Codable {
    /// The authentication the operation needs failed: a wrong passcode
    /// (`authenticationFailed`), no passcode set, the reader, a cancel.
    case authentication(AuthenticationError)
    /// `setPasscode` when one is set already.
    case passcodeAlreadySet
    /// The passcode cannot be used (it is empty), and why.
    case invalidPasscode(String)
    /// The finger to remove is not enrolled.
    case fingerNotEnrolled(Finger)
    /// Fingers are enrolled on another reader (its id): unenrol them first.
    case enrolledOnAnotherReader(String)
    /// The TPM failed or is unreachable.
    case tpm(TPMFailure)
    /// The state folder or the vault could not be used.
    case storage(StorageFailure)
    /// Stored data is damaged or was tampered with, and which.
    case corrupted(String)
    /// The simulator the configuration names cannot be used (its state
    /// folder too deep for its sockets, a folder that cannot be made).
    case simulator(SimulatorError)
    /// The daemon engine's `touchstoned` could not answer.
    case daemon(DaemonFailure)

    /// What to tell the user, or nil for a cancel.
    public var message: String? {
        switch self {
        case .authentication(let error): error.message
        case .passcodeAlreadySet: "A passcode is already set."
        case .invalidPasscode(let why): "The passcode cannot be used: \(why)."
        case .fingerNotEnrolled(let finger): "\(finger.fprintdName) is not enrolled."
        case .enrolledOnAnotherReader(let reader): "Fingers are enrolled on another reader (\(reader)); unenroll them first."
        case .tpm(let failure): "The TPM could not be used: \(failure)."
        case .storage(let failure): "Touchstone's state could not be used: \(failure.message)."
        case .corrupted(let what): "Stored data is corrupted or was tampered with: \(what)."
        case .simulator(let error): "The simulator can't be used: \(error)."
        case .daemon(let failure): "\(failure)."
        }
    }
}

extension DeviceError {
    /// The device view of an authentication error.
    package init(_ error: AuthenticationError) {
        switch error {
        case .tpm(let failure): self = .tpm(failure)
        case .storage(let failure): self = .storage(failure)
        case .corrupted(let what): self = .corrupted(what)
        default: self = .authentication(error)
        }
    }
}
