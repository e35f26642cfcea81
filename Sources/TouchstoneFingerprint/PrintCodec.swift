internal import CFPrint

/// Moves prints between libfprint's `FpPrint` and bytes. Runs on the
/// libfprint thread.
enum PrintCodec {
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
