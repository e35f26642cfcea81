import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// What moving an embedded vault into the daemon reads and writes.
extension InProcessEngine {
    /// Everything an import carries, read with the passcode: the enrolled
    /// prints and every item's attributes and secret. Biometric class keys
    /// open through their biometric branch without a touch, which any
    /// process of the user's can do with an embedded vault (that is what
    /// the daemon ends); the passcode proves the import. Items whose every
    /// way in is closed (invalidated) or that do not decrypt are left out,
    /// and listed.
    func export(passcode: SecureBytes) async throws(DeviceError) -> VaultExport {
        try await device { () throws(BackendFailure) in
            var proof = try vaultCall(vault.verifyPasscode(PasscodeAuth(passcode: passcode)))
            proof.biometricMatch = true
            let fingers = try vaultCall(vault.enrolledFingers())
            var items: [(ItemAttributes, SecureBytes)] = []
            var leftOut: [ListedItem] = []
            for listed in try vaultCall(vault.list()) {
                guard listed.state == .ok, let attributes = listed.attributes else {
                    leftOut.append(listed)
                    continue
                }
                items.append((attributes, try vaultCall(vault.secret(service: attributes.service, account: attributes.account,
                                                                     proof: proof))))
            }
            return VaultExport(prints: fingers.prints, reader: fingers.reader, items: items, leftOut: leftOut)
        }
    }

    /// After an import: this vault only lists and opens from now on.
    func retire() async throws(DeviceError) {
        try await device { () throws(BackendFailure) in try vaultCall(vault.retire()) }
    }

    /// An import's prints, stored as this vault's enrolled set (an
    /// enrolment change, with the passcode).
    ///
    /// Refused when the vault has enrolled fingers (or a fingers' store
    /// found altered): an import must never replace a finger without a
    /// touch, whoever holds the passcode and whatever the client checked.
    /// In daemon mode the client's print bytes are read by the daemon's
    /// print checker first (`checkedPrints`), and what is stored is
    /// libfprint's own serialization of what it read.
    func importFingers(_ prints: [EnrolledPrint], reader: ReaderIdentity?, passcode: SecureBytes) async throws(DeviceError) {
        try await device { () throws(BackendFailure) in
            guard try vaultCall(vault.enrolledFingers()).prints.isEmpty else {
                throw .storage(StorageFailure(.stateFolder, "this vault has enrolled fingers; an import of fingers goes only into a vault with none",
                                              fix: "unenroll them first (touchstone unenroll --all), or keep them"))
            }
            let trusted = try checkedPrints(prints)
            let proof = VaultProof(passcode: PasscodeAuth(passcode: passcode))
            _ = try vaultCall(vault.changeFingers(to: trusted, reader: reader, proof: proof))
        }
    }

    /// Daemon mode: `prints` as the print checker read them, in a process
    /// of their own: each must be a print libfprint reads, of the finger
    /// and reader the request names; each comes back as libfprint's
    /// serialization of the print it read. Embedded: `prints` as given
    /// (the user's own process reads its own data).
    private func checkedPrints(_ prints: [EnrolledPrint]) throws(BackendFailure) -> [EnrolledPrint] {
        guard let daemon, !prints.isEmpty else { return prints }
        let readings: [PrintReading]
        do throws(PrintCheckFailure) {
            readings = try daemon.printChecker.check(prints.map(\.data))
        } catch {
            throw .storage(StorageFailure(.stateFolder, "the import's prints could not be checked (\(error)); nothing was imported"))
        }
        guard readings.count == prints.count else {
            throw .storage(StorageFailure(.stateFolder, "the print checker answered \(readings.count) prints for \(prints.count); nothing was imported"))
        }
        return try zip(prints, readings).map { (print, reading) throws(BackendFailure) -> EnrolledPrint in
            let name = print.finger.fprintdName
            switch reading {
            case .refused(let why):
                throw .storage(StorageFailure(.stateFolder, "the print of \(name) is not one libfprint reads (\(why)); nothing was imported"))
            case .read(let driver, let deviceID, let finger, let data):
                let read = ReaderIdentity(driver: driver, deviceID: deviceID)
                guard read == print.reader, finger == print.finger else {
                    throw .storage(StorageFailure(.stateFolder, "the print given as \(name) on \(print.reader) is libfprint's print of "
                                                  + "\(finger?.fprintdName ?? "no finger") on \(read); nothing was imported"))
                }
                return EnrolledPrint(finger: print.finger, reader: print.reader, data: data)
            }
        }
    }
}

struct VaultExport: Sendable {
    let prints: [EnrolledPrint]
    let reader: ReaderIdentity?
    let items: [(ItemAttributes, SecureBytes)]
    let leftOut: [ListedItem]
}
