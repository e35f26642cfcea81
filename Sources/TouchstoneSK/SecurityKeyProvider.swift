internal import CSodium
internal import CTSSCryptoContext
import CSecurityKeyAPI
import Foundation
import Glibc
import Touchstone
import TouchstoneCommandLine
import TouchstonePOSIX
import TouchstoneSecretService

/// OpenSSH's security-key provider (docs/ssh.md, "Security keys"): the
/// work behind sk_enroll, sk_sign and sk_load_resident_keys (SKAPI.swift
/// is their C face), through the public API, embedded or through the
/// daemon as `touchstone` would be with the same environment. It runs in
/// ssh-sk-helper, whose stdin and stdout are ssh's socket: it speaks to
/// the person through /dev/tty, else pinentry and a desktop notification,
/// and logs to stderr.
enum SecurityKeyProvider {
    /// A failure as the sk-api reports it, said on stderr first.
    struct Failure: Error {
        let code: Int32
        init(_ code: Int32, _ message: String) {
            self.code = code
            SecurityKeyProvider.log(message)
        }
    }

    /// An enrolled key: what sk_enroll returns.
    struct Enrolled: Sendable {
        let flags: UInt8
        let publicPoint: [UInt8]
        let keyHandle: [UInt8]
    }

    /// A signature: what sk_sign returns.
    struct Signed: Sendable {
        let flags: UInt8
        let counter: UInt32
        let r: [UInt8]
        let s: [UInt8]
    }

    /// A discoverable credential: what sk_load_resident_keys lists.
    struct Resident: Sendable {
        let application: String
        let flags: UInt8
        let publicPoint: [UInt8]
        let keyHandle: [UInt8]
        let userID: [UInt8]
    }

    /// The size of the user id ssh's own provider makes from `-O user=`
    /// (the name, zero-padded): so that a resident key for the same
    /// application and user replaces its predecessor there as here.
    static let userIDSize = 32

    static func log(_ line: String) {
        let text = "touchstone-sk: \(line)\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
    }

    // MARK: - Enrol

    static func enroll(algorithm: UInt32, challenge: [UInt8], application: String, flags: UInt8,
                       options: [String: String]) async -> Result<Enrolled, Failure> {
        do throws(Failure) {
            try requireECDSA(algorithm)
            guard flags & UInt8(TOUCHSTONE_SK_USER_PRESENCE_REQD) != 0 else {
                throw Failure(TOUCHSTONE_SK_ERR_UNSUPPORTED,
                              "every signature of a Touchstone security key needs a touch: no-touch-required is not offered")
            }
            let user = options["user"]
            var userID = Array((user ?? "").utf8.prefix(userIDSize - 1))
            userID += [UInt8](repeating: 0, count: userIDSize - userID.count)
            let environment = ProcessInfo.processInfo.environment
            var access = AccessControl.userPresence
            if let spec = environment["TOUCHSTONE_SK_ACCESS"], !spec.isEmpty {
                do throws(AccessControlSyntaxError) {
                    access = try AccessControl(parsing: spec)
                } catch {
                    throw Failure(TOUCHSTONE_SK_ERR_GENERAL, "TOUCHSTONE_SK_ACCESS \(spec): \(error.description)")
                }
            }
            let request = FIDOCredentialRequest(
                relyingParty: application, userID: userID, userName: user ?? "openssh", userDisplayName: user ?? "openssh",
                discoverable: flags & UInt8(TOUCHSTONE_SK_RESIDENT_KEY) != 0,
                verificationRequired: flags & UInt8(TOUCHSTONE_SK_USER_VERIFICATION_REQD) != 0, access: access)
            let replace = flags & UInt8(TOUCHSTONE_SK_FORCE_OPERATION) != 0
            let info = try await withDevice { device in try await device.fido.create(request, replace: replace) }
            log("made the security key \(info.idText.prefix(8)) for \(SafeText.shown(application)) (\(info.access.description))")
            return .success(Enrolled(flags: flags, publicPoint: info.publicPoint, keyHandle: info.id))
        } catch {
            return .failure(error)
        }
    }

    // MARK: - Sign

