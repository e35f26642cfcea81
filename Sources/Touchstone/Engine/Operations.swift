import Foundation
import TouchstoneFingerprint
import TouchstoneSecure

/// Every operation the engines carry out, by name: what `touchstoned`
/// serves, and what docs/daemon.md lists (`DaemonProtocolDocTests`).
package enum EngineOperations {
    package static let all: [any EngineOperation.Type] = [
        Calls.Status.self, Calls.PasscodeIsSet.self, Calls.SetPasscode.self, Calls.ChangePasscode.self,
        Calls.RemovePasscode.self, Calls.EnrolledFingers.self, Calls.Enroll.self, Calls.Unenroll.self,
        Calls.ImportFingers.self, Calls.SetMatchingTouches.self,
        Calls.Availability.self, Calls.DomainState.self, Calls.Authenticate.self,
        Calls.Add.self, Calls.OpenAccess.self, Calls.Secret.self, Calls.GetSecret.self, Calls.Update.self,
        Calls.Delete.self, Calls.Items.self, Calls.Attributes.self,
        Calls.Search.self, Calls.AddItem.self, Calls.Item.self, Calls.OpenItemAccess.self, Calls.ItemSecret.self,
        Calls.UpdateItem.self, Calls.DeleteItem.self,
        Calls.CreateSSHKey.self, Calls.SSHKeys.self, Calls.DeleteSSHKey.self, Calls.SSHKeyOpenAccess.self,
        Calls.SignSSH.self,
        Calls.CreateFIDOCredential.self, Calls.FIDOCredentials.self, Calls.DeleteFIDOCredential.self, Calls.AssertFIDO.self,
        Calls.MakeFIDOCredential.self, Calls.DeleteFIDOCredentialByTouch.self, Calls.UpdateFIDOUser.self, Calls.ResetFIDO.self,
    ]

    /// The operations by name.
    package static let byName: [String: any EngineOperation.Type] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
}

// MARK: - The device

extension Calls.Status: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> DaemonStatus {
        var status = await engine.status()
        if let choice = engine.daemon?.readerChoice { status.reader.selection = choice }
        return DaemonStatus(status)
    }

    /// The status of a state folder whose engine does not open, part by part.
    package static func unopened(_ configuration: Configuration, readerChoice: String) async -> DaemonStatus? {
        var status = await InProcessEngine.status(of: configuration)
        status.reader.selection = readerChoice
        return DaemonStatus(status)
    }
}

extension Calls.PasscodeIsSet: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> Bool {
        try await engine.passcodeIsSet()
    }
}

extension Calls.SetPasscode: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> Done {
        try await engine.setPasscode(passcode.bytes)
        return Done()
    }
}

extension Calls.ChangePasscode: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> Done {
        try await engine.changePasscode(from: old.bytes, to: new.bytes)
        return Done()
    }
}

extension Calls.RemovePasscode: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> Int {
        try await engine.removePasscode(passcode.bytes)
    }
}

extension Calls.EnrolledFingers: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> [Finger] {
        try await engine.enrolledFingers()
    }
}

extension Calls.Enroll: EngineOperation {
    package static var releasesReader: Bool { true }

    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> Done {
        // Scan events come on libfprint's thread; the interaction gets them
        // in order, each delivered before the operation answers.
        let (events, continuation) = AsyncStream.makeStream(of: ScanEvent.self)
        let delivery = Task { for await event in events { await interaction?.scanEvent(event) } }
        let enrolled: Result<Void, DeviceError>
        do {
            try await engine.enroll(finger, passcode: passcode.bytes, timeout: .milliseconds(max(timeoutMilliseconds, 1))) {
                continuation.yield($0)
            }
            enrolled = .success(())
        } catch {
            enrolled = .failure(error)
        }
        continuation.finish()
        await delivery.value
        try enrolled.get()
        return Done()
    }
}

extension Calls.Unenroll: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> Done {
        try await engine.unenroll(finger, passcode: passcode.bytes)
        return Done()
    }
}

extension Calls.SetMatchingTouches: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> Done {
        try await engine.setMatchingTouches(touches, passcode: passcode.bytes)
        return Done()
    }
}

