import FoundationEssentials
import Glibc
import Synchronization
import TouchstonePOSIX

/// The controlling terminal (/dev/tty), when the process has one, and its
/// echo switch for passcode entry.
///
/// The settings saved before echo was turned off are kept process-wide, so
/// that an exit forced by a second Ctrl-C still restores them.
package enum Terminal {
    private static let saved = SavedSettings()

    /// /dev/tty, open, or nil without a controlling terminal.
    static func open() -> Handle? {
        guard let descriptor = try? OwnedDescriptor.open("/dev/tty", O_RDWR | O_NOCTTY) else { return nil }
        return Handle(descriptor)
    }

    /// The controlling terminal, open; closed when the last reference goes.
    package final class Handle: Sendable {
        private let descriptor: OwnedDescriptor
        /// Its number, for a call made while this lives.
        package var fd: Int32 { descriptor.rawValue }

        init(_ descriptor: consuming OwnedDescriptor) { self.descriptor = descriptor }
    }

    /// Turns echo off on `fd` (a terminal) until `restoreEcho` is called,
    /// discarding input typed and not yet read (TCSAFLUSH): call it before
    /// showing the prompt, never after, or the answer typed to the prompt
    /// can be thrown away (and echoed).
    static func disableEcho(_ fd: Int32) {
        var settings = termios()
        guard tcgetattr(fd, &settings) == 0 else { return }
        saved.store(fd, settings)
        settings.c_lflag &= ~tcflag_t(ECHO)
        _ = tcsetattr(fd, TCSAFLUSH, &settings)
    }

    /// Restores what `disableEcho` changed (no-op if nothing was changed).
    static func restoreEcho() {
        guard let (fd, settings) = saved.take() else { return }
        var original = settings
        _ = tcsetattr(fd, TCSAFLUSH, &original)
        _ = Glibc.write(fd, "\n", 1)
    }

    private final class SavedSettings: Sendable {
        private let value = Mutex<(Int32, termios)?>(nil)

        func store(_ fd: Int32, _ settings: termios) { value.withLock { $0 = (fd, settings) } }

        func take() -> (Int32, termios)? {
            value.withLock { value in
                defer { value = nil }
                return value
            }
        }
    }
}
