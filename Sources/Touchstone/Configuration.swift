import Foundation

/// Which fingerprint reader to use.
public enum ReaderSelection: Sendable, Hashable {
    /// The first reader libfprint finds.
    case auto
    /// libfprint's virtual reader listening on this socket (the simulator).
    case virtual(socket: String)
    /// A reader by its id as `status` shows it ("driver/device-id").
    case id(String)
}

/// Where Touchstone keeps its state and which hardware it uses.
public struct Configuration: Sendable, Hashable {
    /// The state folder (0700): the vault database and enrolled prints.
    public var home: URL
    /// The TCTI string of the TPM.
    public var tcti: String
    public var reader: ReaderSelection
    /// The user the prints belong to.
    public var user: String

    public init(home: URL, tcti: String = "device:/dev/tpmrm0", reader: ReaderSelection = .auto,
                user: String = ProcessInfo.processInfo.userName) {
        self.home = home
        self.tcti = tcti
        self.reader = reader
        self.user = user
    }

    /// `$XDG_DATA_HOME/touchstone`, or `~/.local/share/touchstone`.
    public static func defaultHome(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg).appendingPathComponent("touchstone")
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/touchstone")
    }
}
