
/// Why the simulator could not do what was asked.
public enum SimulatorError: Error, Sendable, Hashable, Codable, CustomStringConvertible {
    /// A program it needs is missing (`swtpm`, `swtpm_ioctl`).
    case notInstalled(String)
    /// The state folder is so deep that a socket path would not fit:
    /// `path` is over `limit` bytes; a state folder of at most
    /// `longestHome` bytes would do.
    case stateFolderTooDeep(path: String, limit: Int, longestHome: Int)
    /// A folder could not be created.
    case cannotCreate(path: String, reason: String)
    /// swtpm did not start, and why.
    case didNotStart(String)
    /// swtpm did not stop, even after SIGKILL.
    case didNotStop(pid: Int32)
    /// The simulator's TPM refused its settings.
    case tpm(TPMFailure)
    /// No process opened the simulated reader within `waited`: a touch
    /// needs a command waiting for one.
    case readerNotOpen(socket: String, waited: Duration)
    /// The wait was cancelled.
    case cancelled
    /// A step of the backend walk-through did not behave as designed.
    case walkthroughFailed(String)
    /// The command needs another kind of simulated reader (an image for
    /// the image reader only).
    case wrongReaderKind(VirtualReaderKind, needed: VirtualReaderKind)
    /// An image file that cannot be used as a touch, and why.
    case badImage(path: String, reason: String)

    public var description: String {
        switch self {
        case .notInstalled(let tool): "\(tool) is not installed (apt-get install swtpm swtpm-tools)"
        case .stateFolderTooDeep(let path, let limit, _):
            "the state directory is too deep for the simulator: \(path) is \(path.utf8.count) bytes, and unix socket paths here hold at most \(limit)"
        case .cannotCreate(let path, let reason): "cannot create \(path): \(reason)"
        case .didNotStart(let why): "swtpm did not start: \(why)"
        case .didNotStop(let pid): "swtpm (pid \(pid)) did not stop"
        case .tpm(let failure): failure.description
        case .readerNotOpen(let socket, let waited):
            "no touchstone process opened the simulated reader within \(waited) (\(socket))"
        case .cancelled: "cancelled"
        case .walkthroughFailed(let why): why
        case .wrongReaderKind(let kind, let needed):
            "the simulator's reader is the \(kind) reader; this needs the \(needed) reader (touchstone sim start --reader-kind \(needed))"
        case .badImage(let path, let reason): "\(path) cannot be a touch: \(reason)"
        }
    }
}
