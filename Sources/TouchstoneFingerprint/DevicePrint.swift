/// A print held in a match-on-chip reader's own storage, as listed by it.
public struct DevicePrint: Sendable, Hashable, CustomStringConvertible {
    /// The reader holding it.
    public let reader: ReaderIdentity
    /// The finger recorded with the print, when the reader keeps it.
    public let finger: Finger?
    /// The user name recorded with the print, when the reader keeps it.
    public let username: String?
    /// The serialized print, as `deleteDevicePrint` needs it.
    public let data: [UInt8]

    public init(reader: ReaderIdentity, finger: Finger?, username: String?, data: [UInt8]) {
        self.reader = reader
        self.finger = finger
        self.username = username
        self.data = data
    }

    /// The device-side record of an enrolment made on a match-on-chip reader.
    public init(_ print: EnrolledPrint, username: String? = nil) {
        self.init(reader: print.reader, finger: print.finger, username: username, data: print.data)
    }

    public var description: String {
        "DevicePrint(\(finger?.fprintdName ?? "unknown finger") on \(reader))"
    }
}
