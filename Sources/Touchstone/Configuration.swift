import Foundation

/// Where Touchstone keeps its state and which hardware it uses.
///
/// `Configuration()` is this user's state folder, the kernel's TPM
/// (`/dev/tpmrm0`) and the first fingerprint reader; `.simulator(home:)`
/// is the simulator of a state folder.
public struct Configuration: Sendable, Hashable {
    /// The state folder (0700): the vault database and enrolled prints.
    public var home: URL
    public var tpm: TPMSelection
    public var reader: ReaderSelection
    /// The user the prints belong to.
    public var user: String
    /// Which engine does the work: this process, or `touchstoned`.
    public var engine: EngineSelection

    public init(home: URL = Configuration.defaultHome(), tpm: TPMSelection = .default,
                reader: ReaderSelection = .automatic, user: String = ProcessInfo.processInfo.userName,
                engine: EngineSelection = .automatic) {
        self.home = home
        self.tpm = tpm
        self.reader = reader
        self.user = user
        self.engine = engine
    }

    /// The socket of the system's `touchstoned`.
    public static let systemDaemonSocket = DaemonSocket.system

    /// `engine` resolved now: `.automatic` is the daemon when its socket
    /// exists (the simulator's daemon, `sim/daemon.sock`, for the
    /// simulator's TPM and reader; the system's otherwise); the daemon too,
    /// reachable or not, when this state folder's vault was moved into it
    /// or the machine's client settings say `engine=daemon`
    /// (`DaemonSocket.required`); this process otherwise. Never a silent
    /// fall back to an embedded vault where the daemon is the rule.
    public var resolvedEngine: EngineSelection {
        guard case .automatic = engine else { return engine }
        let simulated = tpm == .simulator && reader == .simulator
        if let socket = DaemonSocket.automatic(home: home.path, simulated: simulated)
            ?? DaemonSocket.required(home: home.path, simulated: simulated) {
            return .daemon(socket: socket)
        }
        return .embedded
    }

    /// The simulator's TPM and reader (`Simulator(home:)`), state in `home`.
    public static func simulator(home: URL) -> Configuration {
        Configuration(home: home, tpm: .simulator, reader: .simulator)
    }

    /// `$XDG_DATA_HOME/touchstone`, or `~/.local/share/touchstone`.
    public static func defaultHome(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("touchstone")
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/touchstone")
    }

    /// The simulator of this state folder.
    public var simulator: Simulator { Simulator(home: home) }
}

/// Where the work of a `TouchstoneDevice` is done.
public enum EngineSelection: Sendable, Hashable, CustomStringConvertible {
    /// The daemon when its socket exists, this process otherwise
    /// (`Configuration.resolvedEngine`).
    case automatic
    /// This process opens the vault, the TPM and the reader.
    case embedded
    /// `touchstoned`, listening on this Unix socket.
    case daemon(socket: String)

    public var description: String {
        switch self {
        case .automatic: "automatic"
        case .embedded: "embedded"
        case .daemon(let socket): "daemon at \(socket)"
        }
    }
}
