import Foundation
import TouchstoneSimulator
import Glibc
import TestRigs
import TouchstoneTPM

/// Commands that run a touchstone process in a harsher world than the
/// test's, for `CLISandbox.run(_:wrapper:)`. Each works as root (CI) and as
/// a normal user; none skips: a missing tool or right is a test failure.
enum Confinement {
    /// Runs it without the privileges that ignore permission bits. Root
    /// reads any folder whatever its mode (CAP_DAC_OVERRIDE,
    /// CAP_DAC_READ_SEARCH), so as root the child gets no capabilities at
    /// all (setpriv, util-linux); a normal user has none to drop.
    static func withoutPrivileges() throws -> [String] {
        guard geteuid() == 0 else { return [] }
        return [try tool("setpriv"), "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"]
    }

    /// Runs it in a private mount namespace where `folder` is a read-only
    /// bind mount of itself; the mount vanishes with the process, so nothing
    /// is left mounted whatever happens to the test. As root: unshare(1).
    /// As a normal user: a user namespace (unshare --map-root-user), or,
    /// where those are off, sudo -n, dropping back to this user before
    /// running touchstone (with `environment` passed on, since sudo clears
    /// it; it holds no secret).
    static func readOnly(_ folder: String, environment: [String: String]) throws -> [String] {
        let unshare = try tool("unshare")
        let namespace = ["--mount", "--propagation", "private", "--"]
        let remount = #"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@""#
        if geteuid() == 0 {
            return [unshare] + namespace + [try tool("sh"), "-c", remount, folder]
        }
        let userNamespace = [unshare, "--user", "--map-root-user"] + namespace
        if (try? Swtpm.run(userNamespace[0], Array(userNamespace.dropFirst()) + ["true"])) == 0 {
            return userNamespace + [try tool("sh"), "-c", remount, folder]
        }
        let dropBack = #"mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && u=$1 g=$2 && shift 2 && exec setpriv --reuid="$u" --regid="$g" --clear-groups -- "$@""#
        return [try tool("sudo"), "-n", unshare] + namespace + [try tool("sh"), "-c", dropBack, folder,
                "\(getuid())", "\(getgid())", try tool("env"), "-i"] + environment.map { "\($0.key)=\($0.value)" }.sorted()
    }

    static func tool(_ name: String) throws -> String {
        guard let path = Swtpm.which(name) else {
            throw RigFailure("\(name) is missing (scripts/install-deps installs util-linux and mount)")
        }
        return path
    }
}
