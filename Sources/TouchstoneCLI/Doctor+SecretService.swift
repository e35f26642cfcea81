import Foundation
import Glibc
import Touchstone
import TouchstoneDBus
import TouchstonePOSIX

/// The Secret Service: who owns org.freedesktop.secrets on the session
/// bus, named by program, and whether D-Bus activation starts Touchstone's
/// provider for this user (scripts/install-secret-service).
extension Doctor {
    static let secretsName = "org.freedesktop.secrets"

    func secretService() async -> DoctorCheck {
        guard let address = sessionBusAddress else {
            return .notUsed(.secretService, "no session bus: DBUS_SESSION_BUS_ADDRESS is not set and there is no $XDG_RUNTIME_DIR/bus")
        }
        let bus: DBusBus
        do {
            bus = try await DBusBus(address: address)
        } catch {
            return .notUsed(.secretService, "the session bus (\(address)) cannot be reached: \(error)")
        }
        let owner = await bus.owner(of: Self.secretsName)
        await bus.close()
        let activation = ActivationFile(path: activationFilePath)
        if let broken = activation.broken {
            return .problem(.secretService, broken,
                            fix: "scripts/install-secret-service (it writes the file again for the touchstone on PATH, or --touchstone PATH)")
        }
        guard let owner else {
            guard let program = activation.touchstone else {
                return .notUsed(.secretService, "nobody owns \(Self.secretsName), and D-Bus would start no Touchstone provider "
                                + "(no \(activation.path)): scripts/install-secret-service makes it start when an app asks")
            }
            return .ok(.secretService, "nobody owns \(Self.secretsName) now; D-Bus starts Touchstone's provider (\(program) secret-service) when an app asks (\(activation.path))")
        }
        let program = owner.program
        let named = program?.description ?? "a connection whose program is not known"
        if let program, Self.isTouchstone(program) {
            let started = activation.touchstone == nil
                ? "started by hand: no activation file for this user (scripts/install-secret-service installs \(activation.path))"
                : "D-Bus activation installed (\(activation.path))"
            return .ok(.secretService, "Touchstone's provider owns \(Self.secretsName): \(named); \(started)")
        }
        return .problem(.secretService, "\(Self.secretsName) is owned by \(named) (\(owner.uniqueName)), not by Touchstone's provider",
                        fix: Self.takeOverFix(from: program))
    }

    /// How to move from the provider `program` to Touchstone's.
    private static func takeOverFix(from program: PeerProgram?) -> String {
        let importFirst = "touchstone import --from-secret-service (it copies that provider's items here), then "
        let executable = program.flatMap { $0.executable.map { ($0 as NSString).lastPathComponent } ?? $0.command } ?? ""
        if executable.hasPrefix("gnome-keyring") {
            return importFirst + "scripts/install-secret-service --replace-gnome-keyring, and log in again"
        }
        if executable.lowercased().hasPrefix("keepassxc") {
            return importFirst + "turn off KeePassXC's Secret Service integration (Tools > Settings > Secret Service Integration) and run touchstone secret-service"
        }
        let stop = program.map { "stop it (kill \($0.pid))" } ?? "stop it"
        return importFirst + "\(stop) and run touchstone secret-service, or take the name over with touchstone secret-service --replace where it lets go"
    }

    /// Whether `program` is a touchstone command (the dispatcher runs
    /// touchstone-cli).
    static func isTouchstone(_ program: PeerProgram) -> Bool {
        let name = program.executable.map { ($0 as NSString).lastPathComponent } ?? program.command ?? ""
        return name == "touchstone" || name == "touchstone-cli"
    }

    /// The session bus's address: DBUS_SESSION_BUS_ADDRESS, else the
    /// socket `$XDG_RUNTIME_DIR/bus` (systemd's); nil when neither is
    /// there. Never an autolaunch.
    var sessionBusAddress: String? {
        if let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty { return address }
        guard let runtime = absolutePath("XDG_RUNTIME_DIR") else { return nil }
        var info = stat()
        let socket = runtime + "/bus"
        return stat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK ? "unix:path=" + socket : nil
    }

    /// Where scripts/install-secret-service puts the activation file.
    var activationFilePath: String {
        let data = absolutePath("XDG_DATA_HOME") ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.local/share")
        return data + "/dbus-1/services/\(Self.secretsName).service"
    }
}

/// A D-Bus activation file for org.freedesktop.secrets in the user's
/// services folder, as far as doctor needs it: whether it starts
/// Touchstone's provider, and with which program.
struct ActivationFile {
    let path: String
    /// The program its `Exec=` line runs, when the file is there.
    let program: String?
    /// Whether that line runs `secret-service` of a touchstone command.
    let startsTouchstone: Bool

    init(path: String) {
        self.path = path
        guard let text = try? String(contentsOfFile: path, encoding: .utf8),
              let exec = text.split(separator: "\n").first(where: { $0.hasPrefix("Exec=") }) else {
            program = nil
            startsTouchstone = false
            return
        }
        let words = exec.dropFirst("Exec=".count).split(separator: " ").map(String.init)
        program = words.first
        startsTouchstone = words.contains("secret-service") && (words.first.map { ($0 as NSString).lastPathComponent.hasPrefix("touchstone") } ?? false)
    }

    /// The touchstone it starts, when it starts Touchstone's provider.
    var touchstone: String? { startsTouchstone ? program : nil }

    /// What is wrong with it: Touchstone's, but its program is not there.
    var broken: String? {
        guard let program = touchstone, !FileManager.default.isExecutableFile(atPath: program) else { return nil }
        return "\(path) starts \(program) secret-service, and there is no such program"
    }
}
