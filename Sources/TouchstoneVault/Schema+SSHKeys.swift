/// The ssh keys' table (docs/ssh.md, "What is stored").
extension Schema {
    /// 5 -> 6: ssh keys, one row each: the TPM's signing key (its blob) and
    /// the records that say who may use it. The name and comment are never
    /// in clear: a keyed lookup hash, and the metadata AEAD as items have.
    static let sshKeys = """
        CREATE TABLE ssh_keys (
            id       INTEGER PRIMARY KEY,
            lookup   BLOB NOT NULL UNIQUE, -- keyed hash of the key's name (the lookup key, its own domain)
            metadata BLOB NOT NULL,        -- AEAD(metadata key, name, comment, access, created, public point); AD binds lookup
            tpm      BLOB NOT NULL,        -- SealedBlob of the P-256 key: its policy, TPM public and private areas
            keys     BLOB NOT NULL,        -- its authValue wrapped to the class keys (WrapCodec); empty without that branch
            cipher   INTEGER NOT NULL      -- RecordCipher of the metadata box
        );
        """
}
