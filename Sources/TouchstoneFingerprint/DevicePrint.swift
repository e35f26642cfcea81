/// A print held in a match-on-chip reader's own storage, as listed by it.
package struct DevicePrint: Sendable, Hashable, CustomStringConvertible {
    /// The reader holding it.
    package let reader: ReaderIdentity
    /// The finger recorded with the print, when the reader keeps it.
    package let finger: Finger?
    /// The user name recorded with the print, when the reader keeps it.
    package let username: String?
    /// The serialized print, as `deleteDevicePrint` needs it.
    package let data: [UInt8]

    package init(reader: ReaderIdentity, finger: Finger?, username: String?, data: [UInt8]) {
        self.reader = reader
        self.finger = finger
        self.username = username
        self.data = data
    }

    /// The device-side record of an enrolment made on a match-on-chip reader.
    package init(_ print: EnrolledPrint, username: String? = nil) {
        self.init(reader: print.reader, finger: print.finger, username: username, data: print.data)
    }

    package var description: String {
        "DevicePrint(\(finger?.fprintdName ?? "unknown finger") on \(reader))"
    }
}