extension Calls.ImportFingers: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(DeviceError) -> Done {
        // Well formed: checked where it was made, or as it arrived (decoding).
        let reader = ReaderIdentity(driver: driver, deviceID: deviceID)
        let enrolled = zip(fingers, prints).map { finger, print in
            EnrolledPrint(finger: finger, reader: reader, data: print.bytes.withUnsafeBytes { Array($0) })
        }
        try await engine.throttled(passcode.bytes, writesNV: true) { () async throws(DeviceError) in
            try await engine.importFingers(enrolled, reader: reader, passcode: passcode.bytes)
        }
        return Done()
    }
}

// MARK: - Authentication

extension Calls.Availability: EngineOperation {
    package static var releasesReader: Bool { true }

    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(AuthenticationError) -> TouchstoneModel.Availability {
        await engine.availability(policy)
    }
}

extension Calls.DomainState: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(AuthenticationError) -> Data? {
        try await engine.domainState()
    }
}

extension Calls.Authenticate: EngineOperation {
    package static var releasesReader: Bool { true }

    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(AuthenticationError) -> GrantReference {
        let settings = ContextSettings(interaction: interaction, interactionNotAllowed: interactionNotAllowed,
                                       touchTimeout: .milliseconds(max(touchTimeoutMilliseconds, 1)))
        let grant = try await engine.authenticate(access, reason: reasonText, settings: settings)
        return GrantReference(presenting: grant)
    }
}

// MARK: - Items

extension Calls.Add: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Done {
        try await engine.add(secret.bytes, attributes: attributes)
        return Done()
    }
}

extension Calls.OpenAccess: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> AccessControl {
        try await engine.openAccess(service: service, account: account)
    }
}

extension Calls.Secret: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> WireSecret {
        WireSecret(try await engine.secret(service: service, account: account, grant: grant))
    }
}

extension Calls.GetSecret: EngineOperation {
    /// The item's access, an authentication for it when it has one (the
    /// reader released after it), then its secret; an authentication's
    /// failure as the keychain reads it, so the command says the same as
    /// with the three separate operations.
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> WireSecret {
        let access = try await engine.openAccess(service: service, account: account)
        var grant: (any EngineGrant)?
        if !access.flags.isEmpty {
            let settings = ContextSettings(interaction: interaction, interactionNotAllowed: false,
                                           touchTimeout: .milliseconds(max(touchTimeoutMilliseconds, 1)))
            do {
                grant = try await engine.authenticate(access, reason: reasonText, settings: settings)
            } catch {
                await engine.close()
                throw KeychainError(error)
            }
            await engine.close()
        }
        return WireSecret(try await engine.secret(service: service, account: account, grant: grant))
    }
}

extension Calls.Update: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Done {
        try await engine.update(service: service, account: account, secret: secret?.bytes, label: label.map(\.value),
                                comment: comment.map(\.value), generic: generic.map(\.value), grant: grant)
        return Done()
    }
}

extension Calls.Delete: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Done {
        try await engine.delete(service: service, account: account)
        return Done()
    }
}

extension Calls.Items: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> [ListedItem] {
        try await engine.items(service: service)
    }
}

extension Calls.Attributes: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> ItemAttributes {
        try await engine.attributes(service: service, account: account)
    }
}

// MARK: - Items by reference

extension Calls.Search: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> [ReferencedItem] {
        try await engine.search(query)
    }
}

extension Calls.AddItem: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Added {
        let (reference, replaced) = try await engine.add(secret.bytes, attributes: attributes, replace: replace)
        return Added(reference: reference, replaced: replaced)
    }
}

extension Calls.Item: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> ReferencedItem {
        try await engine.item(reference)
    }
}

extension Calls.OpenItemAccess: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> AccessControl {
        try await engine.openAccess(reference)
    }
}

extension Calls.ItemSecret: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Opened {
        let (secret, attributes) = try await engine.secret(reference, grant: grant)
        return Opened(secret: secret, attributes: attributes)
    }
}

extension Calls.UpdateItem: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Done {
        try await engine.update(reference, secret: secret?.bytes, label: label.map(\.value), searchAttributes: searchAttributes,
                                contentType: contentType.map(\.value), grant: grant)
        return Done()
    }
}

