/// CTAP 2.1's commands and status codes (section 6 and 8.2).
package enum CTAP2 {
    package enum Command: UInt8, Sendable {
        case makeCredential = 0x01
        case getAssertion = 0x02
        case getInfo = 0x04
        case clientPIN = 0x06
        case reset = 0x07
        case getNextAssertion = 0x08
        case credentialManagement = 0x0A
        case selection = 0x0B
    }

    /// A status: the first byte of every answer (0 is success), and the
    /// error this authenticator's operations throw.
    package enum Status: UInt8, Error, Sendable {
        case success = 0x00
        case invalidCommand = 0x01
        case invalidParameter = 0x02
        case invalidLength = 0x03
        case cborUnexpectedType = 0x11
        case invalidCBOR = 0x12
        case missingParameter = 0x14
        case limitExceeded = 0x15
        case credentialExcluded = 0x19
        case invalidCredential = 0x22
        case unsupportedAlgorithm = 0x26
        case operationDenied = 0x27
        case keyStoreFull = 0x28
        case unsupportedOption = 0x2B
        case invalidOption = 0x2C
        case keepaliveCancel = 0x2D
        case noCredentials = 0x2E
        case userActionTimeout = 0x2F
        case notAllowed = 0x30
        case pinInvalid = 0x31
        case pinAuthInvalid = 0x33
        case pinNotSet = 0x35
        case requestTooLarge = 0x39
        case upRequired = 0x3B
        case invalidSubcommand = 0x3E
        case unauthorizedPermission = 0x40
        case other = 0x7F
    }
}
