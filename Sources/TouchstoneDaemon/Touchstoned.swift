import Foundation
import Touchstone
import TouchstoneCommandLine
import TouchstonePOSIX
import TouchstoneServer
#if canImport(Glibc)
import Glibc
#endif

/// `touchstoned`: the daemon engine's server (docs/daemon.md). In the
/// foreground, logging to stderr; SIGTERM or SIGINT ends it (exit 0).
@main
struct Touchstoned {
    static func main() {
        let options: TouchstonedCommandLine.Options
        switch TouchstonedCommandLine.parse(arguments: Array(CommandLine.arguments.dropFirst())) {
        case .run(let parsed): options = parsed
        case .help(let text):
            print(text)
            exit(0)
        case .version(let line):
            print(line)
            exit(0)
        case .usageError(let message, let usage):
            FileHandle.standardError.write(Data("touchstoned: error: \(message)\nusage: \(usage)\n".utf8))
            exit(64)
        case .checkPrints:
            PrintCheckChild.run()
        case .namePrograms:
            ProgramNamer.serve()
        }
        signal(SIGPIPE, SIG_IGN)
        let home = URL(fileURLWithPath: options.home)
        if let uid = options.removeUser { removeUser(uid, home: home) }
        // First, while this is the only thread: with CAP_SYS_PTRACE, the
        // program namer keeps it and this process drops every capability.
        let namer: ProgramNamer?
        do {
            namer = try ProgramNamer.startIfPrivileged(executable: "/proc/self/exe")
        } catch {
            fail("\(error)")
        }
        do {
            try makeStateFolder(home.path)
        } catch {
            fail("\(error)")
        }
        let simulator = Simulator(home: home)
        let tpm: TPMSelection = switch options.tpm {
        case nil: .default
        case "sim": .tcti(simulator.tcti)
        case let tcti?: .tcti(tcti)
        }
        let reader: ReaderSelection = switch options.reader {
        case nil, "auto": .automatic
        case "sim": .virtual(socket: simulator.readerSocket)
        case let id?: .id(id)
        }
        let listener: Listener
        do {
            listener = try Listener.open(options.socket)
        } catch {
            fail("\(error)")
        }
        var settings = DaemonServer.Settings(home: home, tpm: tpm, reader: reader, timeout: .seconds(options.timeout))
        if options.reader == "sim" { settings.readerChoice = "sim" }
        settings.programNamer = namer
        let server: DaemonServer
        do {
            server = try DaemonServer(settings: settings) { line in
                FileHandle.standardError.write(Data("touchstoned: \(line)\n".utf8))
            }
        } catch {
            listener.removeSocketFile()
            fail("cannot open the daemon's database in \(home.path): \(error)")
        }
        var stops: [any DispatchSourceSignal] = []
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { server.stop() }
            source.resume()
            stops.append(source)
        }
        FileHandle.standardError.write(Data("touchstoned: listening on \(listener.path) (state \(home.path), TPM \(tpm), reader \(reader))\n".utf8))
        server.serve(listener: listener.descriptor)
        listener.removeSocketFile()
        FileHandle.standardError.write(Data("touchstoned: stopped\n".utf8))
        withExtendedLifetime(stops) {}
        exit(0)
    }

    /// Creates the state folder (0700) if it is missing; refuses one that
    /// others may read.
    struct SetupError: Error, CustomStringConvertible { let description: String }

    static func makeStateFolder(_ path: String) throws(SetupError) {
        do {
            _ = try valueOrErrno(retryOnInterrupt: false) { mkdir(path, 0o700) }
        } catch .fileExists {
        } catch {
            throw SetupError(description: "cannot create \(path): \(error)")
        }
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { throw SetupError(description: "\(path) is not a folder") }
        guard info.st_uid == geteuid() else { throw SetupError(description: "\(path) belongs to uid \(info.st_uid), not to this daemon's (\(geteuid()))") }
        guard info.st_mode & 0o077 == 0 else {
            throw SetupError(description: "\(path) is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 700 it")
        }
    }

    /// `--remove-user UID`: deletes that uid's vault, gate and throttle, and exits.
    static func removeUser(_ uid: UInt32, home: URL) -> Never {
        do {
            let (account, folder) = try DaemonServer.removeUser(uid, home: home)
            guard account != nil || folder else { fail("no vault for uid \(uid) in \(home.path)") }
            print("removed uid \(uid)'s vault" + (account.map { " (made for the account '\($0)')" } ?? "") + " from \(home.path)")
            exit(0)
        } catch {
            fail("cannot remove uid \(uid)'s vault from \(home.path): \(error)")
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("touchstoned: \(message)\n".utf8))
        exit(1)
    }
}


