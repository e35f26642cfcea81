internal import CCBOR
import Glibc

/// A CBOR value as CTAP2 uses it (RFC 8949 data items: integers, byte and
/// text strings, arrays, maps, booleans, null), parsed and serialized by
/// libcbor. What CTAP2's canonical form leaves out is refused when read
/// (indefinite lengths, tags, floats, undefined), nesting is bounded, and
/// every value is written canonically: integers and lengths in their
/// shortest form, map keys sorted by major type, then length, then bytes.
package indirect enum CBOR: Equatable, Sendable {
    case unsigned(UInt64)
    /// -1 - n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    case map([Entry])
    case bool(Bool)
    case null

    package struct Entry: Equatable, Sendable {
        package let key: CBOR
        package let value: CBOR

        package init(_ key: CBOR, _ value: CBOR) {
            self.key = key
            self.value = value
        }
    }

    /// Why bytes are not a CBOR value this reads.
    package enum Failure: Error, Equatable, Sendable {
        /// libcbor could not parse them, or bytes are left after the value.
        case malformed(String)
        /// Something CTAP2's canonical CBOR does not have.
        case unsupported(String)
        /// Nested deeper than allowed.
        case tooDeep
    }

    /// An integer's value.
    package static func int(_ value: Int) -> CBOR {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    package var intValue: Int? {
        switch self {
        case .unsigned(let n) where n <= UInt64(Int.max): Int(n)
        case .negative(let n) where n < UInt64(Int.max): -Int(n) - 1
        default: nil
        }
    }

    package var bytesValue: [UInt8]? { if case .bytes(let b) = self { b } else { nil } }
    package var textValue: String? { if case .text(let t) = self { t } else { nil } }
    package var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }
    package var arrayValue: [CBOR]? { if case .array(let a) = self { a } else { nil } }
    package var mapValue: [Entry]? { if case .map(let m) = self { m } else { nil } }

    /// The value under `key` in a map (nil: not a map, or no such key).
    package subscript(key: CBOR) -> CBOR? { mapValue?.first { $0.key == key }?.value }
    package subscript(key: Int) -> CBOR? { self[.int(key)] }
    package subscript(key: String) -> CBOR? { self[.text(key)] }

    // MARK: - Reading

    /// The one value `bytes` hold (nothing may follow it), nested at most
    /// `maximumDepth` arrays and maps deep.
    package static func decode(_ bytes: [UInt8], maximumDepth: Int = 16) throws(Failure) -> CBOR {
        guard !bytes.isEmpty else { throw .malformed("no data") }
        guard countsFit(bytes) else { throw .malformed("an array or map claims more elements than there are bytes") }
        var result = cbor_load_result()
        var loaded = bytes.withUnsafeBufferPointer { cbor_load($0.baseAddress, $0.count, &result) }
        defer { if loaded != nil { cbor_decref(&loaded) } }
        guard let item = loaded else {
            throw .malformed("libcbor error \(result.error.code.rawValue) at byte \(result.error.position)")
        }
        guard result.read == bytes.count else { throw .malformed("\(bytes.count - result.read) bytes after the value") }
        return try value(of: item, depth: maximumDepth)
    }

    /// Whether every array and map in `bytes` claims no more elements than
    /// bytes follow its header (each element takes one at least). libcbor's
    /// cbor_load allocates a collection's slots for its claimed count
    /// before it reads them: five bytes could ask for gigabytes. Each
    /// header is read with libcbor's streaming decoder, before cbor_load.
    static func countsFit(_ bytes: [UInt8]) -> Bool {
        final class Walk {
            var remaining = 0
            var fits = true
        }
        var callbacks = cbor_empty_callbacks
        callbacks.array_start = { context, count in
            let walk = Unmanaged<Walk>.fromOpaque(context!).takeUnretainedValue()
            if count > walk.remaining { walk.fits = false }
        }
        callbacks.map_start = { context, count in
            let walk = Unmanaged<Walk>.fromOpaque(context!).takeUnretainedValue()
            if count > walk.remaining / 2 { walk.fits = false }
        }
        let walk = Walk()
        return bytes.withUnsafeBufferPointer { buffer in
            var offset = 0
            while offset < buffer.count && walk.fits {
                walk.remaining = buffer.count - offset
                let result = withUnsafeMutablePointer(to: &callbacks) { callbacks in
                    cbor_stream_decode(buffer.baseAddress! + offset, buffer.count - offset, callbacks,
                                       Unmanaged.passUnretained(walk).toOpaque())
                }
                guard result.status == CBOR_DECODER_FINISHED, result.read > 0 else { break }  // cbor_load says what is wrong
                offset += result.read
            }
            return walk.fits
        }
    }

    private static func value(of item: UnsafeMutablePointer<cbor_item_t>, depth: Int) throws(Failure) -> CBOR {
        switch cbor_typeof(item) {
        case CBOR_TYPE_UINT:
            return .unsigned(cbor_get_int(item))
        case CBOR_TYPE_NEGINT:
            return .negative(cbor_get_int(item))
        case CBOR_TYPE_BYTESTRING:
            guard cbor_bytestring_is_definite(item) else { throw .unsupported("an indefinite byte string") }
            return .bytes(Array(UnsafeBufferPointer(start: cbor_bytestring_handle(item), count: cbor_bytestring_length(item))))
        case CBOR_TYPE_STRING:
            guard cbor_string_is_definite(item) else { throw .unsupported("an indefinite text string") }
            let raw = Array(UnsafeBufferPointer(start: cbor_string_handle(item), count: cbor_string_length(item)))
            guard let text = String(validating: raw, as: UTF8.self) else { throw .malformed("a text string that is not UTF-8") }
            return .text(text)
        case CBOR_TYPE_ARRAY:
            guard cbor_array_is_definite(item) else { throw .unsupported("an indefinite array") }
            guard depth > 0 else { throw .tooDeep }
            let elements = UnsafeBufferPointer(start: cbor_array_handle(item), count: cbor_array_size(item))
            var values: [CBOR] = []
            for element in elements {
                guard let element else { throw .malformed("an empty array slot") }
                values.append(try value(of: element, depth: depth - 1))
            }
            return .array(values)
        case CBOR_TYPE_MAP:
            guard cbor_map_is_definite(item) else { throw .unsupported("an indefinite map") }
            guard depth > 0 else { throw .tooDeep }
            let pairs = UnsafeBufferPointer(start: cbor_map_handle(item), count: cbor_map_size(item))
            var entries: [Entry] = []
            for pair in pairs {
                guard let key = pair.key, let value = pair.value else { throw .malformed("an empty map slot") }
                let entry = Entry(try Self.value(of: key, depth: depth - 1), try Self.value(of: value, depth: depth - 1))
                guard !entries.contains(where: { $0.key == entry.key }) else { throw .malformed("a map key twice") }
                entries.append(entry)
            }
            return .map(entries)
        case CBOR_TYPE_FLOAT_CTRL:
            guard cbor_float_ctrl_is_ctrl(item) else { throw .unsupported("a floating-point number") }
            switch cbor_ctrl_value(item) {
            case 20: return .bool(false)
            case 21: return .bool(true)
            case 22: return .null
            default: throw .unsupported("simple value \(cbor_ctrl_value(item))")
            }
        case CBOR_TYPE_TAG:
            throw .unsupported("a tag")
        default:
            throw .malformed("an unknown major type")
        }
    }

    // MARK: - Writing

    /// The canonical bytes of this value.
    package func encoded() -> [UInt8] {
        var item = makeItem()
        defer { cbor_decref(&item) }
        var buffer: UnsafeMutablePointer<UInt8>?
        var size = 0
        let length = cbor_serialize_alloc(item, &buffer, &size)
        defer { free(buffer) }
        guard let buffer, length > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: buffer, count: length))
    }

    /// A libcbor item of this value, with one reference for the caller.
    private func makeItem() -> UnsafeMutablePointer<cbor_item_t>? {
        switch self {
        case .unsigned(let n): return Self.unsignedItem(n)
        case .negative(let n):
            if n <= UInt64(UInt8.max) { return cbor_build_negint8(UInt8(n)) }
            if n <= UInt64(UInt16.max) { return cbor_build_negint16(UInt16(n)) }
            if n <= UInt64(UInt32.max) { return cbor_build_negint32(UInt32(n)) }
            return cbor_build_negint64(n)
        case .bytes(let bytes):
            return bytes.withUnsafeBufferPointer { cbor_build_bytestring($0.baseAddress, $0.count) }
        case .text(let text):
            let utf8 = Array(text.utf8)
            return utf8.withUnsafeBufferPointer { buffer in
                buffer.withMemoryRebound(to: CChar.self) { cbor_build_stringn($0.baseAddress, $0.count) }
            }
        case .array(let values):
            let array = cbor_new_definite_array(values.count)
            for value in values {
                var element = value.makeItem()
                _ = cbor_array_push(array, element)
                cbor_decref(&element)
            }
            return array
        case .map(let entries):
            let map = cbor_new_definite_map(entries.count)
            for entry in Self.canonicalOrder(entries) {
                var key = entry.key.makeItem(), value = entry.value.makeItem()
                _ = cbor_map_add(map, cbor_pair(key: key, value: value))
                cbor_decref(&key)
                cbor_decref(&value)
            }
            return map
        case .bool(let value): return cbor_build_bool(value)
        case .null: return cbor_new_null()
        }
    }

    private static func unsignedItem(_ n: UInt64) -> UnsafeMutablePointer<cbor_item_t>? {
        if n <= UInt64(UInt8.max) { return cbor_build_uint8(UInt8(n)) }
        if n <= UInt64(UInt16.max) { return cbor_build_uint16(UInt16(n)) }
        if n <= UInt64(UInt32.max) { return cbor_build_uint32(UInt32(n)) }
        return cbor_build_uint64(n)
    }

    /// CTAP2's canonical order of map keys: by major type, then by the
    /// length of their encoding, then by its bytes.
    static func canonicalOrder(_ entries: [Entry]) -> [Entry] {
        let keyed = entries.map { ($0, $0.key.encoded()) }
        return keyed.sorted { a, b in
            let (ma, mb) = (a.1.first.map { $0 >> 5 } ?? 0, b.1.first.map { $0 >> 5 } ?? 0)
            if ma != mb { return ma < mb }
            if a.1.count != b.1.count { return a.1.count < b.1.count }
            return a.1.lexicographicallyPrecedes(b.1)
        }.map(\.0)
    }
}
