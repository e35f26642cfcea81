import FoundationEssentials
import Glibc

/// A client's call: one `Engine` method. Secrets travel in the frame's
/// secrets part, in the order each case names.
package enum DaemonCall: Codable, Sendable, Hashable {
    case status
    case passcodeIsSet
    /// Secrets: the passcode.
    case setPasscode
    /// Secrets: the old passcode, the new one.
    case changePasscode
    /// Secrets: the passcode.
    case removePasscode
    case enrolledFingers
    /// Secrets: the passcode. Scan events come back as event frames.
    case enroll(finger: Finger, timeoutMilliseconds: Int)
    /// Secrets: the passcode. `finger` nil: every finger.
    case unenroll(finger: Finger?)
    case availability(AuthenticationPolicy)
    case domainState
    /// `interactive`: the client has an interaction to answer prompts.
    case authenticate(access: AccessControl, reason: String, interactive: Bool, interactionNotAllowed: Bool,
                      touchTimeoutMilliseconds: Int)
    /// Secrets: the item's secret.
    case add(attributes: ItemAttributes)
    case openAccess(service: String, account: String)
    /// `grant`: one this connection's `authenticate` returned.
    case secret(service: String, account: String, grant: UInt64?)
    /// Secrets: the new secret, when `newSecret`.
    case update(service: String, account: String, newSecret: Bool, label: FieldChange<String>?,
                comment: FieldChange<String>?, generic: FieldChange<Data>?, grant: UInt64?)
    case delete(service: String, account: String)
    case items(service: String?)
    case attributes(service: String, account: String)
    /// An import's enrolled set. Secrets: the passcode, then each finger's
    /// print, in the order of `fingers`.
    case importFingers(driver: String, deviceID: String, fingers: [Finger])
    /// `touchstone get` in one call: the item's access, an authentication
    /// for it when it has one (interactive, `reason` shown, touches waited
    /// for at most the timeout), then its secret (`.secret`, the secret
    /// attached). Every failure is a `.keychain` outcome, as the three
    /// calls' failures read on the client.
    case getSecret(service: String, account: String, reason: String, touchTimeoutMilliseconds: Int)
    /// Items by reference (the Secret Service).
    case search(query: [String: String])
    /// Secrets: the item's secret.
    case addItem(attributes: ItemAttributes, replace: Bool)
    case item(ItemReference)
    case openItemAccess(ItemReference)
    /// The result: `.attributes`, the secret attached.
    case itemSecret(ItemReference, grant: UInt64?)
    /// Secrets: the new secret, when `newSecret`.
    case updateItem(ItemReference, newSecret: Bool, label: FieldChange<String>?, searchAttributes: [String: String]?,
                    contentType: FieldChange<String>?, grant: UInt64?)
    case deleteItem(ItemReference)
    /// ssh keys (docs/ssh.md): made, listed, deleted, signed with by the
    /// daemon's TPM; nothing of a private key ever crosses the socket.
    case createSSHKey(name: String, comment: String, access: AccessControl)
    case sshKeys
    case deleteSSHKey(name: String)
    case sshKeyOpenAccess(name: String)
    /// `digest`: SHA-256 of the data to sign; `grant` as for `secret`.
    case signSSH(name: String, digest: [UInt8], grant: UInt64?)

    /// A short name for the daemon's log (no item names, no secrets).
    package var name: String {
        switch self {
        case .status: "status"
        case .passcodeIsSet: "passcode-is-set"
        case .setPasscode: "passcode-set"
        case .changePasscode: "passcode-change"
        case .removePasscode: "passcode-remove"
        case .enrolledFingers: "fingers"
        case .enroll: "enroll"
        case .unenroll: "unenroll"
        case .availability: "availability"
        case .domainState: "domain-state"
        case .authenticate: "authenticate"
        case .add: "add"
        case .openAccess: "open-access"
        case .secret: "get"
        case .update: "update"
        case .delete: "delete"
        case .items: "list"
        case .attributes: "attributes"
        case .importFingers: "import-fingers"
        case .getSecret: "get"
        case .search: "search"
        case .addItem: "add"
        case .item: "item"
        case .openItemAccess: "open-access"
        case .itemSecret: "get"
        case .updateItem: "update"
        case .deleteItem: "delete"
        case .createSSHKey: "ssh-key-create"
        case .sshKeys: "ssh-key-list"
        case .deleteSSHKey: "ssh-key-delete"
        case .sshKeyOpenAccess: "ssh-key-open-access"
        case .signSSH: "ssh-sign"
        }
    }

    /// How many secrets the call carries.
    package var secretCount: ClosedRange<Int> {
        switch self {
        case .setPasscode, .removePasscode, .enroll, .unenroll, .add, .addItem: 1...1
        case .changePasscode: 2...2
        case .update(_, _, let newSecret, _, _, _, _), .updateItem(_, let newSecret, _, _, _, _): newSecret ? 1...1 : 0...0
        case .importFingers(_, _, let fingers): (1 + fingers.count)...(1 + fingers.count)
        default: 0...0
        }
    }
}

