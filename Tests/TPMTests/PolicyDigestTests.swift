import Foundation
import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneTPM
import TestRigs

@Suite("Policy digests and command counts", .offPool)
struct PolicyDigestTests {
    @Test("known answer: PolicyAuthValue from the empty policy (TPM 2.0 Part 3 / tpm2-tools)")
    func knownAnswer() {
        var d = PolicyDigest()
        d.policyAuthValue()
        #expect(d.description == "8fcd2169ab92694e0c633f1ab772842b8241bbc20288981fc7ac1eddc1fddb0e")
    }

    @Test("the software digests equal what tpm2-tools builds with trial sessions on the TPM", arguments: [false, true])
    func matchesTrialSessions(bindPCR7: Bool) throws {
        try withSwtpm { rig, tpm in
            let enrolled = try Enrolled(tpm)
            var condition = enrolled.condition
            condition.bindPCR7 = bindPCR7
            let blob = try tpm.seal(randomKey(), policy: .biometricOrPasscode(condition), passcode: rightPasscode)
            let ours = TPM.authPolicy(blob.policy, nvName: blob.nvName, pcr7: blob.pcr7Value)

            let dir = rig.directory
            try Data(enrolled.state).write(to: URL(fileURLWithPath: dir + "/state.bin"))
            func tool(_ name: String, _ args: [String]) throws {
                let (status, output) = try tpm2Tool(rig, name, args, in: dir)
                try #require(status == 0, "\(name) \(args) failed: \(output)")
            }
            // Branch A: [PolicyPCR(sha256:7)] + PolicyNV(owner, index, state, eq).
            try tool("tpm2_startauthsession", ["-S", "a.ctx"])
            if bindPCR7 { try tool("tpm2_policypcr", ["-S", "a.ctx", "-l", "sha256:7"]) }
            try tool("tpm2_policynv", ["-S", "a.ctx", "-C", "o", "-i", "state.bin", "-L", "a.pol",
                                       "0x" + String(enrolled.index, radix: 16), "eq"])
            try tool("tpm2_flushcontext", ["a.ctx"])
            // Branch B: PolicyAuthValue.
            try tool("tpm2_startauthsession", ["-S", "b.ctx"])
            try tool("tpm2_policyauthvalue", ["-S", "b.ctx", "-L", "b.pol"])
            try tool("tpm2_flushcontext", ["b.ctx"])
            // PolicyOR(A, B).
            try tool("tpm2_startauthsession", ["-S", "or.ctx"])
            try tool("tpm2_policyor", ["-S", "or.ctx", "-L", "or.pol", "sha256:a.pol,b.pol"])
            try tool("tpm2_flushcontext", ["or.ctx"])

            let theirs = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/or.pol")))
            #expect(hexString(theirs) == ours.description)
            let branchA = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir + "/a.pol")))
            #expect(hexString(branchA) == TPM.biometricBranch(condition, nvName: blob.nvName, pcr7: blob.pcr7Value).description)
        }
    }

    @Test("the index's own policy (PolicyAuthValue + PolicyCommandCode(NV_ChangeAuth)) matches tpm2-tools")
    func indexPolicy() throws {
        try withSwtpm { rig, _ in
            func tool(_ name: String, _ args: [String]) throws {
                let (status, output) = try tpm2Tool(rig, name, args, in: rig.directory)
                try #require(status == 0, "\(name) failed: \(output)")
            }
            try tool("tpm2_startauthsession", ["-S", "s.ctx"])
            try tool("tpm2_policyauthvalue", ["-S", "s.ctx"])
            try tool("tpm2_policycommandcode", ["-S", "s.ctx", "-L", "s.pol", "TPM2_CC_NV_ChangeAuth"])
            try tool("tpm2_flushcontext", ["s.ctx"])
            let theirs = try [UInt8](Data(contentsOf: URL(fileURLWithPath: rig.directory + "/s.pol")))
            #expect(hexString(theirs) == TPM.enrollmentIndexPolicy().description)
        }
    }

    @Test("TPM commands per unseal: at most 8 through the biometric branch (with PCR 7), at most 7 through the passcode branch")
    func commandCounts() throws {
        try withSwtpm { _, tpm in
            let enrolled = try Enrolled(tpm)
            var condition = enrolled.condition
            condition.bindPCR7 = true
            let blob = try tpm.seal(randomKey(), policy: .biometricOrPasscode(condition), passcode: rightPasscode)
            _ = try tpm.unseal(blob, via: .biometric)  // handles now known to this instance
            var before = tpm.commandCount
            _ = try tpm.unseal(blob, via: .biometric)
            let biometric = tpm.commandCount - before
            before = tpm.commandCount
            _ = try tpm.unseal(blob, via: .passcode(rightPasscode))
            let passcode = tpm.commandCount - before
            #expect(biometric <= 8, "biometric unseal took \(biometric) commands")
            #expect(passcode <= 7, "passcode unseal took \(passcode) commands")
        }
    }
}
