/// A `touchstone` command with its arguments, parsed and validated.
///
/// `help` is not a case: the parser answers it itself with
/// `ParseResult.help(text:)`, so it never needs running.
public enum Command: Sendable, Hashable {
    /// `status`: reader, TPM, passcode, fingers, lockout, item count.
    case status
    /// `passcode set|change|remove`.
    case passcode(PasscodeAction)
    /// `enroll [FINGER]`.
    case enroll(Finger)
    /// `unenroll FINGER` or `unenroll --all`.
    case unenroll(UnenrollTarget)
    /// `fingers`: the enrolled fingers.
    case fingers
    /// `verify [--allow-passcode]`: one authentication.
    case verify(allowPasscode: Bool)
    /// `matching [--touches N]`: how many matching touches of one finger a
    /// biometric authentication takes; `touches` nil: show it.
    case matching(touches: Int?)
    /// `add SERVICE ACCOUNT [--access SPEC] [--label T] [--comment T]`; the
    /// secret comes from stdin. `label` and `comment` are nil when not given.
    case add(service: String, account: String, access: AccessControl, label: String?, comment: String?)
    /// `get SERVICE ACCOUNT [--reason TEXT]`; `reason` is nil when not given.
    case get(service: String, account: String, reason: String?)
    /// `update SERVICE ACCOUNT`; the new secret comes from stdin.
    case update(service: String, account: String)
    /// `delete SERVICE ACCOUNT`.
    case delete(service: String, account: String)
    /// `list [--service S]`; `service` is nil for every item.
    case list(service: String?)
    /// `sim ...`: the simulator.
    case sim(SimulatorCommand)
    /// `demo`: the backend walk-through on a private swtpm.
    case demo
    /// `import [--remove]`: move the embedded vault of the state folder into
    /// the daemon.
    case importVault(remove: Bool)
    /// `import --from-secret-service [--access SPEC] [--dry-run]`.
    case importSecretService(access: AccessControl, dryRun: Bool)
    /// `secret-service [--replace] [--access SPEC]`: the Secret Service
    /// provider; `access`: what items that clients create get.
    case secretService(replace: Bool, access: AccessControl)
    /// `ssh-key create|list|delete`: keys made and kept by the TPM.
    case sshKey(SSHKeyAction)
    /// `ssh-agent [--socket PATH]`; `socket` is nil for the default.
    case sshAgent(socket: String?)
    /// `fido list|delete`: FIDO credentials made and kept by the TPM.
    case fido(FIDOAction)
    /// `doctor`: what this machine and session have of everything
    /// Touchstone needs, each with the fix for what is not right.
    case doctor

    /// What `ssh-key` does.
    public enum SSHKeyAction: Sendable, Hashable {
        /// `create NAME [--access SPEC] [--comment TEXT]`.
        case create(name: String, access: AccessControl, comment: String?)
        /// `list`.
        case list
        /// `delete NAME`.
        case delete(name: String)
        /// `sign NAME [--namespace NS] [--reason TEXT]`: the message on stdin.
        case sign(name: String, namespace: String, reason: String?)
    }

    /// What `fido` does.
    public enum FIDOAction: Sendable, Hashable {
        /// `list`.
        case list
        /// `delete ID` (base64url, or a prefix of it that names one).
        case delete(id: String)
        /// `serve [--udp HOST:PORT] [--uhid] [--access SPEC]`: the CTAP 2.1 authenticator.
        case serve(udp: String?, uhid: Bool, access: AccessControl)
    }

    /// What `passcode` does.
    public enum PasscodeAction: String, Sendable, Hashable, CaseIterable {
        /// Set the first passcode.
        case set
        /// Replace the passcode.
        case change
        /// Remove the passcode (the parser requires `--yes`).
        case remove
    }

    /// Which fingers `unenroll` removes.
    public enum UnenrollTarget: Sendable, Hashable {
        /// One finger.
        case finger(Finger)
        /// Every enrolled finger (`--all`).
        case all
    }

    /// What `sim` does.
    public enum SimulatorCommand: Sendable, Hashable {
        /// `sim start [--reader-kind KIND] [--daemon]`: run the simulator's
        /// swtpm with the reader `readerKind` (and, with `daemon`, a
        /// touchstoned on it).
        case start(daemon: Bool = false, fido: Bool = false, readerKind: VirtualReaderKind = .device)
        /// `sim stop`: shut it down.
        case stop
        /// `sim status`.
        case status
        /// `sim touch ID [--count N] [--wait SECONDS]`: put finger `id` on the
        /// simulated reader `count` times, waiting up to `wait` for a
        /// touchstone process to open the reader. `wait` defaults to the
        /// global timeout.
        case touch(id: String, count: Int, wait: Duration)
        /// `sim touch --image FILE [--wait SECONDS]`: put the image in the
        /// PNG `path` on the image reader.
        case touchImage(path: String, wait: Duration)
        /// `sim retry KIND`.
        case retry(SimulatedRetry)
        /// `sim error CODE`.
        case error(SimulatedReaderError)
        /// `sim unplug`.
        case unplug
        /// `sim print ID [--impression N] [--output FILE]`: write impression
        /// `impression` of synthetic finger `id` as a PNG to `output` (nil:
        /// standard output).
        case print(id: String, impression: Int, output: String?)
    }

    /// The command's name as typed, subcommand included: `"sim touch"`.
    public var name: String {
        switch self {
        case .status: "status"
        case .passcode(let action): "passcode \(action.rawValue)"
        case .enroll: "enroll"
        case .unenroll: "unenroll"
        case .fingers: "fingers"
        case .verify: "verify"
        case .matching: "matching"
        case .add: "add"
        case .get: "get"
        case .update: "update"
        case .delete: "delete"
        case .list: "list"
        case .sim(let sim):
            switch sim {
            case .start: "sim start"
            case .stop: "sim stop"
            case .status: "sim status"
            case .touch, .touchImage: "sim touch"
            case .retry: "sim retry"
            case .error: "sim error"
            case .unplug: "sim unplug"
            case .print: "sim print"
            }
        case .demo: "demo"
        case .importVault, .importSecretService: "import"
        case .secretService: "secret-service"
        case .sshKey(.create): "ssh-key create"
        case .sshKey(.list): "ssh-key list"
        case .sshKey(.delete): "ssh-key delete"
        case .sshKey(.sign): "ssh-key sign"
        case .sshAgent: "ssh-agent"
        case .fido(.list): "fido list"
        case .fido(.delete): "fido delete"
        case .fido(.serve): "fido serve"
        case .doctor: "doctor"
        }
    }
}
