import Foundation
import Testing

/// Every claim in docs/threat-model.md (and the other documents) names the
/// test that shows it. A name that no longer exists (a test renamed, moved
/// or deleted) would leave the claim standing on nothing: each backticked
/// `SuiteTests` or `SuiteTests.test` in docs/*.md and README.md must name a
/// test target, or a type and then types or functions declared in Tests/.
@Suite("The tests the documents name exist")
struct DocumentedTestNamesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// What Tests/ declares: its target folders, the types (and extensions)
    /// and the functions of its Swift files.
    struct Declared {
        var targets: Set<String> = []
        var types: Set<String> = []
        var functions: Set<String> = []

        static func scan(_ tests: URL) throws -> Declared {
            var declared = Declared()
            let fileManager = FileManager.default
            for target in try fileManager.contentsOfDirectory(atPath: tests.path) {
                var isFolder: ObjCBool = false
                if fileManager.fileExists(atPath: tests.appendingPathComponent(target).path, isDirectory: &isFolder),
                   isFolder.boolValue {
                    declared.targets.insert(target)
                }
            }
            let files = fileManager.enumerator(atPath: tests.path)?.compactMap { $0 as? String } ?? []
            for file in files where file.hasSuffix(".swift") {
                let source = try String(contentsOf: tests.appendingPathComponent(file), encoding: .utf8)
                declared.types.formUnion(Self.names(after: ["struct", "class", "enum", "actor", "extension"], in: source))
                declared.functions.formUnion(Self.names(after: ["func"], in: source))
            }
            return declared
        }

        /// The identifiers that follow one of `keywords` in Swift source.
        static func names(after keywords: [String], in source: String) -> [String] {
            let words = source.split(whereSeparator: { !($0.isLetter || $0.isNumber || $0 == "_") })
            var found: [String] = []
            for (index, word) in words.enumerated() where keywords.contains(String(word)) && index + 1 < words.count {
                found.append(String(words[index + 1]))
            }
            return found
        }

        /// Whether `reference` (`Suite`, `Suite.test`, `Suite.Nested.test`)
        /// names something declared.
        func declares(_ reference: String) -> Bool {
            let parts = reference.split(separator: ".").map(String.init)
            guard let first = parts.first, targets.contains(first) || types.contains(first) else { return false }
            return parts.dropFirst().allSatisfy { types.contains($0) || functions.contains($0) }
        }
    }

    /// The backticked test names in a document: a word ending in `Tests`,
    /// optionally followed by `.name` parts, alone between backticks.
    static func references(in text: String) -> [String] {
        var found: [String] = []
        for span in text.split(separator: "`", omittingEmptySubsequences: false).enumerated()
        where span.offset % 2 == 1 {
            let candidate = String(span.element)
            let parts = candidate.split(separator: ".", omittingEmptySubsequences: false)
            guard let first = parts.first, first.hasSuffix("Tests"), first.first?.isUppercase == true,
                  parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" } })
            else { continue }
            found.append(candidate)
        }
        return found
    }

    static func documents() throws -> [URL] {
        let docs = root.appendingPathComponent("docs")
        let names = try FileManager.default.contentsOfDirectory(atPath: docs.path).filter { $0.hasSuffix(".md") }.sorted()
        return names.map { docs.appendingPathComponent($0) } + [root.appendingPathComponent("README.md")]
    }

    @Test("every test docs/*.md and README.md name is declared in Tests/; the threat model names over a hundred")
    func everyNamedTestExists() throws {
        let declared = try Declared.scan(Self.root.appendingPathComponent("Tests"))
        var missing: [String] = []
        var counts: [String: Int] = [:]
        for document in try Self.documents() {
            let text = try String(contentsOf: document, encoding: .utf8)
            let references = Self.references(in: text)
            counts[document.lastPathComponent] = references.count
            missing += references.filter { !declared.declares($0) }.map { "\(document.lastPathComponent): `\($0)`" }
        }
        #expect(missing.isEmpty, "documents name tests that do not exist:\n\(missing.joined(separator: "\n"))")
        // The scan finds what is there: the threat model's claims each name tests.
        #expect((counts["threat-model.md"] ?? 0) > 100, "\(counts)")
        #expect(declared.declares("VaultTamperTests.otherTPM"))
        #expect(declared.declares("VirtualReaderTests.ImageReader"))
    }

    @Test("a renamed or made-up test is caught, in whatever part of the name it is wrong")
    func madeUpNamesCaught() throws {
        let declared = try Declared.scan(Self.root.appendingPathComponent("Tests"))
        let text = "shown by `VaultTamperTests.otherTPM`, `VaultTamperTests.otherTPMs`, `NoSuchTests`, "
            + "`NoSuchTests.otherTPM`, `VirtualReaderTests.NoSuch.thing`, `CLITests` and `swift test`"
        let references = Self.references(in: text)
        #expect(references == ["VaultTamperTests.otherTPM", "VaultTamperTests.otherTPMs", "NoSuchTests",
                               "NoSuchTests.otherTPM", "VirtualReaderTests.NoSuch.thing", "CLITests"])
        #expect(references.filter { !declared.declares($0) }
            == ["VaultTamperTests.otherTPMs", "NoSuchTests", "NoSuchTests.otherTPM", "VirtualReaderTests.NoSuch.thing"])
    }
}
