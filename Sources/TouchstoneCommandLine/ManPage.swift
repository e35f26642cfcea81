/// One manual page: where man finds it and its roff source.
public struct ManPage: Sendable, Hashable {
    /// The page's name: `touchstone`.
    public let name: String
    /// Its section: 1 for user commands, 8 for the daemon.
    public let section: Int
    /// The roff source (man(7) macros), ending with a newline.
    public let source: String

    /// The file name under `manSECTION/`: `touchstone.1`.
    public var fileName: String { "\(name).\(section)" }

    /// Every page, made from the tables `--help` reads (`CommandTable`,
    /// `TouchstonedCommandLine`, `GitCredentialCommandLine`), so a page
    /// lists exactly what the help does. `date` goes in the pages' footer
    /// (the packaging gives the sources' date, so a build is reproducible).
    public static func all(date: String) -> [ManPage] {
        [ManPageFormatter.touchstone(date: date),
         ManPageFormatter.touchstoned(date: date),
         ManPageFormatter.gitCredential(date: date)]
    }
}
