#if TOUCHSTONE_TEST_SUPPORT
import FoundationEssentials

/// The body of the `DaemonFrame` fuzz target, here so that the libFuzzer
/// entry (fuzz/DaemonFrame.swift, built by scripts/fuzz) and the regression
/// test that replays every committed input (TouchstoneTests,
/// DaemonFrameFuzzReplayTests) run the very same code.
extension DaemonWire {
    /// The request type of every operation (`Calls`), by name: what the
    /// daemon's registry (`EngineOperations.all`, in the Touchstone module,
    /// which the fuzz build cannot take) serves. A test checks that the
    /// registry names no operation missing here.
    package static let fuzzRequestTypes: [String: any EngineRequest.Type] = {
        let types: [any EngineRequest.Type] = [
            Calls.Status.self, Calls.PasscodeIsSet.self, Calls.SetPasscode.self, Calls.ChangePasscode.self,
            Calls.RemovePasscode.self, Calls.EnrolledFingers.self, Calls.Enroll.self, Calls.Unenroll.self,
            Calls.ImportFingers.self, Calls.SetMatchingTouches.self, Calls.Availability.self, Calls.DomainState.self,
            Calls.Authenticate.self,
            Calls.Add.self, Calls.OpenAccess.self, Calls.Secret.self, Calls.GetSecret.self, Calls.Update.self,
            Calls.Delete.self, Calls.Items.self, Calls.Attributes.self, Calls.Search.self, Calls.AddItem.self,
            Calls.Item.self, Calls.OpenItemAccess.self, Calls.ItemSecret.self, Calls.UpdateItem.self,
            Calls.DeleteItem.self, Calls.CreateSSHKey.self, Calls.SSHKeys.self, Calls.DeleteSSHKey.self,
            Calls.SSHKeyOpenAccess.self, Calls.SignSSH.self,
            Calls.CreateFIDOCredential.self, Calls.FIDOCredentials.self, Calls.DeleteFIDOCredential.self, Calls.AssertFIDO.self,
            Calls.MakeFIDOCredential.self, Calls.DeleteFIDOCredentialByTouch.self, Calls.UpdateFIDOUser.self, Calls.ResetFIDO.self,
        ]
        return Dictionary(uniqueKeysWithValues: types.map { ($0.name, $0) })
    }()

    /// What the bytes of a frame body (without its length prefix) go
    /// through on either side of the socket: `Frame.parse`; then, by kind,
    /// what the daemon does with a client's frame (a request: its head,
    /// then the envelope of the operation it names; a reply) and what a
    /// client does with the daemon's (a response: the `Outcome` of every
    /// operation and a refusal; a prompt, an event, a cancel). Nothing
    /// traps. Returns nil, or the invariant an input broke: a frame that
    /// parses keeps to the limits and encodes back to the very bytes it
    /// came from; a request or a response that decodes encodes back to a
    /// frame that carries exactly the parsed frame's secrets and decodes
    /// again.
    package static func fuzzCheck(_ bytes: [UInt8]) -> String? {
        let frame: Frame
        do {
            frame = try Frame.parse(SecureBytes(copying: bytes))
        } catch {
            return nil
        }
        if let broken = fuzzFrameCheck(frame, bytes) { return broken }
        switch frame.kind {
        case .request:
            guard let head = try? frame.decode(RequestHeadOnly.self).head,
                  let type = fuzzRequestTypes[head.operation] else { return nil }
            return fuzzRequestCheck(type, frame, head)
        case .response:
            _ = try? frame.decode(Refusal.self)
            for type in fuzzRequestTypes.values {
                if let broken = fuzzResponseCheck(type, frame) { return broken }
            }
        case .reply:
            if let reply = try? frame.decode(DaemonReply.self), let broken = fuzzRoundTrip(.reply, reply, frame.secrets) {
                return broken
            }
        case .prompt:
            if let prompt = try? frame.decode(DaemonPrompt.self), let broken = fuzzRoundTrip(.prompt, prompt, []) { return broken }
        case .event:
            if let event = try? frame.decode(ScanEvent.self), let broken = fuzzRoundTrip(.event, event, []) { return broken }
        case .cancel:
            if let cancel = try? frame.decode(DaemonCancel.self), let broken = fuzzRoundTrip(.cancel, cancel, []) { return broken }
        }
        return nil
    }

