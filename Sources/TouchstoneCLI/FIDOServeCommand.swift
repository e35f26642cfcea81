import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine
import TouchstoneFIDO
import TouchstoneSecretService
import TouchstoneSecure

/// `touchstone fido serve [--udp HOST:PORT] [--uhid]`: the CTAP 2.1
/// authenticator (docs/fido.md) over CTAPHID on a loopback UDP port, a
/// virtual USB HID device through /dev/uhid, or both (one authenticator:
/// one request at a time), its credentials the vault's FIDO credentials
/// through the public API (either engine). In the foreground until
/// SIGTERM or SIGINT (exit 0).
extension Session {
    func fidoServe(udp: String?, uhid: Bool, access: AccessControl) async throws {
        let address = try udp.map(Self.udpAddress)
        try await withDevice { device in
            let interaction = DesktopInteraction(terminal: interaction, title: "Touchstone passkeys", log: { FIDOStore.log($0) })
            let notifier = await DesktopNotifier.connect(log: { FIDOStore.log($0) })
            let store = FIDOStore(device: device, interaction: interaction, timeout: options.timeout, notifier: notifier)
            let authenticator = CTAP2Authenticator(store: store, access: access)
            var stops: [@Sendable () -> Void] = []
            if let (host, port) = address {
                let carrier: CTAPHIDUDPCarrier
                do { carrier = try CTAPHIDUDPCarrier(host: host, port: port) } catch {
                    throw CLIFailure(.failure, "cannot serve the authenticator: \(error)")
                }
                stops.append(try Self.serve(carrier, authenticator, thread: "ctaphid-udp"))
                Output.result("\(carrier.port)")
                FIDOStore.log("listening on udp \(host):\(carrier.port)")
            }
            if uhid {
                do {
                    stops.append(try Self.serve(try UHIDCarrier(), authenticator, thread: "ctaphid-uhid"))
                } catch {
                    stops.forEach { $0() }
                    throw CLIFailure(.failure, "cannot make the virtual FIDO device: \(error)")
                }
                FIDOStore.log("serving a virtual USB HID FIDO device through /dev/uhid")
            }
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            stops.forEach { $0() }
            FIDOStore.log("stopping")
        }
    }

    /// `authenticator` served over `carrier` on a thread of its own; what stops it.
    static func serve<Carrier: CTAPHIDCarrier>(_ carrier: Carrier, _ authenticator: CTAP2Authenticator,
                                               thread: String) throws -> @Sendable () -> Void {
        let server: CTAPHIDServer<Carrier>
        do { server = try CTAPHIDServer(carrier: carrier, authenticator: authenticator) } catch {
            throw CLIFailure(.failure, "cannot serve the authenticator: \(error)")
        }
        server.start(name: thread)
        return { server.stop() }
    }

    /// HOST:PORT, the host a loopback IPv4 address (the server checks it).
    static func udpAddress(_ given: String) throws -> (String, UInt16) {
        guard let colon = given.lastIndex(of: ":"), let port = UInt16(given[given.index(after: colon)...]) else {
            throw CLIFailure(.usage, "--udp takes HOST:PORT (e.g. 127.0.0.1:0), not \(SafeText.quoted(given))")
        }
        return (String(given[..<colon]), port)
    }
}

/// The authenticator's credentials: the vault's, through the public API,
/// one operation at a time, the reader released after each.
final class FIDOStore: FIDOAuthenticatorStore {
    let device: TouchstoneDevice
    let interaction: DesktopInteraction
    let timeout: Duration
    /// A desktop notification for each request that waits for the person
    /// (the session bus's, when there is one).
    let notifier: DesktopNotifier?

    init(device: TouchstoneDevice, interaction: DesktopInteraction, timeout: Duration, notifier: DesktopNotifier?) {
        self.device = device
        self.interaction = interaction
        self.timeout = timeout
        self.notifier = notifier
    }

    /// Logs what is asked and tells the desktop, which names the relying party.
    private func asking(_ reason: String) {
        Self.log(reason)
        if let notifier {
            Task.detached { await notifier.notify(summary: "Touchstone: touch the reader for a passkey", body: reason) }
        }
    }

