internal import CGio

/// A D-Bus value, in Swift: what a method call's parameters hold and what
/// a reply, a property or a signal carries. Converted to and from GLib's
/// GVariant with its typed constructors and builders (g_variant_new's
/// varargs do not import into Swift).
package indirect enum DBusValue: Sendable, Equatable, CustomStringConvertible {
    case bool(Bool)
    case byte(UInt8)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case signature(String)
    /// `ay`, kept as bytes (a secret, a DH public key).
    case bytes([UInt8])
    /// `a` + `element` (a D-Bus type signature), the items all of it.
    case array(element: String, [DBusValue])
    /// `a{` + `key` `value` `}`.
    case dictionary(key: String, value: String, [DictionaryEntry])
    /// `(...)`.
    case tuple([DBusValue])
    /// `v`.
    case variant(DBusValue)

    package struct DictionaryEntry: Sendable, Equatable {
        package var key: DBusValue
        package var value: DBusValue
        package init(_ key: DBusValue, _ value: DBusValue) { (self.key, self.value) = (key, value) }
    }

    /// Its D-Bus type signature.
    package var signature: String {
        switch self {
        case .bool: "b"
        case .byte: "y"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .bytes: "ay"
        case .array(let element, _): "a" + element
        case .dictionary(let key, let value, _): "a{" + key + value + "}"
        case .tuple(let items): "(" + items.map(\.signature).joined() + ")"
        case .variant: "v"
        }
    }

    package var description: String {
        switch self {
        case .bool(let v): "\(v)"
        case .byte(let v): "byte \(v)"
        case .int32(let v): "int32 \(v)"
        case .uint32(let v): "uint32 \(v)"
        case .int64(let v): "int64 \(v)"
        case .uint64(let v): "uint64 \(v)"
        case .double(let v): "\(v)"
        case .string(let v): "'\(v)'"
        case .objectPath(let v): "objectpath '\(v)'"
        case .signature(let v): "signature '\(v)'"
        case .bytes(let v): "<\(v.count) bytes>"
        case .array(_, let items): "[" + items.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(_, _, let entries): "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .tuple(let items): "(" + items.map(\.description).joined(separator: ", ") + ")"
        case .variant(let v): "<\(v)>"
        }
    }

    /// A string-to-variant dictionary (`a{sv}`: properties).
    package static func properties(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: "s", value: "v", pairs.map { DictionaryEntry(.string($0.0), .variant($0.1)) })
    }

    /// A string-to-string dictionary (`a{ss}`: attributes).
    package static func strings(_ pairs: [String: String]) -> DBusValue {
        .dictionary(key: "s", value: "s", pairs.sorted { $0.key < $1.key }.map { DictionaryEntry(.string($0.key), .string($0.value)) })
    }

    // MARK: - Reading

    package var string: String? { if case .string(let v) = self { v } else { nil } }
    package var objectPath: String? { if case .objectPath(let v) = self { v } else { nil } }
    package var bool: Bool? { if case .bool(let v) = self { v } else { nil } }
    package var bytes: [UInt8]? { if case .bytes(let v) = self { v } else { nil } }
    package var tupleItems: [DBusValue]? { if case .tuple(let v) = self { v } else { nil } }
    package var arrayItems: [DBusValue]? { if case .array(_, let v) = self { v } else { nil } }
    package var variantValue: DBusValue? { if case .variant(let v) = self { v } else { nil } }
    package var entries: [DictionaryEntry]? { if case .dictionary(_, _, let v) = self { v } else { nil } }

    /// An `a{ss}` as a Swift dictionary (a repeated key: the last one).
    package var stringDictionary: [String: String]? {
        guard case .dictionary("s", "s", let entries) = self else { return nil }
        var out: [String: String] = [:]
        for entry in entries {
            guard let key = entry.key.string, let value = entry.value.string else { return nil }
            out[key] = value
        }
        return out
    }
}

// MARK: - GVariant