    /// A parsed frame: within the limits, and its body is the input.
    static func fuzzFrameCheck(_ frame: Frame, _ bytes: [UInt8]) -> String? {
        guard frame.secrets.count <= maximumSecrets else { return "a parsed frame with \(frame.secrets.count) secrets" }
        guard frame.control.count <= maximumControl else { return "a parsed frame with a control part of \(frame.control.count) bytes" }
        guard frame.version == version else { return "a parsed frame of version \(frame.version)" }
        // The socket refuses a longer body before it is parsed.
        guard bytes.count <= maximumBody else { return nil }
        let body: SecureBytes
        do {
            body = try frame.body()
        } catch {
            return "a parsed frame that does not encode: \(error)"
        }
        guard fuzzBytes(body) == bytes else { return "a parsed \(frame.kind) frame that encodes to other bytes" }
        guard let again = try? Frame.parse(body) else { return "a parsed \(frame.kind) frame whose body does not parse" }
        guard again.kind == frame.kind, again.control == frame.control, again.secrets.map(fuzzBytes) == frame.secrets.map(fuzzBytes) else {
            return "a parsed \(frame.kind) frame that parses back to another"
        }
        return nil
    }

    /// A request frame decoded as the operation it names, as the daemon
    /// does; a request that decodes carries exactly the frame's secrets.
    static func fuzzRequestCheck<R: EngineRequest>(_ type: R.Type, _ frame: Frame, _ head: RequestHead) -> String? {
        guard let envelope = try? frame.decodeCarrying(RequestEnvelope<R>.self) else { return nil }
        guard envelope.head.operation == R.name else { return "a \(R.name) request whose envelope names \(envelope.head.operation)" }
        let encoded: Frame
        do {
            encoded = try Frame(request: envelope.request, program: envelope.head.program, interactive: envelope.head.interactive)
        } catch {
            return "a decoded \(R.name) request that does not encode: \(error)"
        }
        guard fuzzSameSecrets(encoded.secrets, frame.secrets) else {
            return "a decoded \(R.name) request that carries other secrets than its frame (\(encoded.secrets.count), \(frame.secrets.count))"
        }
        guard let body = try? encoded.body(), let parsed = try? Frame.parse(body),
              let again = try? parsed.decodeCarrying(RequestEnvelope<R>.self) else {
            return "a decoded \(R.name) request whose frame does not decode again"
        }
        guard again.head.operation == head.operation, again.head.program == head.program,
              again.head.interactive == head.interactive else {
            return "a decoded \(R.name) request whose head changes on the way"
        }
        return nil
    }

    /// A response frame decoded as operation `R`'s outcome, as a client
    /// that asked `R` does.
    static func fuzzResponseCheck<R: EngineRequest>(_ type: R.Type, _ frame: Frame) -> String? {
        guard let outcome = try? frame.decodeCarrying(Outcome<R>.self) else { return nil }
        let encoded: Frame
        do {
            encoded = try Frame(response: outcome)
        } catch {
            return "a decoded \(R.name) outcome that does not encode: \(error)"
        }
        guard fuzzSameSecrets(encoded.secrets, frame.secrets) else {
            return "a decoded \(R.name) outcome that carries other secrets than its frame"
        }
        guard let body = try? encoded.body(), let parsed = try? Frame.parse(body),
              (try? parsed.decodeCarrying(Outcome<R>.self)) != nil else {
            return "a decoded \(R.name) outcome whose frame does not decode again"
        }
        return nil
    }

    /// A decoded message encodes to a frame that decodes again.
    static func fuzzRoundTrip<T: Codable>(_ kind: Kind, _ value: T, _ secrets: [SecureBytes]) -> String? {
        guard let encoded = try? Frame(kind, value, secrets: secrets), let body = try? encoded.body(),
              let parsed = try? Frame.parse(body), (try? parsed.decode(T.self)) != nil else {
            return "a decoded \(T.self) whose frame does not decode again"
        }
        return nil
    }