    func credentials(relyingParty: String) async throws(CTAP2.Status) -> [FIDOCredentialInfo] {
        do {
            return try await device.fido.list(relyingParty: relyingParty).filter { $0.state == .ok }
        } catch {
            throw Self.status(error, "list the credentials of \(relyingParty)")
        }
    }

    func make(_ request: FIDOCredentialRequest, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]?,
              reason: String) async throws(CTAP2.Status) -> FIDOMadeCredential {
        asking(reason)
        defer { Task { await device.close() } }
        do {
            let made = try await device.fido.make(request, clientDataHash: clientDataHash, userVerification: userVerification, extensions: extensions,
                                                  reason: reason, interaction: interaction, touchTimeout: timeout)
            Self.log("registered \(made.credential.idText.prefix(8)) for \(request.relyingParty)")
            return made
        } catch {
            throw Self.status(error, reason)
        }
    }

    func assert(_ credential: FIDOCredentialInfo, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]?,
                hmacSecret: (salts: [UInt8], shared: SecureBytes)?, reason: String) async throws(CTAP2.Status) -> FIDOAssertion {
        asking(reason)
        defer { Task { await device.close() } }
        do {
            let signed = try await device.fido.assert(id: credential.id, relyingParty: credential.relyingParty, clientDataHash: clientDataHash,
                                                      userVerification: userVerification, extensions: extensions,
                                                      hmacSecret: hmacSecret.map { ($0.salts, $0.shared) }, reason: reason,
                                                      interaction: interaction, touchTimeout: timeout)
            Self.log("signed with \(credential.idText.prefix(8)) for \(credential.relyingParty)")
            return signed
        } catch {
            throw Self.status(error, reason)
        }
    }

    func verifyUser(reason: String) async throws(CTAP2.Status) {
        asking(reason)
        defer { Task { await device.close() } }
        let context = device.makeContext()
        context.interaction = interaction
        context.touchTimeout = timeout
        do {
            try await context.evaluate(.deviceOwnerAuthentication, reason: reason)
            Self.log("verified: \(reason)")
        } catch {
            throw Self.status(KeychainError(error), reason)
        }
    }

    func allCredentials() async throws(CTAP2.Status) -> [FIDOCredentialInfo] {
        do {
            return try await device.fido.list()
        } catch {
            throw Self.status(error, "list the credentials")
        }
    }

    func delete(_ credential: FIDOCredentialInfo, reason: String) async throws(CTAP2.Status) {
        asking(reason)
        defer { Task { await device.close() } }
        do {
            try await device.fido.delete(id: credential.id, relyingParty: credential.relyingParty, reason: reason,
                                         interaction: interaction, touchTimeout: timeout)
            Self.log("deleted \(credential.idText.prefix(8)) of \(credential.relyingParty)")
        } catch {
            throw Self.status(error, reason)
        }
    }

    func updateUser(_ credential: FIDOCredentialInfo, name: String, displayName: String, reason: String) async throws(CTAP2.Status) {
        asking(reason)
        defer { Task { await device.close() } }
        do {
            try await device.fido.updateUser(id: credential.id, relyingParty: credential.relyingParty, userName: name, userDisplayName: displayName,
                                             reason: reason, interaction: interaction, touchTimeout: timeout)
            Self.log("renamed the user of \(credential.idText.prefix(8)) of \(credential.relyingParty)")
        } catch {
            throw Self.status(error, reason)
        }
    }

    func reset(reason: String) async throws(CTAP2.Status) {
        asking(reason)
        do {
            let count = try await device.fido.reset(reason: reason, interaction: interaction)
            Self.log("reset: \(count) passkeys deleted")
        } catch {
            throw Self.status(error, reason)
        }
    }

    /// Touchstone's failure as CTAP's status, logged.
    static func status(_ error: KeychainError, _ what: String) -> CTAP2.Status {
        log("\(what): \(error)")
        return switch error {
        case .itemNotFound, .itemInvalidated: .noCredentials
        case .duplicateItem: .credentialExcluded
        case .userCanceled: .keepaliveCancel
        case .authFailed, .interactionNotAllowed: .operationDenied
        case .authentication(.notInteractive): .operationDenied
        case .authentication(.passcodeNotSet): .notAllowed
        case .invalidItem: .invalidParameter
        default: .other
        }
    }

    /// A line on stderr (never a secret).
    static func log(_ line: String) {
        Output.progress("touchstone fido: " + line)
    }
}