extension DBusValue {
    /// A new floating GVariant of this value.
    func gvariant() -> OpaquePointer {
        switch self {
        case .bool(let v): return g_variant_new_boolean(v ? 1 : 0)
        case .byte(let v): return g_variant_new_byte(v)
        case .int32(let v): return g_variant_new_int32(v)
        case .uint32(let v): return g_variant_new_uint32(v)
        case .int64(let v): return g_variant_new_int64(gint64(v))
        case .uint64(let v): return g_variant_new_uint64(guint64(v))
        case .double(let v): return g_variant_new_double(v)
        case .string(let v): return g_variant_new_string(v)
        case .objectPath(let v): return g_variant_new_object_path(v)
        case .signature(let v): return g_variant_new_signature(v)
        case .bytes(let v):
            let type = g_variant_type_new("y")
            defer { g_variant_type_free(type) }
            return v.withUnsafeBytes { g_variant_new_fixed_array(type, $0.baseAddress, gsize($0.count), 1) }
        case .array(let element, let items):
            return Self.build("a" + element, items.map { $0.gvariant() })
        case .dictionary(let key, let value, let entries):
            return Self.build("a{" + key + value + "}", entries.map { entry in
                g_variant_new_dict_entry(entry.key.gvariant(), entry.value.gvariant())
            })
        case .tuple(let items):
            var children: [OpaquePointer?] = items.map { $0.gvariant() }
            return children.withUnsafeMutableBufferPointer { g_variant_new_tuple($0.baseAddress, gsize($0.count)) }
        case .variant(let v): return g_variant_new_variant(v.gvariant())
        }
    }

    private static func build(_ signature: String, _ children: [OpaquePointer]) -> OpaquePointer {
        let type = g_variant_type_new(signature)
        defer { g_variant_type_free(type) }
        let builder = g_variant_builder_new(type)
        defer { g_variant_builder_unref(builder) }
        for child in children { g_variant_builder_add_value(builder, child) }
        return g_variant_builder_end(builder)
    }

    /// The value of a GVariant (borrowed: not unreferenced here).
    init(_ variant: OpaquePointer) {
        let type = String(cString: g_variant_get_type_string(variant))
        switch type {
        case "b": self = .bool(g_variant_get_boolean(variant) != 0)
        case "y": self = .byte(g_variant_get_byte(variant))
        case "i": self = .int32(g_variant_get_int32(variant))
        case "u": self = .uint32(g_variant_get_uint32(variant))
        case "x": self = .int64(Int64(g_variant_get_int64(variant)))
        case "t": self = .uint64(UInt64(g_variant_get_uint64(variant)))
        case "d": self = .double(g_variant_get_double(variant))
        case "s": self = .string(String(cString: g_variant_get_string(variant, nil)))
        case "o": self = .objectPath(String(cString: g_variant_get_string(variant, nil)))
        case "g": self = .signature(String(cString: g_variant_get_string(variant, nil)))
        case "ay":
            var count: gsize = 0
            let base = g_variant_get_fixed_array(variant, &count, 1)
            self = .bytes(count > 0 ? Array(UnsafeRawBufferPointer(start: base, count: Int(count))) : [])
        case "v":
            let inner = g_variant_get_variant(variant)!
            defer { g_variant_unref(inner) }
            self = .variant(DBusValue(inner))
        default:
            let children = (0..<g_variant_n_children(variant)).map { index -> DBusValue in
                let child = g_variant_get_child_value(variant, index)!
                defer { g_variant_unref(child) }
                return DBusValue(child)
            }
            if type.hasPrefix("a{") {
                let inner = String(type.dropFirst(2).dropLast())
                let keyType = String(inner.prefix(1))  // dictionary keys are basic types: one character
                let entries = children.map { child -> DictionaryEntry in
                    let pair = child.tupleItems ?? []
                    return DictionaryEntry(pair.first ?? .string(""), pair.count > 1 ? pair[1] : .string(""))
                }
                self = .dictionary(key: keyType, value: String(inner.dropFirst()), entries)
            } else if type.hasPrefix("a") {
                self = .array(element: String(type.dropFirst()), children)
            } else {
                // A tuple, or a dictionary entry (read as a pair).
                self = .tuple(children)
            }
        }
    }
}
