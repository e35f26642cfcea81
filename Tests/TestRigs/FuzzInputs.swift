import Foundation

/// The committed inputs of a fuzz target (scripts/fuzz): its seeds in
/// `fuzz/seeds/<target>/` and the inputs that once crashed it in
/// `fuzz/crashes/<target>/`, where libFuzzer writes them. The replay tests
/// run each through the same function the fuzzer calls, so an input that
/// crashed once stays a regression test.
package enum FuzzInputs {
    /// The repository's `fuzz/` folder, found from this file's path.
    package static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz")

    package struct Input: Sendable, CustomStringConvertible {
        /// "seeds/<target>/<name>" or "crashes/<target>/<name>".
        package let path: String
        package let bytes: [UInt8]
        package var isSeed: Bool { path.hasPrefix("seeds/") }
        package var description: String { path }
    }

    /// Every file (not starting with a dot) of the target's seeds and
    /// crashes, by path.
    package static func inputs(_ target: String) throws -> [Input] {
        var out: [Input] = []
        for kind in ["seeds", "crashes"] {
            let directory = folder.appendingPathComponent(kind).appendingPathComponent(target)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { continue }
            for name in names.sorted() where !name.hasPrefix(".") {
                let bytes = try Data(contentsOf: directory.appendingPathComponent(name))
                out.append(Input(path: "\(kind)/\(target)/\(name)", bytes: [UInt8](bytes)))
            }
        }
        return out
    }
}
