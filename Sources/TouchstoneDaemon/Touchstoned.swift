import Foundation
import Touchstone
import TouchstoneCommandLine
import TouchstoneServer
#if canImport(Glibc)
import Glibc
#endif

/// `touchstoned`: the daemon engine's server (docs/daemon.md). In the
/// foreground, logging to stderr; SIGTERM or SIGINT ends it (exit 0).
@main
struct Touchstoned {
    static let usage = """
        usage: touchstoned [--home DIR] [--tpm TCTI] [--reader WHICH] [--sim] [--socket PATH] [--timeout SECONDS]

        Serves Touchstone's daemon engine on a Unix socket: one state folder per client uid
        under DIR/users, opened with this daemon's TPM and reader. Runs in the foreground
        as whichever user starts it and logs to stderr; SIGTERM or SIGINT ends it.

          --home DIR         the daemon's state folder (default /var/lib/touchstone)
          --tpm TCTI         a tss2 TCTI string, or 'sim' for the swtpm of DIR/sim (default device:/dev/tpmrm0)
          --reader WHICH     'auto' (default), 'sim' (the virtual reader at DIR/sim/reader), or a reader id
          --sim              the same as --tpm sim --reader sim
          --socket PATH      where to listen (default /run/touchstone/socket, or the socket systemd passes)
          --timeout SECONDS  how long a client may stay silent: between requests, within a frame,
                             before answering a passcode prompt (default 30)
          -h, --help         show this help
          --version          show the version
        """

    struct Options {
        var home = "/var/lib/touchstone"
        var tpm: String?
        var reader: String?
        var socket: String?
        var timeout = 30.0
    }

    static func main() {
        let options: Options
        do {
            options = try parse(Array(CommandLine.arguments.dropFirst()))
        } catch let error as UsageError {
            FileHandle.standardError.write(Data("touchstoned: \(error.text)\n\(usage)\n".utf8))
            exit(64)
        } catch {
            exit(64)
        }
        signal(SIGPIPE, SIG_IGN)
        let home = URL(fileURLWithPath: options.home)
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
        let server: DaemonServer
        do {
            server = try DaemonServer(settings: settings) { line in
                FileHandle.standardError.write(Data("touchstoned: \(line)\n".utf8))
            }
        } catch {
            listener.close()
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
        server.serve(listener: listener.fd)
        listener.close()
        FileHandle.standardError.write(Data("touchstoned: stopped\n".utf8))
        withExtendedLifetime(stops) {}
        exit(0)
    }

    struct UsageError: Error { let text: String }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var rest = arguments[...]
        func value(_ name: String) throws -> String {
            guard let value = rest.popFirst(), !value.isEmpty else { throw UsageError(text: "\(name) needs a value") }
            return value
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--home": options.home = try value(argument)
            case "--tpm": options.tpm = try value(argument)
            case "--reader": options.reader = try value(argument)
            case "--sim":
                options.tpm = "sim"
                options.reader = "sim"
            case "--socket": options.socket = try value(argument)
            case "--timeout":
                let text = try value(argument)
                guard let seconds = Double(text), seconds > 0, seconds <= 3600 else {
                    throw UsageError(text: "--timeout needs seconds: more than 0, at most 3600, not '\(text)'")
                }
                options.timeout = seconds
            case "-h", "--help":
                print(usage)
                exit(0)
            case "--version":
                print("touchstoned \(CommandLineParser.version)")
                exit(0)
            default: throw UsageError(text: "unknown argument '\(argument)'")
            }
        }
        guard options.home.hasPrefix("/") else { throw UsageError(text: "--home needs an absolute path") }
        return options
    }

    /// Creates the state folder (0700) if it is missing; refuses one that
    /// others may read.
    static func makeStateFolder(_ path: String) throws {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw UsageError(text: "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { throw UsageError(text: "\(path) is not a folder") }
        guard info.st_uid == geteuid() else { throw UsageError(text: "\(path) belongs to uid \(info.st_uid), not to this daemon's (\(geteuid()))") }
        guard info.st_mode & 0o077 == 0 else {
            throw UsageError(text: "\(path) is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); chmod 700 it")
        }
    }

    static func fail(_ message: String) -> Never {
        FileHandle.standardError.write(Data("touchstoned: \(message)\n".utf8))
        exit(1)
    }
}

extension Touchstoned.UsageError: CustomStringConvertible { var description: String { text } }
