import Foundation
import TouchstoneSimulator
import Testing
import TouchstoneTPM

@Suite("udev rules and their install command")
struct UdevRulesTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    @Test("install --dry-run writes the rules and a hwdb of exactly libfprint's supported readers, which systemd-hwdb compiles strictly")
    func dryRun() throws {
        var template = Array("/tmp/ts-udev-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let destdir = String(cString: try #require(made))
        defer { try? FileManager.default.removeItem(atPath: destdir) }
        var env = ProcessInfo.processInfo.environment
        env["DESTDIR"] = destdir
        let status = try Swtpm.run(Self.root + "/udev/install", ["--dry-run"], output: destdir + "/out", environment: env)
        #expect(status == 0)

        let rules = try String(contentsOfFile: destdir + "/etc/udev/rules.d/70-touchstone.rules", encoding: .utf8)
        let active = rules.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
        #expect(active.count == 2)
        #expect(active.allSatisfy { $0.contains("TAG+=\"uaccess\"") })
        #expect(active.contains { $0.contains("KERNEL==\"tpmrm[0-9]*\"") })
        #expect(!active.contains { $0.contains("MODE=") || $0.contains("GROUP=") || $0.contains("KERNEL==\"tpm[0-9]*\"") })

        // Exactly the supported section of libfprint's list.
        let source = try ["/usr/lib/udev/hwdb.d/60-autosuspend-libfprint-2.hwdb", "/lib/udev/hwdb.d/60-autosuspend-libfprint-2.hwdb"]
            .first { FileManager.default.fileExists(atPath: $0) }
            .map { try String(contentsOfFile: $0, encoding: .utf8) }
        let libfprint = try #require(source, "libfprint's hwdb is missing")
        let supportedPart = libfprint.components(separatedBy: "# Known unsupported devices")[0]
        let supported = Set(supportedPart.split(separator: "\n").filter { $0.hasPrefix("usb:") }.map(String.init))
        let hwdb = try String(contentsOfFile: destdir + "/etc/udev/hwdb.d/61-touchstone-fingerprint.hwdb", encoding: .utf8)
        let matched = Set(hwdb.split(separator: "\n").filter { $0.hasPrefix("usb:") }.map(String.init))
        #expect(!supported.isEmpty)
        #expect(matched == supported)

        let hwdbTool = try #require(Swtpm.which("systemd-hwdb"), "systemd-hwdb is missing (apt-get install udev)")
        #expect(try Swtpm.run(hwdbTool, ["--root=\(destdir)", "update", "--strict"], output: destdir + "/hwdb-out") == 0)
        #expect(FileManager.default.fileExists(atPath: destdir + "/etc/udev/hwdb.bin"))
    }
}