extension Calls.DeleteItem: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Done {
        try await engine.delete(reference)
        return Done()
    }
}

// MARK: - ssh keys

extension Calls.CreateSSHKey: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> SSHKeyInfo {
        try await engine.createSSHKey(name: name, comment: comment, access: access)
    }
}

extension Calls.SSHKeys: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> [SSHKeyInfo] {
        try await engine.sshKeys()
    }
}

extension Calls.DeleteSSHKey: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Done {
        try await engine.deleteSSHKey(name: name)
        return Done()
    }
}

extension Calls.SSHKeyOpenAccess: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> AccessControl {
        try await engine.sshKeyOpenAccess(name: name)
    }
}

extension Calls.SignSSH: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> SSHSignature {
        try await engine.signSSH(name: name, digest: digest, grant: grant)
    }
}

// MARK: - FIDO credentials

extension Calls.CreateFIDOCredential: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> FIDOCredentialInfo {
        try await engine.createFIDOCredential(request, replace: replace)
    }
}

extension Calls.FIDOCredentials: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> [FIDOCredentialInfo] {
        try await engine.fidoCredentials(relyingParty: relyingParty)
    }
}

extension Calls.DeleteFIDOCredential: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Done {
        try await engine.deleteFIDOCredential(id: id, passcode: passcode.bytes)
        return Done()
    }
}

extension Calls.DeleteFIDOCredentialByTouch: EngineOperation {
    package static var releasesReader: Bool { true }

    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Done {
        let settings = ContextSettings(interaction: interaction, interactionNotAllowed: interactionNotAllowed,
                                       touchTimeout: .milliseconds(max(touchTimeoutMilliseconds, 1)))
        try await engine.deleteFIDOCredential(id: id, relyingParty: relyingParty, reason: reasonText, settings: settings)
        return Done()
    }
}

extension Calls.UpdateFIDOUser: EngineOperation {
    package static var releasesReader: Bool { true }

    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Done {
        let settings = ContextSettings(interaction: interaction, interactionNotAllowed: interactionNotAllowed,
                                       touchTimeout: .milliseconds(max(touchTimeoutMilliseconds, 1)))
        try await engine.updateFIDOUser(id: id, relyingParty: relyingParty, userName: userName, userDisplayName: userDisplayName,
                                        reason: reasonText, settings: settings)
        return Done()
    }
}

extension Calls.ResetFIDO: EngineOperation {
    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Int {
        let settings = ContextSettings(interaction: interaction, interactionNotAllowed: interactionNotAllowed,
                                       touchTimeout: .milliseconds(max(touchTimeoutMilliseconds, 1)))
        return try await engine.resetFIDO(reason: reasonText, settings: settings)
    }
}

extension Calls.AssertFIDO: EngineOperation {
    package static var releasesReader: Bool { true }

    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> FIDOAssertion {
        let settings = ContextSettings(interaction: interaction, interactionNotAllowed: interactionNotAllowed,
                                       touchTimeout: .milliseconds(max(touchTimeoutMilliseconds, 1)))
        var hmacSecret: (salts: [UInt8], shared: SecureBytes)?
        if let hmacSalts, let hmacSharedSecret { hmacSecret = (hmacSalts, hmacSharedSecret.bytes) }
        return try await engine.assertFIDO(id: id, relyingParty: relyingParty, clientDataHash: clientDataHash, userVerification: userVerification,
                                           extensions: extensions, hmacSecret: hmacSecret, reason: reasonText, settings: settings)
    }
}

extension Calls.MakeFIDOCredential: EngineOperation {
    package static var releasesReader: Bool { true }

    package func run(on engine: isolated InProcessEngine,
                     interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> FIDOMadeCredential {
        let settings = ContextSettings(interaction: interaction, interactionNotAllowed: interactionNotAllowed,
                                       touchTimeout: .milliseconds(max(touchTimeoutMilliseconds, 1)))
        return try await engine.makeFIDOCredential(request, clientDataHash: clientDataHash, userVerification: userVerification,
                                                   extensions: extensions, reason: reasonText, settings: settings)
    }
}
