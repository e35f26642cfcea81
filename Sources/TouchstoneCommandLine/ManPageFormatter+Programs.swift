/// The pages of the other two programs: touchstoned(8) and
/// git-credential-touchstone(1), from their own option tables.
extension ManPageFormatter {
    /// touchstoned(8): the daemon's usage, overview, options and files.
    static func touchstoned(date: String) -> ManPage {
        let name = TouchstonedCommandLine.programName
        var lines = header(name: name, section: 8, date: date, manual: "System Administration")
        lines += [".SH NAME", "touchstoned \\- " + Roff.escape("Touchstone's daemon: every user's vault, behind one TPM and reader")]
        lines += [".SH SYNOPSIS"]
        lines += TouchstonedCommandLine.usage.split(separator: " | ").enumerated().flatMap { index, form -> [String] in
            let rest = form.hasPrefix(name) ? String(form.dropFirst(name.count + 1)) : String(form)
            return (index == 0 ? [] : [".br"]) + [Roff.synopsis(command: name, rest: rest)]
        }
        lines += [".SH DESCRIPTION"] + paragraphs(TouchstonedCommandLine.overview)
        lines += [".SH OPTIONS"] + TouchstonedCommandLine.options.flatMap(option)
        lines += [".SH FILES"]
            + Roff.tagged(Roff.italic("/var/lib/touchstone"), "The default state folder: daemon.sqlite (gates, passcode throttle, accounts) and users/UID, one vault per client uid; 0700, the daemon's user's.")
            + Roff.tagged(Roff.italic("/run/touchstone/socket"), "The default socket, which clients look for.")
        lines += seeAlso(["touchstone(1)", "systemd.socket(5)", "sysusers.d(5)"])
        return ManPage(name: name, section: 8, source: lines.joined(separator: "\n") + "\n")
    }

    /// git-credential-touchstone(1): the helper's usage, how git runs it,
    /// and its options.
    static func gitCredential(date: String) -> ManPage {
        let name = GitCredentialCommandLine.programName
        let abstract = GitCredentialCommandLine.abstract
        var lines = header(name: name, section: 1, date: date, manual: "User Commands")
        // NAME's text: the abstract without its leading article and full stop.
        let whatis = abstract.hasPrefix("A ") ? String(abstract.dropFirst(2).dropLast()) : abstract
        lines += [".SH NAME", Roff.escape(name) + " \\- " + Roff.escape(whatis)]
        lines += [".SH SYNOPSIS", Roff.synopsis(command: name, rest: String(GitCredentialCommandLine.usage.dropFirst(name.count + 1)))]
        lines += [".SH DESCRIPTION"] + paragraphs(abstract) + paragraphs(GitCredentialCommandLine.discussion)
        lines += [".SH OPTIONS"] + GitCredentialCommandLine.options.flatMap(option)
        lines += seeAlso(["gitcredentials(7)", "git-credential(1)", "touchstone(1)"])
        return ManPage(name: name, section: 1, source: lines.joined(separator: "\n") + "\n")
    }
}
