import Foundation

/// The committed inputs of a fuzz target (scripts/fuzz): its seeds in
/// `fuzz/seeds/<target>/` and the inputs that once crashed it in
/// `fuzz/crashes/<target>/`, where libFuzzer writes them. The replay tests
/// run each through the same function the fuzzer calls, so an input that
/// crashed once stays a regression test.
public enum FuzzInputs {
    /// The repository's `fuzz/` folder, found from this file's path.
    public static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("fuzz")

    public struct Input: Sendable, CustomStringConvertible {
        /// "seeds/<target>/<name>" or "crashes/<target>/<name>".
        public let path: String
        public let bytes: [UInt8]
        public var isSeed: Bool { path.hasPrefix("seeds/") }
        public var description: String { path }
    }

    /// Every file (not starting with a dot) of the target's seeds and
    /// crashes, by path.
    public static func inputs(_ target: String) throws -> [Input] {
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
