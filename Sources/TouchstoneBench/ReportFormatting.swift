import Foundation

/// `value` with `decimals` digits after the point, as every report prints
/// its figures.
func format(_ value: Double, _ decimals: Int = 2) -> String {
    String(format: "%.\(decimals)f", value)
}

/// `value` as sorted, pretty-printed JSON: what `--json` prints.
func prettyJSON(_ value: some Encodable) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    return String(decoding: try encoder.encode(value), as: UTF8.self)
}

extension MachineInfo {
    /// The "machine:" line every report prints above its figures.
    var reportLine: String {
        "machine: \(cpuModel), \(logicalCPUs) CPUs, \(format(memoryGiB, 1)) GiB, \(operatingSystem), load average \(format(loadAverage))"
    }
}

/// `rows` (the first one the header) as aligned text lines: the first
/// `leftAligned` columns left-aligned, the others right-aligned, two spaces
/// between.
func alignedTable(_ rows: [[String]], leftAligned: Int = 1) -> [String] {
    let columns = rows.map(\.count).max() ?? 0
    let widths = (0..<columns).map { column in rows.map { column < $0.count ? $0[column].count : 0 }.max() ?? 0 }
    return rows.map { row in
        row.indices.map { column in
            let pad = String(repeating: " ", count: widths[column] - row[column].count)
            return column < leftAligned ? row[column] + pad : pad + row[column]
        }.joined(separator: "  ")
    }
}
