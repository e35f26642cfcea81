import FoundationEssentials

/// Which of libfprint's virtual readers the simulator's reader is
/// (`sim start --reader-kind`).
public enum VirtualReaderKind: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// `virtual_device`: a finger is an id string, matched by equality.
    case device
    /// `virtual_device_storage`: the same, with prints kept on the reader
    /// (identify, list, delete), as match-on-chip readers do.
    case storage
    /// `virtual_image`: libfprint's image pipeline (minutiae extraction
    /// with NBIS mindtct, matching with bozorth3), as image sensors use;
    /// a touch is a greyscale image.
    case image

    /// The libfprint driver's name.
    public var driver: String {
        switch self {
        case .device: "virtual_device"
        case .storage: "virtual_device_storage"
        case .image: "virtual_image"
        }
    }

    public var description: String { rawValue }

    /// The file beside a virtual reader's socket that records its kind.
    public static func recordPath(forSocket socket: String) -> String { socket + ".kind" }

    /// The kind recorded beside `socket` (`device` when none is).
    public init(recordedFor socket: String) {
        let data = (try? Data(contentsOf: URL(fileURLWithPath: Self.recordPath(forSocket: socket)))) ?? Data()
        let text = String(decoding: data, as: UTF8.self).split(whereSeparator: { $0 == "\n" || $0 == " " }).first
        self = text.flatMap { Self(rawValue: String($0)) } ?? .device
    }
}