/// A change to an optional field: `value` nil clears it.
package struct FieldChange<T: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    package var value: T?
    package init(_ value: T?) { self.value = value }
}

/// The request frame's control part.
package struct DaemonRequest: Codable, Sendable {
    package var call: DaemonCall
    /// What the client says it is (logged as the client's word; the daemon
    /// logs the kernel's pid and uid beside it).
    package var program: String?

    package init(call: DaemonCall, program: String?) {
        self.call = call
        self.program = program
    }
}

/// What a call returned.
package enum DaemonResult: Codable, Sendable {
    case none
    case bool(Bool)
    case count(Int)
    case status(DaemonStatus)
    case fingers([Finger])
    case availability(Availability)
    case domainState(Data?)
    /// A grant this connection holds; what it proved.
    case grant(id: UInt64, passcode: Bool, biometricMatch: Bool)
    case access(AccessControl)
    case items([ListedItem])
    case attributes(ItemAttributes)
    /// The secret is the response's first secret.
    case secret
    case referenced([ReferencedItem])
    case added(ItemReference, replaced: [ItemReference])
    case sshKey(SSHKeyInfo)
    case sshKeys([SSHKeyInfo])
    case signature(r: [UInt8], s: [UInt8])
}

/// The response frame's control part.
package enum DaemonOutcome: Codable, Sendable {
    case success(DaemonResult)
    case device(DeviceError)
    case keychain(KeychainError)
    case authentication(AuthenticationError)
    /// The daemon did not take the request (malformed, not allowed); the
    /// connection closes after it.
    case refused(String)
}

/// A prompt frame's control part: the call needs the person.
package struct DaemonPrompt: Codable, Sendable {
    package enum Need: Codable, Sendable {
        /// Show that a touch is awaited; answer `.fallback` when the person
        /// asks for the passcode instead (allowed when `passcodeAllowed`).
        case touch(reason: String, passcodeAllowed: Bool)
        /// Answer with the passcode (`.passcode`, the secret attached).
        case passcode(reason: String)
    }
    package var id: UInt32
    package var need: Need

    package init(id: UInt32, need: Need) {
        self.id = id
        self.need = need
    }
}

/// A reply frame's control part.
package struct DaemonReply: Codable, Sendable {
    package enum Answer: Codable, Sendable {
        case fallback
        /// The reply's first secret is the passcode.
        case passcode
        case failed(AuthenticationError)
    }
    package var id: UInt32
    package var answer: Answer

    package init(id: UInt32, answer: Answer) {
        self.id = id
        self.answer = answer
    }
}

/// A cancel frame's control part: the prompt `id` is no longer needed.
package struct DaemonCancel: Codable, Sendable {
    package var id: UInt32
    package init(id: UInt32) { self.id = id }
}

/// `Status` as it crosses the socket (its own `Encodable` is the CLI's
/// `--json` form, which leaves out the problems' details).
package struct DaemonStatus: Codable, Sendable {
    var home: String
    var reader: Status.Reader
    var tpm: Status.TPM
    var vault: Status.Vault
    var passcodeSet: Bool?
    var fingers: [Finger]
    var fingersProblem: DeviceError?
    var biometryLockout: Bool?
    var failedAttempts: Int?
    var items: Int?
    var problem: DeviceError?

    package init(_ status: Status) {
        home = status.home
        reader = status.reader
        tpm = status.tpm
        vault = status.vault
        passcodeSet = status.passcodeSet
        fingers = status.fingers
        fingersProblem = status.fingersProblem
        biometryLockout = status.biometryLockout
        failedAttempts = status.failedAttempts
        items = status.items
        problem = status.problem
    }

    package var status: Status {
        var status = Status(home: home, reader: reader, tpm: tpm, vault: vault, passcodeSet: passcodeSet, fingers: fingers,
                            biometryLockout: biometryLockout, failedAttempts: failedAttempts, items: items, problem: problem)
        status.fingersProblem = fingersProblem
        return status
    }
}
