/// One enrolled finger: libfprint's serialized print (`fp_print_serialize`)
/// with the finger and reader it belongs to.
///
/// The data is a fingerprint template: personal data, not a key. It is never
/// logged and `description` does not show it.
package struct EnrolledPrint: Sendable, Hashable, CustomStringConvertible {
    /// Which finger.
    package let finger: Finger
    /// Which reader produced it.
    package let reader: ReaderIdentity
    /// The serialized print, opaque to Touchstone.
    package let data: [UInt8]

    package init(finger: Finger, reader: ReaderIdentity, data: [UInt8]) {
        self.finger = finger
        self.reader = reader
        self.data = data
    }

    package var description: String {
        "EnrolledPrint(\(finger.fprintdName) on \(reader), \(data.count) bytes)"
    }
}