    static func sign(algorithm: UInt32, data: [UInt8], application: String, keyHandle: [UInt8], flags: UInt8) async -> Result<Signed, Failure> {
        do throws(Failure) {
            try requireECDSA(algorithm)
            let verify = flags & UInt8(TOUCHSTONE_SK_USER_VERIFICATION_REQD) != 0
            // The program that asked (ssh, ssh-keygen, ssh-agent: ssh-sk-helper's
            // parent), by its executable, then its command name.
            let program = PeerProgram.named(pid: getppid(), pidfd: nil).description
            let reason = "\(program) asks to sign with the security key for \(SafeText.shown(application))" + (verify ? " (verify-required)" : "")
            let interaction = DesktopInteraction(terminal: TerminalInteraction(), title: "Touchstone security key", log: { log($0) })
            let assertion = try await withDevice { device in
                if !interaction.terminal.canAskPasscode, let notifier = await DesktopNotifier.connect(log: { log($0) }) {
                    Task.detached { await notifier.notify(summary: "Touchstone: touch the reader to sign", body: reason) }
                }
                return try await device.fido.assert(id: keyHandle, relyingParty: application, clientDataHash: sha256(data),
                                                    userVerification: verify, reason: reason, interaction: interaction,
                                                    touchTimeout: try options().timeout)
            }
            return .success(Signed(flags: assertion.flags, counter: assertion.signCount, r: assertion.signature.r, s: assertion.signature.s))
        } catch {
            return .failure(error)
        }
    }

    // MARK: - Resident keys

    static func residentKeys() async -> Result<[Resident], Failure> {
        do throws(Failure) {
            let credentials = try await withDevice { device in try await device.fido.list() }
            return .success(credentials.filter { $0.discoverable && $0.state == .ok && $0.relyingParty.hasPrefix("ssh:") }.map { info in
                var flags = UInt8(TOUCHSTONE_SK_USER_PRESENCE_REQD | TOUCHSTONE_SK_RESIDENT_KEY)
                if info.verificationRequired { flags |= UInt8(TOUCHSTONE_SK_USER_VERIFICATION_REQD) }
                return Resident(application: info.relyingParty, flags: flags, publicPoint: info.publicPoint, keyHandle: info.id,
                                userID: info.userID)
            })
        } catch {
            return .failure(error)
        }
    }

    // MARK: - The device

    private static func requireECDSA(_ algorithm: UInt32) throws(Failure) {
        if algorithm == UInt32(TOUCHSTONE_SK_ED25519) {
            throw Failure(TOUCHSTONE_SK_ERR_UNSUPPORTED,
                          "ed25519-sk keys cannot be made: a TPM 2.0 has no Ed25519; make an ecdsa-sk key (ssh-keygen -t ecdsa-sk)")
        }
        guard algorithm == UInt32(TOUCHSTONE_SK_ECDSA) else { throw Failure(TOUCHSTONE_SK_ERR_UNSUPPORTED, "unknown key algorithm \(algorithm)") }
    }

    private static func options() throws(Failure) -> GlobalOptions {
        do throws(GlobalOptions.EnvironmentError) {
            return try GlobalOptions.fromEnvironment(ProcessInfo.processInfo.environment)
        } catch {
            throw Failure(TOUCHSTONE_SK_ERR_GENERAL, "\(error.message)")
        }
    }

    /// libtss2-esys's OpenSSL context calls bound to the shared context
    /// (CTSSCryptoContext): a dlopen'ed library cannot export them to it,
    /// and without them each TPM session costs 10-15 ms more.
    private static let sharedCryptoContext: Int32 = ts_tss_bind_shared_crypto_context()

    /// Runs `body` with the device the environment names, its failures
    /// told as the sk-api's.
    private static func withDevice<R>(_ body: (TouchstoneDevice) async throws -> R) async throws(Failure) -> R {
        _ = sharedCryptoContext
        let options = try options()
        let engine: EngineSelection = switch options.engine {
        case .automatic: .automatic
        case .embedded: .embedded
        case .daemon(let socket): .daemon(socket: socket)
        }
        let configuration = Configuration(home: URL(fileURLWithPath: options.home), tpm: options.tpm, reader: options.reader, engine: engine)
        do {
            return try await TouchstoneDevice.withDevice(configuration, body)
        } catch let error as KeychainError {
            throw failure(error)
        } catch let error as Failure {
            throw error
        } catch {
            throw Failure(TOUCHSTONE_SK_ERR_GENERAL, "\(error)")
        }
    }

    private static func failure(_ error: KeychainError) -> Failure {
        switch error {
        case .itemNotFound:
            Failure(TOUCHSTONE_SK_ERR_DEVICE_NOT_FOUND,
                    "this key's handle names no credential of this application in Touchstone's vault (deleted with 'touchstone fido delete'?)")
        case .duplicateItem:
            Failure(TOUCHSTONE_SK_ERR_CREDENTIAL_EXISTS, "a resident key for this application and user exists")
        case .itemInvalidated:
            Failure(TOUCHSTONE_SK_ERR_GENERAL,
                    "the security key was invalidated: the enrolled fingers changed and it allows no other way in")
        case .authentication(.passcodeNotSet):
            Failure(TOUCHSTONE_SK_ERR_GENERAL, "set a passcode first: touchstone passcode set")
        default:
            Failure(TOUCHSTONE_SK_ERR_GENERAL, error.message ?? "cancelled")
        }
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        crypto_hash_sha256(&out, bytes, UInt64(bytes.count))
        return out
    }
}
