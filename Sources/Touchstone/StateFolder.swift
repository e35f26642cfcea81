import Foundation
import TouchstoneVault

/// The state folder's own checks, for front ends that want to report a
/// folder they cannot use before anything else.
public enum StateFolder {
    /// Checks an existing state folder: a directory, private (not readable
    /// by group or others), which this user may read and search. Returns
    /// nil when it does not exist, else whether it is writable (false: on
    /// a read-only file system). A refusal carries the command that fixes
    /// it, when one does (`chmod 700 PATH`).
    public static func check(_ home: URL) throws(StorageFailure) -> Bool? {
        try Vault.checkStateDirectory(home)
    }
}
