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

    public init(home: URL = Configuration.defaultHome(), tpm: TPMSelection = .default,
                reader: ReaderSelection = .automatic, user: String = ProcessInfo.processInfo.userName) {
        self.home = home
        self.tpm = tpm
        self.reader = reader
        self.user = user
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
