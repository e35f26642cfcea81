internal import CFPrint

/// Moves prints between libfprint's `FpPrint` and bytes. Runs on the
/// libfprint thread (the reader's uses), or on the one thread of the
/// daemon's print checker (`inspect`).
package enum PrintCodec {
    /// libfprint asserts (aborting the process) unless the data is longer
    /// than its 3-byte format tag, so shorter data is refused before the call.
    static let minimumLength = 4

    /// `fp_print_serialize`: the bytes of `print` (not consumed).
    static func serialize(_ print: OpaquePointer) throws(FingerprintError) -> [UInt8] {
        var data: UnsafeMutablePointer<guchar>?
        var length: gsize = 0
        var error: UnsafeMutablePointer<GError>?
        guard fp_print_serialize(print, &data, &length, &error) != 0, let data else {
            let message = GLibError.take(&error)?.message ?? "unknown error"
            throw .invalidPrint(finger: nil, reason: "libfprint could not serialize the print: \(message)")
        }
        defer { g_free(data) }
        return Array(UnsafeBufferPointer(start: data, count: Int(length)))
    }

    /// `fp_print_deserialize`, guarded: returns an owned (non-floating)
    /// reference the caller must `g_object_unref`. Empty, short or junk data
    /// throws `invalidPrint` naming `finger`.
    static func deserialize(_ bytes: [UInt8], finger: Finger?) throws(FingerprintError) -> OpaquePointer {
        guard bytes.count >= minimumLength else {
            throw .invalidPrint(finger: finger, reason: bytes.isEmpty
                                ? "the print data is empty" : "the print data is truncated (\(bytes.count) bytes)")
        }
        var error: UnsafeMutablePointer<GError>?
        let print = bytes.withUnsafeBufferPointer { buffer in
            fp_print_deserialize(buffer.baseAddress, gsize(buffer.count), &error)
        }
        guard let print else {
            let message = GLibError.take(&error)?.message ?? "unknown error"
            throw .invalidPrint(finger: finger, reason: "libfprint cannot read it (\(message))")
        }
        if let error { g_error_free(error) }
        let object = UnsafeMutableRawPointer(print)
        if g_object_is_floating(object) != 0 { g_object_ref_sink(object) }
        return print
    }

    /// The finger libfprint recorded in `print`, if it is one of the ten.
    static func finger(of print: OpaquePointer) -> Finger? {
        let value = fp_print_get_finger(print).rawValue
        guard value >= 1, value <= 10 else { return nil }
        return Finger.allCases[Int(value) - 1]
    }

    /// The user name libfprint recorded in `print`.
    static func username(of print: OpaquePointer) -> String? {
        fp_print_get_username(print).map { String(cString: $0) }
    }
}

/// One print as libfprint read it: its reader and finger as libfprint holds
/// them, and libfprint's serialization of the print it read.
package struct InspectedPrint: Sendable, Hashable {
    package let reader: ReaderIdentity
    package let finger: Finger?
    package let data: [UInt8]
}

extension PrintCodec {
    /// Readies this process for `inspect` under a confinement (the
    /// daemon's print checker): GLib's log goes nowhere (its writer looks
    /// at stderr with ioctl and getpeername, and reads the time zone, at
    /// each message: libfprint warns about prints it cannot read), and the
    /// GLib types a print's deserialization and serialization use (FpPrint,
    /// its enums, GVariant's and GError's parts) are registered, with a
    /// junk print read, so that nothing libfprint does once, at first use,
    /// falls under the confinement. Once per process: GLib takes one log
    /// writer.
    package static func prepare() {
        FprintLog.silence()
        _ = fp_print_get_type()
        _ = fp_finger_get_type()
        // A junk print's refusal: GError's and libfprint's error domains.
        _ = try? inspect(Array("FP3-not-a-print".utf8))
    }

    /// `bytes` deserialized by libfprint (`fp_print_deserialize`) and
    /// serialized again (`fp_print_serialize`), with the driver, device id
    /// and finger libfprint read. Throws `invalidPrint` when libfprint does
    /// not read them.
    package static func inspect(_ bytes: [UInt8]) throws(FingerprintError) -> InspectedPrint {
        let print = try deserialize(bytes, finger: nil)
        defer { g_object_unref(UnsafeMutableRawPointer(print)) }
        let reader = ReaderIdentity(driver: fp_print_get_driver(print).map { String(cString: $0) } ?? "",
                                    deviceID: fp_print_get_device_id(print).map { String(cString: $0) } ?? "")
        return InspectedPrint(reader: reader, finger: finger(of: print), data: try serialize(print))
    }
}