    /// The frames of a daemon session, each as its body (what
    /// `Frame.parse` takes), by a file name: a request of every operation
    /// as `touchstone` sends it, the responses (a success of each kind of
    /// response, every operation's typed failure, a refusal), the prompts,
    /// replies, events and cancels. They are the `DaemonFrame` seeds
    /// (fuzz/seeds/DaemonFrame/, written by the replay test when
    /// TOUCHSTONE_WRITE_FUZZ_SEEDS is set).
    package static func fuzzSessionFrames() throws -> [(name: String, body: [UInt8])] {
        func secret(_ text: String) -> SecureBytes { SecureBytes(copying: Array(text.utf8)) }
        let grant = GrantReference(id: 7)
        let reference = ItemReference(id: 42)
        let attributes = ItemAttributes(service: "git:https://example.org", account: "alice", label: "Example",
                                        comment: "a note", generic: Data([1, 2, 3]), access: .userPresence,
                                        created: Date(timeIntervalSince1970: 1_760_000_000),
                                        modified: Date(timeIntervalSince1970: 1_760_000_100),
                                        searchAttributes: ["host": "example.org"], contentType: "text/plain")
        let requests: [any EngineRequest] = [
            Calls.Status(), Calls.PasscodeIsSet(), Calls.SetPasscode(passcode: secret("123456")),
            Calls.ChangePasscode(from: secret("123456"), to: secret("654321")), Calls.RemovePasscode(passcode: secret("654321")),
            Calls.EnrolledFingers(), Calls.Enroll(.rightIndex, passcode: secret("123456"), timeout: .seconds(30)),
            Calls.Unenroll(.rightIndex, passcode: secret("123456")), Calls.Unenroll(nil, passcode: secret("123456")),
            Calls.ImportFingers(driver: "virtual_device", deviceID: "0", fingers: [.leftThumb, .rightIndex],
                                prints: [secret("print one"), secret("print two")], passcode: secret("123456")),
            Calls.SetMatchingTouches(.two, passcode: secret("123456")),
            Calls.Availability(.deviceOwnerAuthentication), Calls.Availability(.deviceOwnerAuthenticationWithBiometrics),
            Calls.DomainState(),
            Calls.Authenticate(.userPresence, reason: "unlock the vault", interactionNotAllowed: false, touchTimeout: .seconds(30)),
            Calls.Add(secret("hunter2"), attributes: attributes), Calls.OpenAccess(service: "svc", account: "acct"),
            Calls.Secret(service: "svc", account: "acct", grant: grant),
            Calls.GetSecret(service: "svc", account: "acct", reason: "read the token", touchTimeout: .seconds(30)),
            Calls.Update(service: "svc", account: "acct", secret: secret("new"), label: .some(nil), comment: "c",
                         generic: .some(Data([9])), grant: grant),
            Calls.Update(service: "svc", account: "acct", secret: nil, label: "l", comment: nil, generic: nil, grant: nil),
            Calls.Delete(service: "svc", account: "acct"), Calls.Items(service: nil), Calls.Items(service: "svc"),
            Calls.Attributes(service: "svc", account: "acct"), Calls.Search(["service": "svc", "host": "example.org"]),
            Calls.AddItem(secret("s3cret"), attributes: attributes, replace: true), Calls.Item(reference),
            Calls.OpenItemAccess(reference), Calls.ItemSecret(reference, grant: grant),
            Calls.UpdateItem(reference, secret: secret("changed"), label: "l", searchAttributes: ["k": "v"],
                             contentType: .some(nil), grant: grant),
            Calls.DeleteItem(reference),
            Calls.CreateSSHKey(name: "work", comment: "alice@host", access: .biometryCurrentSet), Calls.SSHKeys(),
            Calls.DeleteSSHKey(name: "work"), Calls.SSHKeyOpenAccess(name: "work"),
            Calls.SignSSH(name: "work", digest: Array(0..<32), grant: grant),
            Calls.CreateFIDOCredential(FIDOCredentialRequest(relyingParty: "ssh:work", userID: Array("alice".utf8), userName: "alice",
                                                             discoverable: true, verificationRequired: true, access: .biometryCurrentSet),
                                       replace: false),
            Calls.FIDOCredentials(relyingParty: "ssh:work"), Calls.DeleteFIDOCredential(id: Array(0..<32), passcode: secret("1234")),
            Calls.AssertFIDO(id: Array(0..<32), relyingParty: "ssh:work", clientDataHash: Array(32..<64), userVerification: true,
                             reason: "ssh-keygen asks to sign", interactionNotAllowed: false, touchTimeout: .seconds(30)),
            Calls.MakeFIDOCredential(FIDOCredentialRequest(relyingParty: "example.org", userID: Array("alice".utf8), userName: "alice",
                                                           discoverable: true, access: .biometryAny),
                                     clientDataHash: Array(32..<64), userVerification: true, extensions: [0xa0],
                                     reason: "register with example.org", interactionNotAllowed: false, touchTimeout: .seconds(30)),
            Calls.DeleteFIDOCredentialByTouch(id: Array(0..<32), relyingParty: "example.org", reason: "delete the passkey for example.org",
                                              interactionNotAllowed: false, touchTimeout: .seconds(30)),
            Calls.UpdateFIDOUser(id: Array(0..<32), relyingParty: "example.org", userName: "alice@example.org", userDisplayName: "Alice",
                                 reason: "rename the passkey's user for example.org", interactionNotAllowed: false, touchTimeout: .seconds(30)),
            Calls.ResetFIDO(reason: "reset the authenticator", interactionNotAllowed: false, touchTimeout: .seconds(60)),
        ]
        var frames: [(String, Frame)] = []
        var counts: [String: Int] = [:]
        func request<R: EngineRequest>(_ request: R) throws {
            counts[R.name, default: 0] += 1
            let suffix = counts[R.name]! > 1 ? "-\(counts[R.name]!)" : ""
            frames.append(("request-\(R.name)\(suffix)", try Frame(request: request, program: "touchstone", interactive: true)))
            if R.name == "get" { frames.append(("request-get-script", try Frame(request: request, program: nil, interactive: false))) }
            frames.append(("response-\(R.name)-failure", try Frame(response: Outcome<R>.failure(R.Failure(AuthenticationError.authenticationFailed)))))
        }
        for each in requests { try request(each) }
        frames += [
            ("response-refused", try Frame(response: Outcome<Calls.Status>.refused("no operation named 'x'"))),
            ("response-done", try Frame(response: Outcome<Calls.Delete>.success(Done()))),
            ("response-passcode-is-set", try Frame(response: Outcome<Calls.PasscodeIsSet>.success(true))),
            ("response-passcode-remove", try Frame(response: Outcome<Calls.RemovePasscode>.success(3))),
            ("response-fingers", try Frame(response: Outcome<Calls.EnrolledFingers>.success([.leftThumb, .rightIndex]))),
            ("response-authenticate", try Frame(response: Outcome<Calls.Authenticate>.success(grant))),
            ("response-get", try Frame(response: Outcome<Calls.Secret>.success(WireSecret(secret("hunter2"))))),
            ("response-open-access", try Frame(response: Outcome<Calls.OpenAccess>.success(.biometryAny))),
            ("response-attributes", try Frame(response: Outcome<Calls.Attributes>.success(attributes))),
            ("response-add-item", try Frame(response: Outcome<Calls.AddItem>.success(.init(reference: reference, replaced: [ItemReference(id: 41)])))),
            ("response-item-secret", try Frame(response: Outcome<Calls.ItemSecret>.success(.init(secret: secret("s3cret"), attributes: attributes)))),
            ("response-ssh-sign", try Frame(response: Outcome<Calls.SignSSH>.success(SSHSignature(r: Array(1...32), s: Array(33...64))))),
            ("response-fido-assert", try Frame(response: Outcome<Calls.AssertFIDO>.success(
                FIDOAssertion(authenticatorData: Array(0..<32) + [0x05, 0, 0, 0, 7], signature: SSHSignature(r: Array(1...32), s: Array(33...64)))))),
            ("response-fido-make", try Frame(response: Outcome<Calls.MakeFIDOCredential>.success(FIDOMadeCredential(
                credential: FIDOCredentialInfo(id: Array(0..<32), relyingParty: "example.org", userID: Array("alice".utf8), userName: "alice",
                                               userDisplayName: "Alice", discoverable: true, verificationRequired: false, credProtect: 1,
                                               access: .biometryAny, created: Date(timeIntervalSince1970: 1_800_000_000),
                                               publicPoint: [0x04] + Array(1...64)),
                attestation: FIDOAssertion(authenticatorData: Array(0..<32) + [0x45, 0, 0, 0, 1], signature: SSHSignature(r: Array(1...32), s: Array(33...64))))))),
            ("response-domain-state", try Frame(response: Outcome<Calls.DomainState>.success(Data([0xde, 0xad])))),
            ("prompt-touch", try Frame(.prompt, DaemonPrompt(id: 1, need: .touch(reason: "unlock the vault", passcodeAllowed: true)))),
            ("prompt-passcode", try Frame(.prompt, DaemonPrompt(id: 2, need: .passcode(reason: "unlock the vault")))),
            ("reply-fallback", try Frame(.reply, DaemonReply(id: 1, answer: .fallback))),
            ("reply-passcode", try Frame(.reply, DaemonReply(id: 2, answer: .passcode), secrets: [secret("123456")])),
            ("reply-failed", try Frame(.reply, DaemonReply(id: 2, answer: .failed(.userCancel)))),
            ("event-stage", try Frame(.event, ScanEvent.stage(completed: 2, total: 5))),
            ("event-retry", try Frame(.event, ScanEvent.retry(.swipeTooShort))),
            ("cancel", try Frame(.cancel, DaemonCancel(id: 1))),
        ]
        return try frames.map { name, frame in (name, fuzzBytes(try frame.body())) }
    }

    static func fuzzBytes(_ bytes: SecureBytes) -> [UInt8] {
        bytes.withUnsafeBytes { Array($0) }
    }

    /// The same secrets, in any order (a request names its secrets' places).
    static func fuzzSameSecrets(_ a: [SecureBytes], _ b: [SecureBytes]) -> Bool {
        a.count == b.count && a.map(fuzzBytes).sorted(by: { $0.lexicographicallyPrecedes($1) })
            == b.map(fuzzBytes).sorted(by: { $0.lexicographicallyPrecedes($1) })
    }
}
#endif
