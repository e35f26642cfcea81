/// The options every command accepts, resolved: each one from its option,
/// else its environment variable, else its default.
public struct GlobalOptions: Sendable, Hashable {
    /// The state directory (`--home`, `TOUCHSTONE_HOME`, else
    /// `$XDG_DATA_HOME/touchstone`, else `$HOME/.local/share/touchstone`).
    public var home: String
    /// The TPM (`--tpm`, `TOUCHSTONE_TPM`, `--sim`, `TOUCHSTONE_SIM=1`).
    public var tpm: TPMSelection
    /// The reader (`--reader`, `TOUCHSTONE_READER`, `--sim`,
    /// `TOUCHSTONE_SIM=1`).
    public var reader: ReaderSelection
    /// How long to wait for a touch (`--timeout`, `TOUCHSTONE_TIMEOUT`,
    /// default 30 s); between 1 ms and 3600 s.
    public var timeout: Duration
    /// The descriptor to read passcodes from, one line each (`--passcode-fd`);
    /// nil to use the terminal.
    public var passcodeFD: Int32?
    /// Machine-readable output on stdout (`--json`).
    public var json: Bool
    /// Which engine (`--daemon`, `TOUCHSTONE_DAEMON`, `--embedded`; default
    /// automatic: the daemon when its socket exists).
    public var engine: EngineChoice = .automatic

    /// What `--daemon` and `--embedded` chose.
    public enum EngineChoice: Sendable, Hashable {
        case automatic
        case embedded
        case daemon(socket: String)
    }

    /// The timeout used when nothing says otherwise.
    public static let defaultTimeout = Duration.seconds(30)
    /// The longest timeout accepted.
    public static let maximumTimeout = Duration.seconds(3600)

    /// Creates resolved options; the parser is the usual source.
    public init(home: String, tpm: TPMSelection = .default, reader: ReaderSelection = .automatic,
                timeout: Duration = GlobalOptions.defaultTimeout, passcodeFD: Int32? = nil, json: Bool = false) {
        self.home = home
        self.tpm = tpm
        self.reader = reader
        self.timeout = timeout
        self.passcodeFD = passcodeFD
        self.json = json
    }

    /// Whether both the TPM and the reader are the simulator's, as `--sim`
    /// makes them.
    public var usesSimulator: Bool {
        tpm == .simulator && reader == .simulator
    }
}

extension GlobalOptions {
    /// The options of a program that has no command line of its own (the
    /// security-key provider inside ssh-sk-helper): each from its
    /// environment variable, else its default.
    public static func fromEnvironment(_ environment: [String: String]) throws(EnvironmentError) -> GlobalOptions {
        do throws(UsageError) {
            return try RawGlobalOptions().resolved(environment: environment)
        } catch {
            throw EnvironmentError(message: error.message)
        }
    }

    /// A variable of the environment that cannot be used: what is wrong.
    public struct EnvironmentError: Error, Sendable {
        public let message: String
    }
}
