import TouchstoneTPM

/// What went wrong in the vault.
package enum VaultError: Error, Equatable, Sendable {
    case itemNotFound
    case duplicateItem
    /// The stored data was altered or damaged (AEAD failure, bad record).
    case corrupted(String)
    /// Every way into the item is closed: its biometric class key was sealed
    /// for an enrolled-finger set that no longer exists.
    case itemInvalidated
    /// The item needs authentication that was not provided.
    case authenticationRequired
    case passcodeNotSet
    case passcodeAlreadySet
    /// The database was made with another TPM (or the TPM was cleared).
    case otherTPM
    /// The database's schema is newer than this Touchstone.
    case futureSchema(Int)
    /// The state directory or database could not be used.
    case storage(StorageFailure)
    case invalidInput(String)
    case tpm(TPMError)
    /// The enrolled fingers' store (the vault's `fingers` records) does not
    /// hold the set the TPM's enrolment counter says is live: a record
    /// added, replaced or removed outside an enrolment change. No finger
    /// matches until the fingers are enrolled again; the passcode still
    /// opens what it may.
    case fingersTampered(String)
    /// Another process changed the fingers or the passcode while this
    /// change was being made: nothing of this one was stored; it can be
    /// made again.
    case concurrentChange
}

extension VaultError: CustomStringConvertible {
    package var description: String {
        switch self {
        case .itemNotFound: return "item not found"
        case .duplicateItem: return "an item with this service and account already exists"
        case .corrupted(let what): return "stored data corrupted or tampered with: \(what)"
        case .itemInvalidated: return "the item was invalidated: the enrolled fingers changed and it allows no other way in"
        case .authenticationRequired: return "authentication required"
        case .passcodeNotSet: return "no passcode is set"
        case .passcodeAlreadySet: return "a passcode is already set"
        case .otherTPM: return "this vault was made with another TPM (or the TPM was cleared); its keys cannot be opened here"
        case .futureSchema(let v): return "the vault's format (version \(v)) is newer than this Touchstone"
        case .storage(let failure): return failure.description
        case .invalidInput(let what): return "invalid input: \(what)"
        case .tpm(let error): return error.description
        case .concurrentChange: return "another Touchstone process changed the fingers or the passcode meanwhile; nothing was changed here, try again"
        case .fingersTampered(let why):
            return "the enrolled fingers' store was altered outside an enrolment: \(why); no finger matches until every finger is unenrolled (with the passcode) and enrolled again"
        }
    }
}
