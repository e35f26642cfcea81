import Foundation
import Touchstone

/// An operation the in-memory device carries out (every operation an app
/// reaches through the public API; the daemon's own, such as
/// `touchstone get` in one call, are not among them).
protocol InMemoryOperation: EngineOperation {
    func run(in engine: InMemoryEngine) async throws(Failure) -> Response
}

extension InMemoryEngine {
    func call<R: EngineOperation>(_ request: R, interaction: (any AuthenticationInteraction)?) async throws(R.Failure) -> R.Response {
        guard let operation = request as? any InMemoryOperation else {
            preconditionFailure("\(R.name) is not an operation of the in-memory device")
        }
        do {
            // The same R, opened from the existential: the casts back hold.
            return try await run(operation) as! R.Response
        } catch {
            throw error as! R.Failure
        }
    }

    private func run<O: InMemoryOperation>(_ operation: O) async throws -> any Sendable {
        try await operation.run(in: self)
    }
}

extension Calls.Status: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(DeviceError) -> DaemonStatus { DaemonStatus(await engine.status()) }
}

extension Calls.PasscodeIsSet: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(DeviceError) -> Bool { try await engine.passcodeIsSet() }
}

extension Calls.SetPasscode: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(DeviceError) -> Done {
        try await engine.setPasscode(passcode.bytes)
        return Done()
    }
}

extension Calls.ChangePasscode: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(DeviceError) -> Done {
        try await engine.changePasscode(from: old.bytes, to: new.bytes)
        return Done()
    }
}

extension Calls.RemovePasscode: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(DeviceError) -> Int { try await engine.removePasscode(passcode.bytes) }
}

extension Calls.EnrolledFingers: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(DeviceError) -> [Finger] { try await engine.enrolledFingers() }
}

extension Calls.Enroll: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(DeviceError) -> Done {
        try await engine.enroll(finger, passcode: passcode.bytes)
        return Done()
    }
}

extension Calls.Unenroll: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(DeviceError) -> Done {
        try await engine.unenroll(finger, passcode: passcode.bytes)
        return Done()
    }
}

extension Calls.SetMatchingTouches: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(DeviceError) -> Done {
        try await engine.setMatchingTouches(touches, passcode: passcode.bytes)
        return Done()
    }
}

extension Calls.Availability: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(AuthenticationError) -> TouchstoneModel.Availability {
        await engine.availability(policy)
    }
}

extension Calls.DomainState: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(AuthenticationError) -> Data? { try await engine.domainState() }
}

extension Calls.Authenticate: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(AuthenticationError) -> GrantReference {
        GrantReference(presenting: try await engine.authenticate(reason: reasonText))
    }
}

extension Calls.Add: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> Done {
        try await engine.add(secret.bytes, attributes: attributes)
        return Done()
    }
}

extension Calls.OpenAccess: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> AccessControl {
        try await engine.openAccess(service: service, account: account)
    }
}

extension Calls.Secret: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> WireSecret {
        WireSecret(try await engine.secret(service: service, account: account, grant: grant))
    }
}

extension Calls.Update: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> Done {
        try await engine.update(service: service, account: account, secret: secret?.bytes, label: label.map(\.value),
                                comment: comment.map(\.value), generic: generic.map(\.value), grant: grant)
        return Done()
    }
}

extension Calls.Delete: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> Done {
        try await engine.delete(service: service, account: account)
        return Done()
    }
}

extension Calls.Items: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> [ListedItem] { try await engine.items(service: service) }
}

extension Calls.Attributes: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> ItemAttributes {
        try await engine.attributes(service: service, account: account)
    }
}

extension Calls.Search: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> [ReferencedItem] { try await engine.search(query) }
}

extension Calls.AddItem: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> Added {
        let (reference, replaced) = try await engine.add(secret.bytes, attributes: attributes, replace: replace)
        return Added(reference: reference, replaced: replaced)
    }
}

extension Calls.Item: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> ReferencedItem { try await engine.item(reference) }
}

extension Calls.OpenItemAccess: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> AccessControl { try await engine.openAccess(reference) }
}

extension Calls.ItemSecret: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> Opened {
        let (secret, attributes) = try await engine.secret(reference, grant: grant)
        return Opened(secret: secret, attributes: attributes)
    }
}

extension Calls.UpdateItem: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> Done {
        try await engine.update(reference, secret: secret?.bytes, label: label.map(\.value), searchAttributes: searchAttributes,
                                contentType: contentType.map(\.value), grant: grant)
        return Done()
    }
}

extension Calls.DeleteItem: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> Done {
        try await engine.delete(reference)
        return Done()
    }
}

extension Calls.CreateSSHKey: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> SSHKeyInfo {
        try await engine.createSSHKey(name: name, comment: comment, access: access)
    }
}

extension Calls.SSHKeys: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> [SSHKeyInfo] { try await engine.sshKeys() }
}

extension Calls.DeleteSSHKey: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> Done {
        try await engine.deleteSSHKey(name: name)
        return Done()
    }
}

extension Calls.SSHKeyOpenAccess: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> AccessControl { try await engine.sshKeyOpenAccess(name: name) }
}

extension Calls.SignSSH: InMemoryOperation {
    func run(in engine: InMemoryEngine) async throws(KeychainError) -> SSHSignature {
        try await engine.signSSH(name: name, digest: digest, grant: grant)
    }
}
