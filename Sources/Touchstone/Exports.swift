// What an app needs from the layers below comes with `import Touchstone`:
// SecureBytes, the access-control and item types, fingers and scan events.
@_exported import struct TouchstoneVault.AccessControl
@_exported import enum TouchstoneVault.AccessFlag
@_exported import enum TouchstoneVault.Accessibility
@_exported import struct TouchstoneVault.ItemAttributes
@_exported import struct TouchstoneVault.ListedItem
@_exported import enum TouchstoneVault.VaultError
@_exported import class TouchstoneSecure.SecureBytes
@_exported import enum TouchstoneFingerprint.Finger
@_exported import enum TouchstoneFingerprint.ScanEvent
@_exported import enum TouchstoneFingerprint.RetryHint
@_exported import enum TouchstoneFingerprint.FingerprintError
