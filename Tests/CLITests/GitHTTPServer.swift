import Foundation
import Glibc
import TestRigs

/// A git server over HTTP on 127.0.0.1 that wants Basic auth: git's own
/// `git http-backend` behind a few lines of Python's http.server (both
/// Debian's), serving the bare repositories of one folder. Started on a
/// port the kernel picks, stopped by PID.
final class GitHTTPServer {
    let process: RunningCLI
    let port: Int
    /// The repositories' folder (GIT_PROJECT_ROOT).
    let root: String
    var url: String { "http://127.0.0.1:\(port)" }

    static let python = "/usr/bin/python3"
    static let backend = "/usr/lib/git-core/git-http-backend"

    /// The CGI gateway: 401 with a Basic challenge unless the request
    /// carries `user:password`; else http-backend's answer.
    static let script = #"""
        import base64, http.server, os, subprocess, sys
        root, user, password, port_file, backend = sys.argv[1:6]
        expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        class Gateway(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self): self.gateway()
            def do_POST(self): self.gateway()
            def gateway(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if self.headers.get("Authorization") != expected:
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="touchstone-test"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                path, _, query = self.path.partition("?")
                env = {"GIT_PROJECT_ROOT": root, "GIT_HTTP_EXPORT_ALL": "1", "PATH_INFO": path,
                       "QUERY_STRING": query, "REQUEST_METHOD": self.command, "REMOTE_USER": user,
                       "REMOTE_ADDR": "127.0.0.1", "CONTENT_LENGTH": str(len(body)),
                       "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                       "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                       "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", "")}
                out = subprocess.run([backend], input=body, env=env, capture_output=True).stdout
                sep = b"\r\n\r\n" if b"\r\n\r\n" in out else b"\n\n"
                head, _, rest = out.partition(sep)
                status, headers = 200, []
                for line in head.decode().splitlines():
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(rest)))
                self.end_headers()
                self.wfile.write(rest)
            def log_message(self, *args): pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Gateway)
        with open(port_file + ".tmp", "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(port_file + ".tmp", port_file)
        server.serve_forever()
        """#

    /// Starts the server for `root`'s repositories, accepting only `user`
    /// with `password` (given on argv: a test's throwaway password), and
    /// waits until it listens.
    init(root: String, user: String, password: String, scratch: String) throws {
        self.root = root
        let scriptPath = scratch + "/git-http-gateway.py"
        let portFile = scratch + "/git-http-port"
        try Self.script.write(toFile: scriptPath, atomically: true, encoding: .utf8)
        process = try CLIProcess.start([scriptPath, root, user, password, portFile, Self.backend],
                                       environment: ["PATH": "/usr/bin:/bin"], scratch: scratch, program: Self.python)
        let deadline = Date().addingTimeInterval(30)
        var port: Int?
        while port == nil && Date() < deadline && process.poll() == nil {
            port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0) }
            if port == nil { usleep(20_000) }
        }
        guard let port else {
            process.signal(SIGKILL)
            throw RigFailure("the git HTTP server did not start: \(process.wait(timeout: 5).stderr)")
        }
        self.port = port
    }

    /// Stops it (SIGTERM, then waits for the exit).
    func stop() {
        process.signal(SIGTERM)
        _ = process.wait(timeout: 10)
    }

    /// A bare repository `name` with one commit holding `file` = `content`,
    /// made with plain git (no server, no credentials).
    static func makeRepository(_ name: String, in root: String, file: String, content: String, git: GitRig) throws {
        let work = root + "/" + name + ".work"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        try content.write(toFile: work + "/" + file, atomically: true, encoding: .utf8)
        let identity = ["-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "init.defaultBranch=main"]
        for step in [["init", "-q", work], ["-C", work, "add", file], ["-C", work, "commit", "-q", "-m", "first"],
                     ["clone", "-q", "--bare", work, root + "/" + name + ".git"]] {
            let result = git.run(identity + step)
            guard result.code == 0 else { throw RigFailure("git \(step.joined(separator: " ")): \(result.stderr)") }
        }
    }
}
