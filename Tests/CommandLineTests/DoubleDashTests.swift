import Testing
import TouchstoneCommandLine

@Suite("After --, every argument is positional")
struct DoubleDashTests {
    @Test("a service named --json is a service, not the option")
    func serviceLooksLikeOption() {
        guard let (command, options) = run(["add", "--", "--json", "acct"]) else { return }
        #expect(command == .add(service: "--json", account: "acct", access: .userPresence, label: nil, comment: nil))
        #expect(options.json == false)
    }

    @Test("-h after -- is an account, not a help request")
    func helpAfterDoubleDash() {
        #expect(run(["get", "s", "--", "-h"])?.0 == .get(service: "s", account: "-h", reason: nil))
    }

    @Test("-- before the command still finds the command")
    func beforeCommand() {
        #expect(run(["--", "status"])?.0 == .status)
        #expect(run(["--json", "--", "delete", "-", "--"])?.0 == .delete(service: "-", account: "--"))
    }

    @Test("options after -- are arguments, so they are extra here")
    func optionAfterDoubleDashIsExtra() {
        let error = usageError(["add", "--", "s", "a", "--label", "x"])
        #expect(error?.message == "unexpected argument '--label'")
    }

    @Test("an option's value is the next argument, whatever it is")
    func valueTakenVerbatim() {
        #expect(run(["add", "s", "a", "--label", "--"])?.0 == .add(service: "s", account: "a", access: .userPresence, label: "--", comment: nil))
        let labelled = run(["add", "s", "a", "--label", "--json"])
        #expect(labelled?.0 == .add(service: "s", account: "a", access: .userPresence, label: "--json", comment: nil))
        #expect(labelled?.1.json == false)
    }

    @Test("a lone - is positional")
    func loneDash() {
        #expect(run(["delete", "-", "a"])?.0 == .delete(service: "-", account: "a"))
    }

    @Test("a second -- after the first is positional")
    func secondDoubleDash() {
        #expect(run(["delete", "--", "--", "a"])?.0 == .delete(service: "--", account: "a"))
    }

    @Test("-h as an option's value is the value, not a help request")
    func helpAsValue() {
        #expect(run(["add", "s", "a", "--label", "-h"])?.0 == .add(service: "s", account: "a", access: .userPresence, label: "-h", comment: nil))
    }
}
